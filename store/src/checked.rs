//! Statements checked at build time against the migrations, run through worker's D1 (one
//! prepared statement, for the caller's batch). sqlx-d1's macros see each statement's SQL, its
//! parameters and, for a typed row, the row's fields, in a branch that never runs: a column that
//! does not exist, a parameter too many or too few, or a row field with no column of its name
//! and type fails `cargo build` (store/build.rs builds the schema they are checked against).
//! sqlx-d1's own runtime is not used: it cannot run a D1 batch, and statements here run in
//! batches (one round trip per request or consumer batch). Its macros add nothing to the WASM.
//!
//! Each statement is one string literal (the macros read nothing else), with every status and
//! name written out in it: `tests/status_moves.rs` reads them to hold every status write to the
//! state machine. A statement built at run time (an admin filter) says why where it is built,
//! and binds every value.
//!
//! An argument is used twice (checked, then bound): pass values that are `Copy` or borrowed.

use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

/// A value as D1 binds it. Integers cross as JS numbers (row fields stay far below 2^53).
pub trait D1Bind {
    fn d1(&self) -> JsValue;
}

impl D1Bind for str {
    fn d1(&self) -> JsValue {
        JsValue::from_str(self)
    }
}

impl D1Bind for String {
    fn d1(&self) -> JsValue {
        JsValue::from_str(self)
    }
}

impl D1Bind for i64 {
    fn d1(&self) -> JsValue {
        JsValue::from_f64(*self as f64)
    }
}

impl D1Bind for u32 {
    fn d1(&self) -> JsValue {
        JsValue::from_f64(f64::from(*self))
    }
}

impl D1Bind for f64 {
    fn d1(&self) -> JsValue {
        JsValue::from_f64(*self)
    }
}

impl D1Bind for bool {
    fn d1(&self) -> JsValue {
        JsValue::from_f64(f64::from(u8::from(*self)))
    }
}

impl<T: D1Bind + ?Sized> D1Bind for &T {
    fn d1(&self) -> JsValue {
        (**self).d1()
    }
}

impl<T: D1Bind> D1Bind for Option<T> {
    fn d1(&self) -> JsValue {
        self.as_ref().map_or(JsValue::NULL, D1Bind::d1)
    }
}

/// `text` as D1 runs it: with each column alias's sqlx annotation taken off (`"count!: i64"`
/// is read as `count`), so a row's keys are its fields' names. sqlx needs the annotation to
/// type a computed column (a JSON extraction, a subquery); its own runtime takes it off too.
pub fn runtime_sql(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        out.push_str(&rest[..=open]);
        let quoted = &rest[open + 1..];
        let close = quoted.find('"').unwrap_or(quoted.len());
        let name = &quoted[..close];
        let bare = name.find(['!', '?', ':']).map_or(name, |at| &name[..at]);
        out.push_str(bare.trim_end());
        rest = &quoted[close..];
        if let Some(after) = rest.strip_prefix('"') {
            out.push('"');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The runtime text of a statement literal, worked out once per isolate.
macro_rules! runtime_sql {
    ($sql:expr) => {{
        static SQL: ::std::sync::OnceLock<::std::string::String> = ::std::sync::OnceLock::new();
        SQL.get_or_init(|| $crate::checked::runtime_sql($sql))
            .as_str()
    }};
}

/// `sql!(db, "SQL", args...)`: the statement, checked; `sql!(db, Row => "SQL", args...)` also
/// checks that `Row`'s fields are its columns, by name, type and nullability (a column read as
/// a `Row` is aliased to the field's name in the SQL). Both give a
/// `worker::Result<D1PreparedStatement>`.
macro_rules! sql {
    ($db:expr, $row:path => $sql:literal $(, $arg:expr)* $(,)?) => {{
        if false {
            let _ = ::sqlx_d1::query_as!($row, $sql $(, $arg)*);
        }
        $crate::checked::bind($db, runtime_sql!($sql), &[$($crate::checked::D1Bind::d1(&$arg)),*])
    }};
    ($db:expr, $sql:literal $(, $arg:expr)* $(,)?) => {{
        if false {
            let _ = ::sqlx_d1::query!($sql $(, $arg)*);
        }
        $crate::checked::bind($db, runtime_sql!($sql), &[$($crate::checked::D1Bind::d1(&$arg)),*])
    }};
    // A statement of three literals, for a macro that writes one statement in variants
    // (`jobs::insert`'s guard, `jobs::operator`'s held keys).
    ($db:expr, $row:path => $pre:literal + $mid:literal + $post:literal $(, $arg:expr)* $(,)?) => {{
        if false {
            let _ = ::sqlx_d1::query_as!($row, $pre + $mid + $post $(, $arg)*);
        }
        let sql = runtime_sql!(concat!($pre, $mid, $post));
        $crate::checked::bind($db, sql, &[$($crate::checked::D1Bind::d1(&$arg)),*])
    }};
    ($db:expr, $pre:literal + $mid:literal + $post:literal $(, $arg:expr)* $(,)?) => {{
        if false {
            let _ = ::sqlx_d1::query!($pre + $mid + $post $(, $arg)*);
        }
        let sql = runtime_sql!(concat!($pre, $mid, $post));
        $crate::checked::bind($db, sql, &[$($crate::checked::D1Bind::d1(&$arg)),*])
    }};
}

/// A statement that returns each row packed into one JSON array (`RETURNING` or `SELECT`
/// `json_array(...)`), read as a `Row` by its fields' order (`StatementResult::packed_results`):
/// the hot paths' many-column rows cross from SQLite into Rust as one value each, not one per
/// column, and a third the size of an object with named keys (a claim of 100 `noop` jobs: 9 KB
/// against 27 KB, docs/performance.md "Benchmark"). One list of `"field" = "column"` pairs, in
/// `Row`'s field order, makes both the array and the check that `Row`'s fields are those
/// columns of `$table` by name, type and nullability; the list's order is the one thing the
/// check cannot see, so a test of each `Row` holds it to the struct's ([`fields_of`]).
///
/// ```ignore
/// packed!(db, Claimed, from "jobs", { "id" = "id", "job_type" = "type" },
///     "UPDATE jobs SET ... RETURNING " + PACKED + "", args...)
/// ```
macro_rules! packed {
    ($db:expr, $row:path, from $table:literal,
        { $key0:literal = $col0:literal $(, $key:literal = $col:literal)* $(,)? },
        $pre:literal + PACKED + $post:literal $(, $arg:expr)* $(,)?) => {{
        if false {
            let _ = ::sqlx_d1::query_as!(
                $row,
                "SELECT " + $col0 + " AS " + $key0 $(+ ", " + $col + " AS " + $key)*
                    + " FROM " + $table
            );
            let _ = ::sqlx_d1::query!(
                $pre + "json_array(" + $col0 $(+ ", " + $col)* + ") AS \"j!: String\"" + $post
                $(, $arg)*
            );
        }
        let sql = runtime_sql!(concat!(
            $pre, "json_array(", $col0 $(, ", ", $col)*, ") AS \"j!: String\"", $post
        ));
        $crate::checked::bind($db, sql, &[$($crate::checked::D1Bind::d1(&$arg)),*])
    }};
}

/// The fields `T` reads, in its declaration order: what serde hands a deserializer (for the
/// tests that hold a packed row's list to its struct).
#[cfg(test)]
pub(crate) fn fields_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{Deserializer, Visitor};

    /// The fields, carried out as the "error" of the one call that sees them.
    #[derive(Debug)]
    struct Fields(&'static [&'static str]);
    impl std::fmt::Display for Fields {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{:?}", self.0)
        }
    }
    impl std::error::Error for Fields {}
    impl serde::de::Error for Fields {
        fn custom<M: std::fmt::Display>(_: M) -> Fields {
            Fields(&[])
        }
    }
    struct Reader;
    impl<'de> Deserializer<'de> for Reader {
        type Error = Fields;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
            Err(Fields(&[]))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(fields))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    T::deserialize(Reader).map_or_else(|Fields(fields)| fields, |_| &[])
}

#[doc(hidden)]
pub fn bind(db: &D1Database, sql: &str, values: &[JsValue]) -> worker::Result<D1PreparedStatement> {
    db.prepare(sql).bind(values)
}

#[cfg(test)]
mod tests {
    use super::runtime_sql;

    #[test]
    fn takes_off_sqlx_annotations_and_nothing_else() {
        assert_eq!(
            runtime_sql(
                r#"SELECT a ->> 'x' AS "x!: i64", b AS "b?", c AS "c: String", 'it''s "q"' FROM t"#
            ),
            r#"SELECT a ->> 'x' AS "x", b AS "b", c AS "c", 'it''s "q"' FROM t"#
        );
        assert_eq!(runtime_sql("SELECT 1"), "SELECT 1");
    }
}
