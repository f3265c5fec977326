//! The `job_types` and `job_type_versions` tables: a team's own job types as data
//! (jobs_shared::job::type_definition). Each change is one batch: the type's row, its version
//! row and its audit row, so the three commit together. [`job_types_refresh`] keeps an isolate's
//! copy (jobs_shared::job::defined_types) within its bound.

use jobs_shared::job::defined_types::{self, DefinedRow};
use jobs_shared::observe::log_line::{fault, LogLevel};
use jobs_shared::runtime::js_pattern;
use serde::Deserialize;
use worker::{D1Database, D1PreparedStatement};

use crate::audit::{self, Entry};

/// A type's latest version.
#[derive(Deserialize)]
pub struct JobTypeRow {
    pub name: String,
    pub version: i64,
    pub definition: String,
    pub updated_at: i64,
    pub updated_by: String,
    pub deleted_at: Option<i64>,
}

impl JobTypeRow {
    fn defined(self) -> DefinedRow {
        DefinedRow {
            deleted: self.deleted_at.is_some(),
            name: self.name,
            version: self.version,
            definition: self.definition,
        }
    }

    /// Puts this row, just written, into this isolate's copy at once.
    pub fn install_here(self) {
        defined_types::install_one(self.defined(), js_pattern::ENGINE);
    }
}

/// One version of a type: its definition then, or `None` where it was deleted.
#[derive(Deserialize)]
pub struct JobTypeVersionRow {
    pub version: i64,
    pub definition: Option<String>,
    pub changed_at: i64,
    pub changed_by: String,
}

/// What a put did: the type's row as it now stands, and whether this put changed it (a put of
/// the definition it already has changes nothing, and writes no version).
pub struct Put {
    pub row: JobTypeRow,
    pub changed: bool,
}

/// Every type, deleted ones included, by name.
pub async fn job_type_list(db: &D1Database) -> worker::Result<Vec<JobTypeRow>> {
    let list = sql!(db, JobTypeRow =>
        "SELECT name, version, definition, updated_at, updated_by, deleted_at FROM job_types ORDER BY name"
    )?;
    db.batch(vec![list]).await?[0].results()
}

/// One type and its versions, newest first (at most `versions`).
pub async fn job_type_get(
    db: &D1Database,
    name: &str,
    versions: u32,
) -> worker::Result<Option<(JobTypeRow, Vec<JobTypeVersionRow>)>> {
    let row = sql!(db, JobTypeRow =>
        "SELECT name, version, definition, updated_at, updated_by, deleted_at FROM job_types WHERE name = ?1",
        name
    )?;
    let history = sql!(db, JobTypeVersionRow =>
        "SELECT version, definition, changed_at, changed_by FROM job_type_versions \
         WHERE name = ?1 ORDER BY version DESC LIMIT ?2",
        name,
        versions
    )?;
    let results = db.batch(vec![row, history]).await?;
    let Some(row) = results[0].results::<JobTypeRow>()?.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some((row, results[1].results()?)))
}

/// Puts `definition` (compact JSON, checked) as type `name`'s next version, unless it is the
/// one the type has; a deleted type comes back.
pub async fn job_type_put(
    db: &D1Database,
    name: &str,
    definition: &str,
    entry: &Entry<'_>,
) -> worker::Result<Put> {
    let upsert = sql!(
        db,
        "INSERT INTO job_types (name, version, definition, updated_at, updated_by) \
         VALUES (?1, 1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET version = version + 1, \
         definition = excluded.definition, updated_at = excluded.updated_at, \
         updated_by = excluded.updated_by, deleted_at = NULL \
         WHERE job_types.definition IS NOT excluded.definition OR job_types.deleted_at IS NOT NULL",
        name,
        definition,
        entry.now_ms,
        entry.actor
    )?;
    let version = version_insert_after_write(db, name)?;
    let audit = audit::audit_insert_after_write(db, entry, true)?;
    let row = sql!(db, JobTypeRow =>
        "SELECT name, version, definition, updated_at, updated_by, deleted_at FROM job_types WHERE name = ?1",
        name
    )?;
    let results = db.batch(vec![upsert, version, audit, row]).await?;
    let changed = results[1].meta()?.and_then(|m| m.changes).unwrap_or(0) > 0;
    let row = results[3].results::<JobTypeRow>()?.into_iter().next();
    let row =
        row.ok_or_else(|| worker::Error::RustError(format!("job type {name} was not written")))?;
    Ok(Put { row, changed })
}

/// Deletes type `name` (a new version, with no definition); `None` if there is no such live
/// type.
pub async fn job_type_delete(
    db: &D1Database,
    name: &str,
    entry: &Entry<'_>,
) -> worker::Result<Option<JobTypeRow>> {
    let delete = sql!(db, JobTypeRow =>
        "UPDATE job_types SET version = version + 1, deleted_at = ?2, updated_at = ?2, updated_by = ?3 \
         WHERE name = ?1 AND deleted_at IS NULL \
         RETURNING name, version, definition, updated_at, updated_by, deleted_at",
        name,
        entry.now_ms,
        entry.actor
    )?;
    let version = version_insert_after_write(db, name)?;
    let audit = audit::audit_insert_after_write(db, entry, true)?;
    let results = db.batch(vec![delete, version, audit]).await?;
    Ok(results[0].results::<JobTypeRow>()?.into_iter().next())
}

/// The version row of type `name` as the write just before it in the batch left it (none when
/// that write changed nothing): its definition, or none for a deletion.
fn version_insert_after_write(db: &D1Database, name: &str) -> worker::Result<D1PreparedStatement> {
    sql!(
        db,
        "INSERT INTO job_type_versions (name, version, definition, changed_at, changed_by) \
         SELECT name, version, CASE WHEN deleted_at IS NULL THEN definition END, updated_at, \
         updated_by FROM job_types WHERE name = ?1 AND changes() > 0",
        name
    )
}

/// Reads every type into this isolate's copy when it is due (`defined_types::stale`), or when
/// `now` (a job of a type the copy lacks, which was defined since): one query per isolate per
/// `defined_types::REFRESH_MS`, none otherwise. A failed read keeps the old copy (and is tried
/// again on the next call); a stored definition that no longer checks is logged.
pub async fn job_types_refresh(db: &D1Database, now_ms: i64, now: bool) {
    if !now && !defined_types::stale(now_ms) {
        return;
    }
    match job_type_list(db).await {
        Ok(rows) => {
            let rows = rows.into_iter().map(JobTypeRow::defined).collect();
            for name in defined_types::install_all(rows, now_ms, js_pattern::ENGINE) {
                fault(
                    LogLevel::Error,
                    "job_types",
                    format_args!("the stored definition of {name} does not check"),
                );
            }
        }
        Err(e) => fault(
            LogLevel::Warn,
            "job_types",
            format_args!("reading the job types failed: {e}"),
        ),
    }
}
