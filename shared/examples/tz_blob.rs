//! Writes the time-zone database (`schedule::time_zones::bundled_blob`) to the path given: the
//! producer's `tz.bin` static file, which scripts/build.mjs writes with
//! `cargo run -p jobs-shared --example tz_blob -- producer/static/tz.bin`.

fn main() {
    let path = std::env::args().nth(1).expect("usage: tz_blob <path>");
    let blob = jobs_shared::schedule::time_zones::bundled_blob();
    std::fs::write(&path, blob).unwrap_or_else(|e| panic!("{path}: {e}"));
}
