//! The payload schema of a team's own job type (docs/app-guide.md "Your own job types"): the
//! subset of JSON Schema that enqueue checks a payload against, naming the field at fault as a
//! built-in type's payload struct does. Keywords: `type`, `properties`, `required`,
//! `additionalProperties`, `items`, `enum`, `minimum`, `maximum`, `minLength`, `maxLength`,
//! `maxItems`, `pattern`, and the annotations `title`, `description`. Any other keyword is
//! refused when the type is defined, so nothing a team writes is silently unchecked. Unlike JSON
//! Schema, an object is closed unless it says `additionalProperties: true`: an unknown payload
//! field is an error, as it is for the built-in types.
//!
//! A `pattern` is an ECMA-262 regular expression, as JSON Schema says: on Workers it is the
//! runtime's own `RegExp` (crate::runtime::js_pattern), so no regex engine ships in the WASM.

use serde_json::{Map, Value};

use crate::request::api_error::ApiError;
use crate::request::field_error::{invalid, join, FieldError};

/// How patterns compile and match: the runtime's `RegExp` on Workers, a regex crate in tests.
#[derive(Clone, Copy)]
pub struct PatternEngine {
    /// `Err` with why, when `pattern` is not a regular expression.
    pub compiles: fn(pattern: &str) -> Result<(), String>,
    pub matches: Matcher,
}

/// Whether text matches a pattern (`PatternEngine::matches`).
type Matcher = fn(pattern: &str, text: &str) -> bool;

/// A schema nests at most this deep.
pub const MAX_DEPTH: usize = 16;

/// The JSON types `type` may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    Null,
}

impl Kind {
    const NAMES: [(&'static str, Kind); 7] = [
        ("object", Kind::Object),
        ("array", Kind::Array),
        ("string", Kind::String),
        ("integer", Kind::Integer),
        ("number", Kind::Number),
        ("boolean", Kind::Boolean),
        ("null", Kind::Null),
    ];

    fn name(self) -> &'static str {
        Kind::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("", |(n, _)| n)
    }

    fn holds(self, value: &Value) -> bool {
        match self {
            Kind::Object => value.is_object(),
            Kind::Array => value.is_array(),
            Kind::String => value.is_string(),
            Kind::Integer => value.as_f64().is_some_and(|n| n.fract() == 0.0),
            Kind::Number => value.is_number(),
            Kind::Boolean => value.is_boolean(),
            Kind::Null => value.is_null(),
        }
    }
}

/// One checked schema (or subschema).
#[derive(Clone, Debug, Default)]
pub struct PayloadSchema {
    kind: Option<Kind>,
    properties: Vec<(String, PayloadSchema)>,
    required: Vec<String>,
    open: bool,
    items: Option<Box<PayloadSchema>>,
    one_of: Option<Vec<Value>>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    max_items: Option<u64>,
    /// The pattern and the engine's matcher, fixed when the schema was read.
    pattern: Option<(String, Matcher)>,
}

impl PayloadSchema {
    /// Reads the schema at field `at` of a definition (`payload_schema`); errors name the
    /// keyword at fault (`payload_schema.properties.email.maxLength`).
    pub fn parse(
        value: &Value,
        at: &str,
        engine: PatternEngine,
    ) -> Result<PayloadSchema, ApiError> {
        parse_at(value, at, engine, 0)
    }

    /// Checks `payload`; the error names the field relative to the payload (`user.email`,
    /// `tags[2]`), empty for the payload itself.
    pub fn check(&self, payload: &Value) -> Result<(), FieldError> {
        self.check_at(payload, "")
    }

    fn check_at(&self, value: &Value, at: &str) -> Result<(), FieldError> {
        let fail = |message: String| Err(FieldError::new(at, message));
        if let Some(kind) = self.kind {
            if !kind.holds(value) {
                return fail(format!("must be of type {}", kind.name()));
            }
        }
        if let Some(allowed) = &self.one_of {
            if !allowed.contains(value) {
                let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                return fail(format!("must be one of {}", list.join(", ")));
            }
        }
        if let Some(n) = value.as_f64() {
            if self.minimum.is_some_and(|min| n < min) {
                return fail(format!(
                    "must be at least {}",
                    self.minimum.unwrap_or_default()
                ));
            }
            if self.maximum.is_some_and(|max| n > max) {
                return fail(format!(
                    "must be at most {}",
                    self.maximum.unwrap_or_default()
                ));
            }
        }
        if let Value::String(text) = value {
            let chars = text.chars().count() as u64;
            if self.min_length.is_some_and(|min| chars < min) {
                return fail(format!(
                    "must be at least {} characters",
                    self.min_length.unwrap_or_default()
                ));
            }
            if self.max_length.is_some_and(|max| chars > max) {
                return fail(format!(
                    "must be at most {} characters",
                    self.max_length.unwrap_or_default()
                ));
            }
            if let Some((pattern, matches)) = &self.pattern {
                if !matches(pattern, text) {
                    return fail(format!("must match the pattern {pattern}"));
                }
            }
        }
        if let Value::Array(items) = value {
            if self.max_items.is_some_and(|max| items.len() as u64 > max) {
                return fail(format!(
                    "must have at most {} items",
                    self.max_items.unwrap_or_default()
                ));
            }
            if let Some(schema) = &self.items {
                for (i, item) in items.iter().enumerate() {
                    schema.check_at(item, &format!("{at}[{i}]"))?;
                }
            }
        }
        if let Value::Object(fields) = value {
            self.check_object(fields, at)?;
        }
        Ok(())
    }

    fn check_object(&self, fields: &Map<String, Value>, at: &str) -> Result<(), FieldError> {
        if let Some(missing) = self
            .required
            .iter()
            .find(|name| !fields.contains_key(*name))
        {
            return Err(FieldError::new(join(at, missing), "is required"));
        }
        for (name, value) in fields {
            match self.properties.iter().find(|(n, _)| n == name) {
                Some((_, schema)) => schema.check_at(value, &join(at, name))?,
                None if self.open => {}
                None => return Err(FieldError::new(join(at, name), "unknown field")),
            }
        }
        Ok(())
    }
}

fn parse_at(
    value: &Value,
    at: &str,
    engine: PatternEngine,
    depth: usize,
) -> Result<PayloadSchema, ApiError> {
    let bad = |field: &str, message: &str| invalid("invalid_field", join(at, field), message);
    let Value::Object(keywords) = value else {
        return Err(invalid("invalid_field", at, "a schema is an object"));
    };
    if depth >= MAX_DEPTH {
        return Err(invalid(
            "invalid_field",
            at,
            format!("schemas nest at most {MAX_DEPTH} deep"),
        ));
    }
    let mut schema = PayloadSchema::default();
    for (keyword, v) in keywords {
        let count = || {
            v.as_u64()
                .ok_or_else(|| bad(keyword, "must be a non-negative integer"))
        };
        let number = || v.as_f64().ok_or_else(|| bad(keyword, "must be a number"));
        match keyword.as_str() {
            "title" | "description" => {}
            "type" => {
                let name = v.as_str().unwrap_or_default();
                let kind = Kind::NAMES
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, k)| *k);
                let known: Vec<&str> = Kind::NAMES.iter().map(|(n, _)| *n).collect();
                schema.kind = Some(kind.ok_or_else(|| {
                    bad(keyword, &format!("must be one of {}", known.join(", ")))
                })?);
            }
            "properties" => {
                let Value::Object(properties) = v else {
                    return Err(bad(keyword, "must be an object of schemas"));
                };
                for (name, sub) in properties {
                    let sub = parse_at(sub, &join(&join(at, keyword), name), engine, depth + 1)?;
                    schema.properties.push((name.clone(), sub));
                }
            }
            "required" => {
                let names = v
                    .as_array()
                    .and_then(|a| a.iter().map(|n| n.as_str().map(str::to_string)).collect());
                schema.required =
                    names.ok_or_else(|| bad(keyword, "must be an array of field names"))?;
            }
            "additionalProperties" => {
                schema.open = v
                    .as_bool()
                    .ok_or_else(|| bad(keyword, "must be true or false"))?;
            }
            "items" => {
                schema.items = Some(Box::new(parse_at(
                    v,
                    &join(at, keyword),
                    engine,
                    depth + 1,
                )?))
            }
            "enum" => {
                let values = v.as_array().filter(|a| !a.is_empty());
                schema.one_of = Some(
                    values
                        .ok_or_else(|| bad(keyword, "must be a non-empty array"))?
                        .clone(),
                );
            }
            "minimum" => schema.minimum = Some(number()?),
            "maximum" => schema.maximum = Some(number()?),
            "minLength" => schema.min_length = Some(count()?),
            "maxLength" => schema.max_length = Some(count()?),
            "maxItems" => schema.max_items = Some(count()?),
            "pattern" => {
                let pattern = v.as_str().ok_or_else(|| bad(keyword, "must be a string"))?;
                (engine.compiles)(pattern)
                    .map_err(|why| bad(keyword, &format!("not a regular expression: {why}")))?;
                schema.pattern = Some((pattern.to_string(), engine.matches));
            }
            _ => return Err(bad(
                keyword,
                "is not a keyword this platform checks (docs/app-guide.md \"Your own job types\")",
            )),
        }
    }
    if let Some(name) = schema
        .required
        .iter()
        .find(|n| !schema.open && !schema.properties.iter().any(|(p, _)| p == *n))
    {
        let message = format!("names {name:?}, which properties lacks (the object is closed)");
        return Err(bad("required", &message));
    }
    Ok(schema)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// The engine the native tests use: the regex crate's dialect, close enough to ECMA-262 for
    /// the patterns tested.
    pub(crate) const ENGINE: PatternEngine = PatternEngine {
        compiles: |p| {
            regex_lite::Regex::new(p)
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
        matches: |p, t| regex_lite::Regex::new(p).is_ok_and(|r| r.is_match(t)),
    };

    fn schema(value: Value) -> PayloadSchema {
        PayloadSchema::parse(&value, "payload_schema", ENGINE).unwrap()
    }

    fn field_of(s: &PayloadSchema, payload: Value) -> String {
        s.check(&payload).unwrap_err().field
    }

    #[test]
    fn checks_each_keyword_naming_the_field() {
        let s = schema(json!({
            "type": "object",
            "required": ["email"],
            "properties": {
                "email": {"type": "string", "maxLength": 20, "pattern": "^[^@]+@[^@]+$"},
                "plan": {"enum": ["free", "pro"]},
                "seats": {"type": "integer", "minimum": 1, "maximum": 50},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 1}},
                "meta": {"type": "object", "additionalProperties": true}
            }
        }));
        assert_eq!(s.check(&json!({"email": "a@b.io", "plan": "pro", "seats": 3, "tags": ["x"], "meta": {"any": 1}})), Ok(()));
        assert_eq!(field_of(&s, json!({})), "email");
        assert_eq!(field_of(&s, json!({"email": 5})), "email");
        assert_eq!(field_of(&s, json!({"email": "no-at-sign"})), "email");
        assert_eq!(
            field_of(&s, json!({"email": "a@b.io", "plan": "team"})),
            "plan"
        );
        assert_eq!(
            field_of(&s, json!({"email": "a@b.io", "seats": 0})),
            "seats"
        );
        assert_eq!(
            field_of(&s, json!({"email": "a@b.io", "seats": 51})),
            "seats"
        );
        assert_eq!(
            field_of(&s, json!({"email": "a@b.io", "seats": 2.5})),
            "seats"
        );
        assert_eq!(
            field_of(&s, json!({"email": "a@b.io", "tags": ["a", "b", "c"]})),
            "tags"
        );
        assert_eq!(
            field_of(&s, json!({"email": "a@b.io", "tags": ["a", ""]})),
            "tags[1]"
        );
        assert_eq!(field_of(&s, json!({"email": "a@b.io", "zzz": 1})), "zzz");
        assert_eq!(field_of(&s, json!({"email": "a@b.io@c"})), "email");
        assert_eq!(
            field_of(&s, json!({"email": "x".repeat(19) + "@b"})),
            "email"
        );
        assert_eq!(field_of(&s, json!([])), "");
    }

    #[test]
    fn refuses_what_it_would_not_check() {
        let field = |value: Value| {
            PayloadSchema::parse(&value, "payload_schema", ENGINE)
                .unwrap_err()
                .field
                .unwrap_or_default()
        };
        assert_eq!(field(json!({"format": "email"})), "payload_schema.format");
        assert_eq!(field(json!({"type": "text"})), "payload_schema.type");
        assert_eq!(
            field(json!({"properties": {"a": {"pattern": "("}}})),
            "payload_schema.properties.a.pattern"
        );
        assert_eq!(
            field(json!({"properties": {"a": {"maxLength": -1}}})),
            "payload_schema.properties.a.maxLength"
        );
        assert_eq!(field(json!({"required": ["a"]})), "payload_schema.required");
        assert_eq!(field(json!({"enum": []})), "payload_schema.enum");
        assert_eq!(field(json!([])), "payload_schema");
        let mut deep = json!({});
        for _ in 0..MAX_DEPTH {
            deep = json!({ "items": deep });
        }
        assert!(field(deep).starts_with("payload_schema.items"));
    }
}
