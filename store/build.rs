//! Builds the schema every statement of this crate is checked against at compile time:
//! sqlx-d1's macros (see `src/checked.rs`) look first for a local D1 database in this crate's
//! `.wrangler/state/v3/d1/miniflare-D1DatabaseObject/` (git-ignored), which this writes from
//! `../migrations` with the bundled SQLite the macros compile anyway. So a fresh clone needs no
//! database, and a migration that renames a column fails the next `cargo build` of a statement
//! that names it.
//!
//! The macros also write what each statement was checked to be into `.sqlx/` (one
//! `query-<hash>.json` per statement, committed); emptied here first, so that it holds exactly
//! the statements of this build, and `scripts/test.sh` fails when the committed copy differs.

use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::{env, fs, ptr};

use libsqlite3_sys as ffi;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let migrations = manifest.join("../migrations");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={}", migrations.display());
    // Every statement change: so `.sqlx/` loses the entries of statements that are gone.
    println!("cargo:rerun-if-changed=src");
    clear_cache(&manifest.join(".sqlx"));
    let dir = manifest.join(".wrangler/state/v3/d1/miniflare-D1DatabaseObject");
    fs::create_dir_all(&dir).expect("create the schema's folder");
    // Written aside, then renamed: the macros never see it half-built.
    let part = dir.join("schema.sqlite.part");
    let _ = fs::remove_file(&part);
    apply_migrations(&part, &migrations);
    fs::rename(&part, dir.join("schema.sqlite")).expect("put the schema in place");
}

fn clear_cache(cache: &Path) {
    fs::create_dir_all(cache).expect("create .sqlx");
    for entry in fs::read_dir(cache).expect("read .sqlx").flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "json") {
            fs::remove_file(path).expect("empty .sqlx");
        }
    }
}

fn apply_migrations(db: &Path, migrations: &Path) {
    let mut files: Vec<PathBuf> = fs::read_dir(migrations)
        .expect("read ../migrations")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    let path = CString::new(db.to_str().expect("a UTF-8 path")).expect("no NUL");
    // SAFETY: one connection, opened, used and closed here; every pointer is SQLite's own or a
    // CString that outlives the call it is passed to.
    unsafe {
        let mut conn = ptr::null_mut();
        let flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE;
        assert_eq!(
            ffi::sqlite3_open_v2(path.as_ptr(), &mut conn, flags, ptr::null()),
            ffi::SQLITE_OK,
            "open {}",
            db.display()
        );
        for file in &files {
            let sql = CString::new(fs::read_to_string(file).expect("read a migration"))
                .expect("no NUL in a migration");
            let mut error = ptr::null_mut();
            if ffi::sqlite3_exec(conn, sql.as_ptr(), None, ptr::null_mut(), &mut error)
                != ffi::SQLITE_OK
            {
                panic!(
                    "{}: {}",
                    file.display(),
                    CStr::from_ptr(error).to_string_lossy()
                );
            }
        }
        ffi::sqlite3_close(conn);
    }
}
