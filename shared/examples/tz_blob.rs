//! Writes the time-zone database (`schedule::time_zones::bundled_blob`) to the path given: the
//! producer's `tz.bin` static file, which scripts/build.mjs writes with
//! `cargo run -p jobs-shared --example tz_blob -- producer/static/tz.bin`.

/// An unchanged file is left as it is (`wrangler dev` reloads the static files on a write).
fn main() {
    let path = std::env::args().nth(1).expect("usage: tz_blob <path>");
    let blob = jobs_shared::schedule::time_zones::bundled_blob();
    if std::fs::read(&path).is_ok_and(|old| old == blob) {
        return;
    }
    std::fs::write(&path, blob).unwrap_or_else(|e| panic!("{path}: {e}"));
}
