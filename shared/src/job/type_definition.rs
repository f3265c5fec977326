//! A team's own job type as data (docs/app-guide.md "Your own job types"): the body of
//! `PUT /v1/admin/types/{name}`, checked field by field, and the registry row
//! (crate::job::registry) it becomes once an isolate installs it (crate::job::defined_types).

use serde_json::Value;

use crate::budget::{BudgetSpec, MAX_LIMIT_CENTS};
use crate::job::family::Family;
use crate::job::flow_control::FlowSpec;
use crate::job::payload_schema::{PatternEngine, PayloadSchema};
use crate::job::registry::{
    is_built_in, snake_case, Handler, JobTypeDef, PayloadCheck, ScheduleGate, TypeSpec,
    MAX_ATTEMPTS,
};
use crate::job::stored_result::MAX_RESULT_BYTES;
use crate::job::target::{Endpoint, Target};
use crate::request::api_error::ApiError;
use crate::request::field_error::{int_field, invalid, not_an_object, object_at};
use crate::retry::retry_policy::RetryPolicy;
use crate::retry::retry_request::JobRetry;

/// A definition's JSON is at most this long.
pub const MAX_DEFINITION_BYTES: usize = 32 * 1024;
/// A type's name is at most this long.
pub const MAX_NAME_CHARS: usize = 64;
/// A definition's fields.
const FIELDS: &[&str] = &[
    "family",
    "target",
    "retry",
    "max_attempts",
    "timeout_ms",
    "payload_schema",
    "flow",
    "budget",
    "description",
];
/// An attempt's timeout when the definition names none (within every family's half lease).
const DEFAULT_TIMEOUT_MS: u32 = 30_000;

/// A checked definition, not yet installed.
pub struct TypeDefinition {
    name: String,
    family: Family,
    target: Target,
    spec: TypeSpec,
    payload: PayloadCheck,
    flow: Option<FlowSpec>,
    budget: Option<BudgetSpec>,
}

impl TypeDefinition {
    /// Checks the definition `body` of type `name`; errors name the field at fault
    /// (`target.url`, `payload_schema.properties.email.pattern`).
    pub fn parse(
        name: &str,
        body: &Value,
        engine: PatternEngine,
    ) -> Result<TypeDefinition, ApiError> {
        check_name(name)?;
        if !body.is_object() {
            return Err(not_an_object());
        }
        if body.to_string().len() > MAX_DEFINITION_BYTES {
            return Err(ApiError::new(
                413,
                "body_too_large",
                format!("a definition is at most {MAX_DEFINITION_BYTES} bytes"),
            ));
        }
        let fields = object_at(body, "", FIELDS)?;
        let family = fields
            .get("family")
            .and_then(Value::as_str)
            .and_then(Family::parse);
        let family = family.ok_or_else(|| {
            let known: Vec<&str> = Family::ALL.iter().map(|f| f.as_str()).collect();
            let message = format!("is required, one of {}", known.join(", "));
            invalid("invalid_field", "family", message)
        })?;
        let target = fields.get("target").unwrap_or(&Value::Null);
        let target = match target.is_null() {
            true => return Err(invalid("invalid_field", "target", "is required")),
            false => Target::parse(target, "target")?,
        };
        let retry = match fields.get("retry") {
            Some(value) => Some(JobRetry::from_request(value, "retry")?),
            None => None,
        };
        let max_attempts = int_field(fields, "", "max_attempts", MAX_ATTEMPTS)?.map(|n| n as u32);
        // An attempt must end well inside its family's lease, or a running job looks stranded.
        let timeout_ms = int_field(fields, "", "timeout_ms", 1_000..=family.lease_ms() / 2)?
            .map_or(DEFAULT_TIMEOUT_MS, |ms| ms as u32);
        let payload = match fields.get("payload_schema") {
            Some(schema) => {
                PayloadCheck::Schema(PayloadSchema::parse(schema, "payload_schema", engine)?)
            }
            None => PayloadCheck::AnyObject,
        };
        let flow = match fields.get("flow") {
            Some(flow) => Some(FlowSpec::parse(flow, "flow")?),
            None => None,
        };
        let budget = match fields.get("budget") {
            Some(budget) => {
                let budget = object_at(budget, "budget", &["monthly_limit_cents"])?;
                let limit =
                    int_field(budget, "budget", "monthly_limit_cents", 1..=MAX_LIMIT_CENTS)?;
                let limit = limit.ok_or_else(|| {
                    invalid("invalid_field", "budget.monthly_limit_cents", "is required")
                })?;
                Some(BudgetSpec {
                    default_limit_cents: limit,
                })
            }
            None => None,
        };
        if fields.get("description").is_some_and(|d| !d.is_string()) {
            return Err(invalid("invalid_field", "description", "must be a string"));
        }
        Ok(TypeDefinition {
            flow,
            budget,
            name: name.to_string(),
            family,
            target,
            spec: TypeSpec {
                max_attempts: max_attempts
                    .or(retry.and_then(|r| r.preset_attempts))
                    .unwrap_or(5),
                retry: retry.map_or(RetryPolicy::DEFAULT, |r| r.policy),
                timeout_ms,
                payload_timeout: false,
                max_result_bytes: MAX_RESULT_BYTES,
            },
            payload,
        })
    }

    pub fn family(&self) -> Family {
        self.family
    }

    /// Its registry row, kept for the isolate's life (a few hundred bytes per version an
    /// isolate reads: crate::job::defined_types reuses the row while the version is unchanged).
    pub fn install(self, retired: bool) -> &'static JobTypeDef {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let endpoint = match self.target {
            Target::Url(url) => Endpoint::Url(leak(url)),
            Target::Var(name) => Endpoint::Var(leak(name)),
            Target::Service { binding, path } => Endpoint::Service {
                binding: leak(binding),
                path: leak(path),
            },
        };
        Box::leak(Box::new(JobTypeDef {
            name: leak(self.name),
            family: self.family,
            spec: self.spec,
            payload: self.payload,
            example: "{}",
            budget: self.budget,
            handler: Handler::Forward(endpoint),
            scheduled: ScheduleGate::Always,
            closed: retired,
            flow: self.flow,
        }))
    }
}

fn check_name(name: &str) -> Result<(), ApiError> {
    if name.len() > MAX_NAME_CHARS || !snake_case(name) {
        let message = format!("must be snake_case (a-z, 0-9, _), 1 to {MAX_NAME_CHARS} characters, starting with a letter");
        return Err(invalid("invalid_field", "name", message));
    }
    if is_built_in(name) {
        return Err(
            ApiError::new(409, "built_in_type", format!("{name} is a built-in type"))
                .with_field("name"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::payload_schema::tests::ENGINE;
    use serde_json::json;

    fn field(name: &str, body: Value) -> (u16, String) {
        let e = TypeDefinition::parse(name, &body, ENGINE)
            .err()
            .expect("refused");
        (e.status, e.field.unwrap_or_default())
    }

    #[test]
    fn a_definition_becomes_a_forwarded_row() {
        let body = json!({
            "family": "high", "target": {"service": "APP", "path": "/jobs"},
            "retry": "quick", "timeout_ms": 5000,
            "payload_schema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
        });
        let t = TypeDefinition::parse("send_invoice", &body, ENGINE)
            .unwrap()
            .install(false);
        assert_eq!(t.name, "send_invoice");
        assert_eq!(t.family, Family::High);
        assert_eq!(
            t.handler,
            Handler::Forward(Endpoint::Service {
                binding: "APP",
                path: "/jobs"
            })
        );
        assert_eq!((t.spec.max_attempts, t.spec.timeout_ms), (3, 5000));
        assert!(!t.closed);
        assert_eq!(t.payload.check(&json!({"to": "a"})), Ok(()));
        assert_eq!(t.payload.check(&json!({})).unwrap_err().field, "to");

        let any = TypeDefinition::parse(
            "t2",
            &json!({"family": "default", "target": {"url": "https://a.io/h"}}),
            ENGINE,
        )
        .unwrap()
        .install(true);
        assert_eq!(
            any.handler,
            Handler::Forward(Endpoint::Url("https://a.io/h"))
        );
        assert_eq!((any.spec.max_attempts, any.spec.timeout_ms), (5, 30_000));
        assert_eq!(any.payload.check(&json!({"anything": [1]})), Ok(()));
        assert!(any.closed);

        let budgeted = json!({"family": "low", "target": {"url": "https://a.io"},
            "budget": {"monthly_limit_cents": 2500}});
        let t = TypeDefinition::parse("t4", &budgeted, ENGINE)
            .unwrap()
            .install(false);
        assert_eq!(t.budget.map(|b| b.default_limit_cents), Some(2500));

        let by_var = json!({"family": "low", "target": {"url_var": "ENDPOINT_T3"}});
        let t = TypeDefinition::parse("t3", &by_var, ENGINE)
            .unwrap()
            .install(false);
        assert_eq!(t.handler, Handler::Forward(Endpoint::Var("ENDPOINT_T3")));
    }

    #[test]
    fn the_default_timeout_fits_every_family() {
        assert!(Family::ALL
            .iter()
            .all(|f| f.lease_ms() / 2 >= i64::from(DEFAULT_TIMEOUT_MS)));
    }

    #[test]
    fn each_bad_field_is_named() {
        let ok = json!({"family": "default", "target": {"url": "https://a.io"}});
        let with = |k: &str, v: Value| {
            let mut b = ok.clone();
            b[k] = v;
            b
        };
        assert_eq!(field("Bad-Name", ok.clone()), (422, "name".into()));
        assert_eq!(field("http", ok.clone()), (409, "name".into()));
        assert_eq!(
            field("t", with("family", json!("urgent"))),
            (422, "family".into())
        );
        assert_eq!(
            field("t", with("target", json!({"url": "ftp://a"}))),
            (422, "target.url".into())
        );
        assert_eq!(
            field("t", with("target", json!({"service": "app"}))),
            (422, "target.service".into())
        );
        assert_eq!(
            field("t", with("target", json!({"url_var": "endpoint"}))),
            (422, "target.url_var".into())
        );
        assert_eq!(
            field(
                "t",
                with("target", json!({"service": "APP", "path": "jobs"}))
            ),
            (422, "target.path".into())
        );
        assert_eq!(
            field("t", with("target", json!({"queue": "x"}))).1,
            "target"
        );
        assert_eq!(
            field("t", with("max_attempts", json!(0))),
            (422, "max_attempts".into())
        );
        assert_eq!(
            field("t", with("timeout_ms", json!(999))),
            (422, "timeout_ms".into())
        );
        assert_eq!(
            field("t", with("retry", json!("sometimes"))),
            (422, "retry".into())
        );
        assert_eq!(
            field("t", with("payload_schema", json!({"format": "x"}))),
            (422, "payload_schema.format".into())
        );
        assert_eq!(field("t", with("colour", json!(1))), (422, "colour".into()));
        assert_eq!(
            field("t", with("budget", json!({"monthly_limit_cents": 0}))),
            (422, "budget.monthly_limit_cents".into())
        );
        assert_eq!(
            field("t", with("budget", json!({}))),
            (422, "budget.monthly_limit_cents".into())
        );
        assert_eq!(
            field("t", json!({"family": "default"})),
            (422, "target".into())
        );
        assert_eq!(
            field(
                "t",
                with("description", json!("x".repeat(MAX_DEFINITION_BYTES)))
            )
            .0,
            413
        );
    }

    /// The bundled catalog (migrations/0026_bundled_catalog.sql): every definition checks, is
    /// delivered to its `ENDPOINT_<TYPE>`, and its schema refuses what the source apps' payloads
    /// refused, naming the field.
    #[test]
    fn the_bundled_catalog_checks() {
        let sql = include_str!("../../../migrations/0026_bundled_catalog.sql");
        let types: Vec<&'static JobTypeDef> = sql
            .lines()
            .filter_map(|line| {
                let (name, rest) = line.trim().strip_prefix("('")?.split_once("', 1, '")?;
                let (definition, _) = rest.rsplit_once("', unixepoch()")?;
                let body: Value = serde_json::from_str(&definition.replace("''", "'")).unwrap();
                let checked = TypeDefinition::parse(name, &body, ENGINE);
                Some(
                    checked
                        .unwrap_or_else(|e| panic!("{name}: {}", e.message))
                        .install(false),
                )
            })
            .collect();
        assert_eq!(types.len(), 10);
        let named = |name: &str| *types.iter().find(|t| t.name == name).unwrap();
        for t in &types {
            let var = format!("ENDPOINT_{}", t.name.to_ascii_uppercase());
            let delivered_to = |v: &str| v == var;
            assert!(
                matches!(t.handler, Handler::Forward(Endpoint::Var(v)) if delivered_to(v)),
                "{}",
                t.name
            );
        }
        let in_family = |f: Family| {
            let names = types.iter().filter(|t| t.family == f).map(|t| t.name);
            names.collect::<Vec<_>>()
        };
        assert_eq!(in_family(Family::High), ["stock_refresh", "message_relay"]);
        assert_eq!(in_family(Family::Bulk), ["image_processing"]);
        let social = named("social_refresh").spec;
        assert_eq!(
            (social.retry, social.max_attempts),
            (RetryPolicy::CRAWLER, 4)
        );
        assert_eq!(named("sitemap_generation").spec.timeout_ms, 300_000);

        let check =
            |name: &str, payload: Value| named(name).payload.check(&payload).map_err(|e| e.field);
        let fails = |field: &str| Err(field.to_string());
        for (name, payload) in [
            (
                "weather_refresh",
                json!({"kind": "alerts", "location": "NYC"}),
            ),
            ("stock_refresh", json!({"symbols": ["AAPL", "MSFT"]})),
            ("message_relay", json!({"message_id": "m1"})),
            ("image_processing", json!({"image_key": "u/1.png"})),
            ("click_rollup", json!({"hour": "2025-01-01T10:00:00Z"})),
            ("social_refresh", json!({"account_id": "a"})),
            ("inbound_email", json!({"mailbox": "INBOX"})),
            ("listing_expiration", json!({})),
        ] {
            assert_eq!(check(name, payload), Ok(()), "{name}");
        }
        assert_eq!(
            check("weather_refresh", json!({"kind": "radar"})),
            fails("kind")
        );
        assert_eq!(
            check("weather_refresh", json!({"location": " "})),
            fails("location")
        );
        let blank_symbol = json!({"symbols": ["AAPL", ""]});
        assert_eq!(check("stock_refresh", blank_symbol), fails("symbols[1]"));
        assert_eq!(
            check("stock_refresh", json!({"symbols": "AAPL"})),
            fails("symbols")
        );
        assert_eq!(check("message_relay", json!({})), fails("message_id"));
        assert_eq!(
            check("message_relay", json!({"message_id": ""})),
            fails("message_id")
        );
        assert_eq!(check("image_processing", json!({})), fails("image_key"));
        assert_eq!(
            check("click_rollup", json!({"hour": "10am"})),
            fails("hour")
        );
        assert_eq!(check("rank_recalculation", json!({"x": 1})), fails("x"));
    }
}
