//! A job's own retry policy, chosen at enqueue (docs/app-guide.md "Retries"): a preset's name or a
//! policy object, checked against the limits, and stored on the job as that object's compact JSON
//! so the consumer reads back exactly what was accepted.

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::ops::RangeInclusive;

use crate::request::api_error::ApiError;
use crate::request::field_error::{decode_fields, invalid, join};
use crate::retry::retry_policy::{FixedTable, RetryPolicy, MAX_FIXED_ENTRIES};

/// The presets by name, with the attempts a preset brings when the job sets none.
pub const PRESETS: [(&str, RetryPolicy, Option<u32>); 4] = [
    ("default", RetryPolicy::DEFAULT, None),
    ("crawler", RetryPolicy::CRAWLER, None),
    ("fixed_table", RetryPolicy::FIXED_TABLE, None),
    ("quick", QUICK, Some(3)),
];

/// 2 s, 4 s, 8 s, no jitter: for work whose caller waits on it.
const QUICK: RetryPolicy = RetryPolicy::Exponential {
    base_secs: 2,
    jitter_min: 1.0,
    jitter_max: 1.0,
};

/// The limits of a policy object's parameters.
const BASE_SECS: RangeInclusive<i64> = 1..=3_600;
const CAP_SECS_MAX: i64 = 86_400;
const JITTER_FACTOR: RangeInclusive<f64> = 0.5..=1.5;
const JITTER_FRACTION: RangeInclusive<f64> = 0.0..=0.5;
const TABLE_ENTRY_SECS: RangeInclusive<i64> = 1..=86_400;

/// A job's retry policy and the attempts its preset brings (the job's `max_attempts` wins).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JobRetry {
    pub policy: RetryPolicy,
    pub preset_attempts: Option<u32>,
}

impl JobRetry {
    /// Reads the enqueue field `at` (`retry`): a preset name or a policy object. Errors name
    /// the offending field under `at` (`retry.base_secs`).
    pub fn from_request(value: &Value, at: &str) -> Result<JobRetry, ApiError> {
        match value {
            Value::String(name) => PRESETS
                .iter()
                .find(|(preset, ..)| preset == name)
                .map(|&(_, policy, preset_attempts)| JobRetry {
                    policy,
                    preset_attempts,
                })
                .ok_or_else(|| {
                    let names: Vec<&str> = PRESETS.iter().map(|(name, ..)| *name).collect();
                    let message = format!("unknown preset {name:?}; known: {}", names.join(", "));
                    invalid("invalid_field", at, message)
                }),
            Value::Object(object) => Ok(JobRetry {
                policy: policy_object(object, at)?,
                preset_attempts: None,
            }),
            _ => Err(invalid(
                "invalid_field",
                at,
                "must be a preset name or a policy object",
            )),
        }
    }

    /// The policy a job stored with [`to_stored`]; `None` for anything else, which leaves the
    /// job on its type's policy.
    pub fn from_stored(stored: &str) -> Option<RetryPolicy> {
        let value: Value = serde_json::from_str(stored).ok()?;
        policy_object(value.as_object()?, "retry").ok()
    }
}

/// The policy as the object form the API accepts (what a job stores and shows).
pub fn to_stored(policy: &RetryPolicy) -> Value {
    match *policy {
        RetryPolicy::Exponential {
            base_secs,
            jitter_min,
            jitter_max,
        } => json!({"policy": "exponential", "base_secs": base_secs,
                    "jitter_min": jitter_min, "jitter_max": jitter_max}),
        RetryPolicy::ExponentialCapped {
            base_secs,
            cap_secs,
            jitter,
        } => json!({"policy": "capped", "base_secs": base_secs, "cap_secs": cap_secs,
                    "jitter": jitter}),
        RetryPolicy::Fixed(table) => json!({"policy": "fixed", "table": table.as_slice()}),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Exponential {
    /// Read before the object is decoded; listed so that it is allowed.
    #[serde(rename = "policy")]
    _policy: IgnoredAny,
    base_secs: i64,
    jitter_min: f64,
    jitter_max: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Capped {
    #[serde(rename = "policy")]
    _policy: IgnoredAny,
    base_secs: i64,
    cap_secs: i64,
    jitter: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixed {
    #[serde(rename = "policy")]
    _policy: IgnoredAny,
    table: Vec<i64>,
}

/// A policy object; omitted parameters take the matching preset's (`exponential` the
/// default's, `capped` the crawler's): the object is laid over the preset's own object form.
fn policy_object(object: &Map<String, Value>, at: &str) -> Result<RetryPolicy, ApiError> {
    let field = |name: &str| join(at, name);
    let over = |preset: &RetryPolicy| {
        let mut merged = to_stored(preset);
        for (key, value) in object {
            merged[key] = value.clone();
        }
        merged
    };
    match object.get("policy").and_then(Value::as_str) {
        Some("exponential") => {
            let spec: Exponential = decoded(&over(&RetryPolicy::DEFAULT), at)?;
            let (min, max) = (spec.jitter_min, spec.jitter_max);
            within_f64(&field("jitter_min"), min, JITTER_FACTOR)?;
            within_f64(&field("jitter_max"), max, JITTER_FACTOR)?;
            if min > max {
                let message = "must not be above jitter_max";
                return Err(invalid("out_of_range", field("jitter_min"), message));
            }
            Ok(RetryPolicy::Exponential {
                base_secs: within(&field("base_secs"), spec.base_secs, BASE_SECS)?,
                jitter_min: min,
                jitter_max: max,
            })
        }
        Some("capped") => {
            let spec: Capped = decoded(&over(&RetryPolicy::CRAWLER), at)?;
            let base_secs = within(&field("base_secs"), spec.base_secs, BASE_SECS)?;
            let caps = i64::from(base_secs)..=CAP_SECS_MAX;
            let cap_secs = within(&field("cap_secs"), spec.cap_secs, caps)?;
            within_f64(&field("jitter"), spec.jitter, JITTER_FRACTION)?;
            Ok(RetryPolicy::ExponentialCapped {
                base_secs,
                cap_secs,
                jitter: spec.jitter,
            })
        }
        Some("fixed") => {
            let spec: Fixed = decoded(&Value::Object(object.clone()), at)?;
            if spec.table.is_empty() || spec.table.len() > MAX_FIXED_ENTRIES {
                let message = format!("must hold 1 to {MAX_FIXED_ENTRIES} delays");
                return Err(invalid("out_of_range", field("table"), message));
            }
            let secs = (spec.table.iter().enumerate())
                .map(|(i, entry)| within(&field(&format!("table[{i}]")), *entry, TABLE_ENTRY_SECS))
                .collect::<Result<Vec<u32>, ApiError>>()?;
            Ok(RetryPolicy::Fixed(FixedTable::new(&secs)))
        }
        _ => Err(invalid(
            "invalid_field",
            field("policy"),
            "must be exponential, capped or fixed",
        )),
    }
}

fn decoded<T: DeserializeOwned>(value: &Value, at: &str) -> Result<T, ApiError> {
    decode_fields(value).map_err(|e| ApiError {
        field: Some(join(at, e.field.as_deref().unwrap_or_default())),
        ..e
    })
}

/// `value`, whole seconds within `range`.
fn within(field: &str, value: i64, range: RangeInclusive<i64>) -> Result<u32, ApiError> {
    if !range.contains(&value) {
        let message = format!("must be between {} and {}", range.start(), range.end());
        return Err(invalid("out_of_range", field, message));
    }
    Ok(value as u32)
}

fn within_f64(field: &str, value: f64, range: RangeInclusive<f64>) -> Result<(), ApiError> {
    if range.contains(&value) {
        return Ok(());
    }
    let message = format!("must be between {} and {}", range.start(), range.end());
    Err(invalid("out_of_range", field, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: Value) -> JobRetry {
        JobRetry::from_request(&value, "retry").expect("accepted")
    }

    fn reject(value: Value) -> (&'static str, String) {
        let e = JobRetry::from_request(&value, "retry").expect_err("rejected");
        assert_eq!(e.status, 422);
        (e.code, e.field.unwrap_or_default())
    }

    fn delays(policy: RetryPolicy, n: u32) -> Vec<u64> {
        (1..=n).map(|a| policy.delay_secs(a, 0.5)).collect()
    }

    #[test]
    fn presets_by_name() {
        let quick = accept(json!("quick"));
        assert_eq!(quick.preset_attempts, Some(3));
        assert_eq!(delays(quick.policy, 3), [2, 4, 8]);
        assert_eq!(accept(json!("default")).policy, RetryPolicy::DEFAULT);
        assert_eq!(accept(json!("crawler")).policy, RetryPolicy::CRAWLER);
        let fixed = accept(json!("fixed_table"));
        assert_eq!(
            (fixed.policy, fixed.preset_attempts),
            (RetryPolicy::FIXED_TABLE, None)
        );
    }

    #[test]
    fn objects_take_the_presets_for_what_they_omit() {
        let exp = accept(json!({"policy": "exponential", "base_secs": 5}));
        assert_eq!(
            exp.policy,
            RetryPolicy::Exponential {
                base_secs: 5,
                jitter_min: 0.75,
                jitter_max: 1.25
            }
        );
        let capped = accept(json!({"policy": "capped", "cap_secs": 600, "jitter": 0}));
        assert_eq!(
            capped.policy,
            RetryPolicy::ExponentialCapped {
                base_secs: 60,
                cap_secs: 600,
                jitter: 0.0
            }
        );
        assert_eq!(delays(capped.policy, 5), [60, 120, 240, 480, 600]);
        let fixed = accept(json!({"policy": "fixed", "table": [5, 7]}));
        assert_eq!(delays(fixed.policy, 3), [5, 7, 7]);
        // The crawler's cap stays the default whatever the base.
        let high = accept(json!({"policy": "capped", "base_secs": 3600}));
        assert_eq!(
            high.policy,
            RetryPolicy::ExponentialCapped {
                base_secs: 3600,
                cap_secs: 86_400,
                jitter: 0.2
            }
        );
    }

    #[test]
    fn limits_are_refused_naming_the_field() {
        let cases = [
            (json!("slow"), ("invalid_field", "retry")),
            (json!(5), ("invalid_field", "retry")),
            (json!({}), ("invalid_field", "retry.policy")),
            (
                json!({"policy": "linear"}),
                ("invalid_field", "retry.policy"),
            ),
            (
                json!({"policy": "exponential", "base_secs": 0}),
                ("out_of_range", "retry.base_secs"),
            ),
            (
                json!({"policy": "exponential", "base_secs": 3601}),
                ("out_of_range", "retry.base_secs"),
            ),
            (
                json!({"policy": "exponential", "base_secs": "5"}),
                ("invalid_field", "retry.base_secs"),
            ),
            (
                json!({"policy": "exponential", "jitter_min": 0.4}),
                ("out_of_range", "retry.jitter_min"),
            ),
            (
                json!({"policy": "exponential", "jitter_min": 1.2, "jitter_max": 1.1}),
                ("out_of_range", "retry.jitter_min"),
            ),
            (
                json!({"policy": "exponential", "jitter_max": 1.6}),
                ("out_of_range", "retry.jitter_max"),
            ),
            (
                json!({"policy": "exponential", "table": [1]}),
                ("unknown_field", "retry.table"),
            ),
            (
                json!({"policy": "capped", "base_secs": 60, "cap_secs": 59}),
                ("out_of_range", "retry.cap_secs"),
            ),
            (
                json!({"policy": "capped", "cap_secs": 86_401}),
                ("out_of_range", "retry.cap_secs"),
            ),
            (
                json!({"policy": "capped", "jitter": 0.6}),
                ("out_of_range", "retry.jitter"),
            ),
            (json!({"policy": "fixed"}), ("invalid_field", "retry.table")),
            (
                json!({"policy": "fixed", "table": []}),
                ("out_of_range", "retry.table"),
            ),
            (
                json!({"policy": "fixed", "table": vec![1; 11]}),
                ("out_of_range", "retry.table"),
            ),
            (
                json!({"policy": "fixed", "table": [5, 0]}),
                ("out_of_range", "retry.table[1]"),
            ),
            (
                json!({"policy": "fixed", "table": [86_401]}),
                ("out_of_range", "retry.table[0]"),
            ),
            (
                json!({"policy": "fixed", "table": [1.5]}),
                ("invalid_field", "retry.table[0]"),
            ),
        ];
        for (value, (code, field)) in cases {
            assert_eq!(reject(value.clone()), (code, field.to_string()), "{value}");
        }
    }

    #[test]
    fn stored_form_round_trips() {
        for value in [
            json!("quick"),
            json!("default"),
            json!("crawler"),
            json!("fixed_table"),
            json!({"policy": "fixed", "table": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}),
            json!({"policy": "capped", "base_secs": 2, "cap_secs": 9, "jitter": 0.1}),
        ] {
            let policy = accept(value).policy;
            let stored = to_stored(&policy).to_string();
            assert_eq!(JobRetry::from_stored(&stored), Some(policy), "{stored}");
        }
        assert_eq!(JobRetry::from_stored("not json"), None);
        assert_eq!(
            JobRetry::from_stored(r#"{"policy":"fixed","table":[]}"#),
            None
        );
    }
}
