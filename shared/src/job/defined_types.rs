//! The job types teams define (crate::job::type_definition), as this isolate last read them
//! from D1's `job_types`: what `JobType::parse` (crate::job::job_type) finds after the
//! built-in ones. An isolate
//! reads them again once they are [`REFRESH_MS`] old, on its next request or batch (one query,
//! not one per job), so a definition put, changed or deleted anywhere is in effect on every
//! isolate within that bound; the isolate that wrote it has it at once (docs/app-guide.md "Your
//! own job types").

use std::cell::RefCell;

use serde_json::Value;

use crate::job::payload_schema::PatternEngine;
use crate::job::registry::JobTypeDef;
use crate::job::type_definition::TypeDefinition;

/// How old this isolate's copy may grow before it is read again.
pub const REFRESH_MS: i64 = 5_000;

/// One row of `job_types`: the latest version of a team's type.
pub struct DefinedRow {
    pub name: String,
    pub version: i64,
    /// The definition's JSON, as accepted.
    pub definition: String,
    /// Deleted: its enqueued jobs still run, enqueue refuses new ones.
    pub deleted: bool,
}

#[derive(Default)]
struct Defined {
    /// Each type with the version its row was read at.
    types: Vec<(i64, bool, &'static JobTypeDef)>,
    read_at_ms: Option<i64>,
}

thread_local! {
    static DEFINED: RefCell<Defined> = RefCell::new(Defined::default());
}

/// A team's type this isolate knows by `name`, deleted ones included.
pub fn lookup(name: &str) -> Option<&'static JobTypeDef> {
    DEFINED.with_borrow(|d| {
        d.types
            .iter()
            .find(|(_, _, t)| t.name == name)
            .map(|(_, _, t)| *t)
    })
}

/// Every team's type this isolate knows, deleted ones included, as last read.
pub fn all() -> Vec<&'static JobTypeDef> {
    DEFINED.with_borrow(|d| d.types.iter().map(|(_, _, t)| *t).collect())
}

/// Whether this isolate's copy is due to be read again (or was never read).
pub fn stale(now_ms: i64) -> bool {
    DEFINED.with_borrow(|d| d.read_at_ms.is_none_or(|at| now_ms - at >= REFRESH_MS))
}

/// Replaces this isolate's copy with `rows`, read at `now_ms`; a row whose version it holds
/// already keeps its installed row. Returns the names whose stored definition no longer
/// checks (left out, so their jobs fail as of an unknown type; a migration's concern).
pub fn install_all(rows: Vec<DefinedRow>, now_ms: i64, engine: PatternEngine) -> Vec<String> {
    let mut broken = Vec::new();
    let types = rows
        .into_iter()
        .filter_map(|row| match installed(&row, engine) {
            Ok(t) => Some((row.version, row.deleted, t)),
            Err(()) => {
                broken.push(row.name);
                None
            }
        })
        .collect();
    DEFINED.with_borrow_mut(|d| {
        *d = Defined {
            types,
            read_at_ms: Some(now_ms),
        }
    });
    broken
}

/// Installs one row just written by this isolate, leaving the rest as they were read.
pub fn install_one(row: DefinedRow, engine: PatternEngine) {
    let Ok(t) = installed(&row, engine) else {
        return;
    };
    DEFINED.with_borrow_mut(|d| {
        d.types.retain(|(_, _, known)| known.name != row.name);
        d.types.push((row.version, row.deleted, t));
    });
}

fn installed(row: &DefinedRow, engine: PatternEngine) -> Result<&'static JobTypeDef, ()> {
    let held = DEFINED.with_borrow(|d| {
        d.types
            .iter()
            .find(|(v, deleted, t)| {
                t.name == row.name && *v == row.version && *deleted == row.deleted
            })
            .map(|(_, _, t)| *t)
    });
    if let Some(t) = held {
        return Ok(t);
    }
    let body: Value = serde_json::from_str(&row.definition).map_err(|_| ())?;
    let definition = TypeDefinition::parse(&row.name, &body, engine).map_err(|_| ())?;
    Ok(definition.install(row.deleted))
}
