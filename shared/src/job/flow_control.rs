//! Flow control per key (docs/app-guide.md "Flow control"): a team's type may bound, for each
//! key (a payload field's value, or a job's own `flow_key`; a job may bring its own limits too,
//! `flow_limits`, and so have flow control whatever its type), how many of its jobs run at once
//! (`concurrency`) and how many start per period (`rate`: starts evenly spaced, one every
//! `period / limit`, a leaky bucket without burst, so no window of the period ever holds more
//! than `limit` and the target sees a steady pace, not a burst at each period's start). The counts live in one Durable Object
//! per type and key (consumer/src/flow_limiter.rs), whose whole state is a [`FlowState`]: the
//! consumer asks it for slots ([`FlowRequest`]) and each answer says when a job may start or
//! how long to wait. A job held back is handed back unstarted, without spending an attempt.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::request::api_error::ApiError;
use crate::request::field_error::{int_field, invalid, object_at};

/// The most starts a rate may allow per period.
pub const MAX_RATE_LIMIT: u32 = 1_000;
/// The longest rate period.
pub const MAX_PERIOD_SECS: u32 = 3_600;
/// The most jobs of one key a concurrency limit may let run at once.
pub const MAX_CONCURRENCY: u32 = 1_000;
/// A job's own `flow_key` is at most this long.
pub const MAX_FLOW_KEY_CHARS: usize = 256;
/// The key of a job whose payload lacks the key field and which names none itself.
pub const NO_KEY: &str = "";

/// A type's flow control, as its definition's `flow` gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    /// The payload field whose value keys a job; `None`: one key for the whole type.
    pub key: Option<String>,
    pub limits: Limits,
    /// A 429 from the target waits its `Retry-After` without spending an attempt.
    pub throttle_on_429: bool,
}

/// What a key may do: at most `concurrency` running, at most `rate.limit` starts per period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub concurrency: Option<u32>,
    pub rate: Option<Rate>,
}

impl Limits {
    /// A job's own limits (`flow_limits` at enqueue, at field `at`): `concurrency`, `rate` or
    /// both, as a type's `flow` gives them.
    pub fn parse(value: &Value, at: &str) -> Result<Limits, ApiError> {
        Limits::read(object_at(value, at, &["concurrency", "rate"])?, at)
    }

    /// The limits among an object's `fields` (at field `at`), at least one of them.
    fn read(fields: &Map<String, Value>, at: &str) -> Result<Limits, ApiError> {
        let concurrency = int_field(fields, at, "concurrency", 1..=i64::from(MAX_CONCURRENCY))?;
        let rate = match fields.get("rate") {
            Some(rate) => {
                let at = format!("{at}.rate");
                let rate = object_at(rate, &at, &["limit", "period_secs"])?;
                let limit = int_field(rate, &at, "limit", 1..=i64::from(MAX_RATE_LIMIT))?;
                let period = int_field(rate, &at, "period_secs", 1..=i64::from(MAX_PERIOD_SECS))?;
                let required =
                    |name: &str| invalid("invalid_field", format!("{at}.{name}"), "is required");
                Some(Rate {
                    limit: limit.ok_or_else(|| required("limit"))? as u32,
                    period_ms: period.ok_or_else(|| required("period_secs"))? * 1_000,
                })
            }
            None => None,
        };
        if concurrency.is_none() && rate.is_none() {
            let message = "names no limit: give concurrency, rate or both";
            return Err(invalid("invalid_field", at, message));
        }
        Ok(Limits {
            concurrency: concurrency.map(|n| n as u32),
            rate,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub limit: u32,
    pub period_ms: i64,
}

impl FlowSpec {
    /// Reads a definition's `flow` object (at field `at`); errors name the field
    /// (`flow.rate.limit`).
    pub fn parse(value: &Value, at: &str) -> Result<FlowSpec, ApiError> {
        let fields = object_at(
            value,
            at,
            &["key", "concurrency", "rate", "throttle_on_429"],
        )?;
        let limits = Limits::read(fields, at)?;
        let key = match fields.get("key") {
            Some(Value::String(key)) if !key.is_empty() => Some(key.clone()),
            Some(_) => {
                return Err(invalid(
                    "invalid_field",
                    format!("{at}.key"),
                    "a payload field's name",
                ))
            }
            None => None,
        };
        let throttle_on_429 = match fields.get("throttle_on_429") {
            Some(Value::Bool(on)) => *on,
            Some(_) => {
                return Err(invalid(
                    "invalid_field",
                    format!("{at}.throttle_on_429"),
                    "must be true or false",
                ))
            }
            None => false,
        };
        Ok(FlowSpec {
            key,
            limits,
            throttle_on_429,
        })
    }

    /// A job's key: its own `flow_key`, else its payload's key field (a string as it is, any
    /// other value as its JSON), else [`NO_KEY`].
    pub fn key_of(&self, own: Option<&str>, payload: &str) -> String {
        if let Some(own) = own {
            return own.to_string();
        }
        let Some(field) = &self.key else {
            return NO_KEY.to_string();
        };
        let payload: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
        let key = match payload.get(field) {
            None | Some(Value::Null) => return NO_KEY.to_string(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        // A payload's value may be any length: a long one is keyed by its digest, so a key
        // stays short wherever it is kept (the limiter's name, `flow_keys`).
        if key.chars().count() > MAX_FLOW_KEY_CHARS {
            return format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())));
        }
        key
    }
}

/// The name of the limiter (Durable Object) that counts `key` of `job_type`.
pub fn limiter_name(job_type: &str, key: &str) -> String {
    format!("{job_type}/{key}")
}

/// One job that wants a slot: how long it may hold one (its deadline, so a consumer that dies
/// holding it frees it then) and how long it may wait for its start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Want {
    pub job: String,
    pub hold_ms: i64,
    pub max_wait_ms: i64,
}

/// One call to a key's limiter: slots wanted and slots given back, under the type's limits
/// (sent with each call, so a changed definition takes effect at the next).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlowRequest {
    pub limits: Limits,
    pub acquire: Vec<Want>,
    pub release: Vec<String>,
}

/// What the limiter answers a [`Want`]: start in `start_in_ms`, or ask again in
/// `retry_in_ms` (`by` the limit that held it back).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    Granted {
        job: String,
        start_in_ms: i64,
    },
    Denied {
        job: String,
        retry_in_ms: i64,
        by: Limit,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    Concurrency,
    Rate,
}

/// How soon a job held back by concurrency asks again: a slot frees when a job ends, which the
/// limiter cannot foresee.
pub const CONCURRENCY_RETRY_MS: i64 = 250;

/// A key's limiter state: the slots held (job, held until), the jobs it held back that have not
/// started since (job, forgotten after), and the earliest next start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowState {
    pub running: Vec<(String, i64)>,
    pub waiting: Vec<(String, i64)>,
    pub next_start: i64,
}

/// The most waiting jobs a limiter lists (what it shows an operator, not what it enforces).
pub const MAX_LISTED_WAITING: usize = 1_000;
/// How long past its next ask a job held back is still listed as waiting.
const WAITING_GRACE_MS: i64 = 60_000;

/// A key's counts as an operator reads them: jobs running and waiting now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowCounts {
    pub running: usize,
    pub waiting: usize,
}

/// What a batch did with one key's jobs, for `flow_keys`: how many started, how many waited for
/// a slot (in the batch or in the queue), and how many of those it handed back.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FlowTally {
    pub r#type: String,
    pub key: String,
    pub started: u32,
    pub waited: u32,
    pub handed_back: u32,
    /// The calls to the key's limiter it made: what flow control costs, for the batch's
    /// `batch.completed` line (docs/performance.md "Cost"); not kept in `flow_keys`.
    #[serde(skip)]
    pub limiter_calls: u32,
}

impl Rate {
    /// The time between two starts: the period over the limit, rounded up, so that `limit + 1`
    /// starts never fit in one period.
    pub fn spacing_ms(self) -> i64 {
        let limit = i64::from(self.limit.max(1));
        (self.period_ms + limit - 1) / limit
    }
}

impl FlowState {
    /// Serves `req` at `now_ms`: releases first, then each wanted slot in order. A job that
    /// holds a slot already (its message delivered twice) is granted again without a second.
    pub fn serve(&mut self, req: &FlowRequest, now_ms: i64) -> Vec<Slot> {
        self.running
            .retain(|(job, until)| *until > now_ms && !req.release.contains(job));
        self.waiting.retain(|(_, until)| *until > now_ms);
        let Limits { concurrency, rate } = req.limits;
        let mut slots = Vec::with_capacity(req.acquire.len());
        for want in &req.acquire {
            let job = want.job.clone();
            if self.running.iter().any(|(held, _)| *held == job) {
                slots.push(Slot::Granted {
                    job,
                    start_in_ms: 0,
                });
                continue;
            }
            if concurrency.is_some_and(|n| self.running.len() >= n as usize) {
                self.wait(&job, now_ms + CONCURRENCY_RETRY_MS);
                let by = Limit::Concurrency;
                slots.push(Slot::Denied {
                    job,
                    retry_in_ms: CONCURRENCY_RETRY_MS,
                    by,
                });
                continue;
            }
            let start = match rate {
                Some(_) => now_ms.max(self.next_start),
                None => now_ms,
            };
            if start - now_ms > want.max_wait_ms {
                let retry_in_ms = start - now_ms - want.max_wait_ms;
                self.wait(&job, now_ms + retry_in_ms);
                slots.push(Slot::Denied {
                    job,
                    retry_in_ms,
                    by: Limit::Rate,
                });
                continue;
            }
            if let Some(rate) = rate {
                self.next_start = start + rate.spacing_ms();
            }
            if concurrency.is_some() {
                self.running.push((job.clone(), start + want.hold_ms));
            }
            self.waiting.retain(|(waiting, _)| *waiting != job);
            slots.push(Slot::Granted {
                job,
                start_in_ms: start - now_ms,
            });
        }
        slots
    }
}

impl FlowState {
    /// Lists `job` as waiting until `next_ask_ms` and a grace after it.
    fn wait(&mut self, job: &str, next_ask_ms: i64) {
        let until = next_ask_ms + WAITING_GRACE_MS;
        let listed = self.waiting.len();
        match self.waiting.iter_mut().find(|(waiting, _)| waiting == job) {
            Some(entry) => entry.1 = until,
            None if listed < MAX_LISTED_WAITING => self.waiting.push((job.to_string(), until)),
            None => {}
        }
    }

    /// Its counts at `now_ms`.
    pub fn counts(&self, now_ms: i64) -> FlowCounts {
        FlowCounts {
            running: self
                .running
                .iter()
                .filter(|(_, until)| *until > now_ms)
                .count(),
            waiting: self
                .waiting
                .iter()
                .filter(|(_, until)| *until > now_ms)
                .count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn want(job: &str, max_wait_ms: i64) -> Want {
        Want {
            job: job.into(),
            hold_ms: 10_000,
            max_wait_ms,
        }
    }

    fn request(limits: Limits, acquire: Vec<Want>, release: &[&str]) -> FlowRequest {
        FlowRequest {
            limits,
            acquire,
            release: release.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn granted(slots: &[Slot]) -> Vec<(&str, i64)> {
        slots
            .iter()
            .filter_map(|s| match s {
                Slot::Granted { job, start_in_ms } => Some((job.as_str(), *start_in_ms)),
                Slot::Denied { .. } => None,
            })
            .collect()
    }

    #[test]
    fn concurrency_holds_at_most_n_until_a_slot_is_released_or_its_hold_ends() {
        let limits = Limits {
            concurrency: Some(2),
            rate: None,
        };
        let mut state = FlowState::default();
        let ask = request(limits, vec![want("a", 0), want("b", 0), want("c", 0)], &[]);
        let slots = state.serve(&ask, 0);
        assert_eq!(granted(&slots), [("a", 0), ("b", 0)]);
        assert_eq!(
            slots[2],
            Slot::Denied {
                job: "c".into(),
                retry_in_ms: CONCURRENCY_RETRY_MS,
                by: Limit::Concurrency
            }
        );
        // A second delivery of a job holding a slot takes no second one.
        assert_eq!(
            granted(&state.serve(&request(limits, vec![want("a", 0)], &[]), 1)),
            [("a", 0)]
        );
        assert_eq!(state.running.len(), 2);
        // Released, a slot is free again; an expired hold frees its slot by itself.
        let slots = state.serve(&request(limits, vec![want("c", 0)], &["a"]), 2);
        assert_eq!(granted(&slots), [("c", 0)]);
        let slots = state.serve(
            &request(limits, vec![want("d", 0), want("e", 0)], &[]),
            10_003,
        );
        assert_eq!(granted(&slots), [("d", 0), ("e", 0)]);
        assert_eq!(
            state.counts(10_003),
            FlowCounts {
                running: 2,
                waiting: 0
            }
        );
    }

    #[test]
    fn rate_never_starts_more_than_limit_in_any_window_of_its_period() {
        let limits = Limits {
            concurrency: None,
            rate: Some(Rate {
                limit: 5,
                period_ms: 1_000,
            }),
        };
        let mut state = FlowState::default();
        let mut starts = Vec::new();
        let mut now = 0;
        // 100 jobs asked for in batches of 7 every 300 ms, each waiting up to 2 s.
        for batch in 0..15 {
            let wants = (0..7)
                .map(|i| want(&format!("{batch}-{i}"), 2_000))
                .collect();
            for slot in state.serve(&request(limits, wants, &[]), now) {
                if let Slot::Granted { start_in_ms, .. } = slot {
                    starts.push(now + start_in_ms);
                }
            }
            now += 300;
        }
        starts.sort_unstable();
        for (i, start) in starts.iter().enumerate() {
            let in_window = starts[i..]
                .iter()
                .take_while(|s| **s < start + 1_000)
                .count();
            assert!(
                in_window <= 5,
                "{in_window} starts in the second from {start}"
            );
        }
        // And it is the limit, not less: one every 200 ms from the first start to the last.
        let span = starts.last().unwrap() - starts[0];
        assert_eq!(span, (starts.len() as i64 - 1) * 200);
        assert!(
            state.counts(now).waiting > 0,
            "the jobs held back are listed until they start"
        );
        let third = Rate {
            limit: 3,
            period_ms: 1_000,
        };
        assert_eq!(
            third.spacing_ms(),
            334,
            "rounded up: 4 starts never fit in a second"
        );
    }

    #[test]
    fn a_wait_past_the_job_s_bound_is_a_denial_saying_when_to_ask_again() {
        let limits = Limits {
            concurrency: Some(10),
            rate: Some(Rate {
                limit: 1,
                period_ms: 60_000,
            }),
        };
        let mut state = FlowState::default();
        let slots = state.serve(
            &request(limits, vec![want("a", 0), want("b", 5_000)], &[]),
            0,
        );
        assert_eq!(granted(&slots), [("a", 0)]);
        assert_eq!(
            slots[1],
            Slot::Denied {
                job: "b".into(),
                retry_in_ms: 55_000,
                by: Limit::Rate
            }
        );
        assert_eq!(state.running.len(), 1, "a denied job holds no slot");
        assert_eq!(
            state.counts(0),
            FlowCounts {
                running: 1,
                waiting: 1
            }
        );
    }

    #[test]
    fn a_spec_names_its_bad_field_and_keys_jobs() {
        let spec = FlowSpec::parse(&json!({"key": "tenant", "concurrency": 2}), "flow").unwrap();
        assert_eq!(spec.key_of(None, r#"{"tenant": "acme"}"#), "acme");
        assert_eq!(spec.key_of(None, r#"{"tenant": 42}"#), "42");
        assert_eq!(spec.key_of(None, "{}"), NO_KEY);
        assert_eq!(spec.key_of(Some("own"), r#"{"tenant": "acme"}"#), "own");
        let long = format!(r#"{{"tenant": "{}"}}"#, "x".repeat(300));
        assert!(
            spec.key_of(None, &long).starts_with("sha256:") && spec.key_of(None, &long).len() == 71
        );
        let field = |v: Value| {
            FlowSpec::parse(&v, "flow")
                .unwrap_err()
                .field
                .unwrap_or_default()
        };
        assert_eq!(field(json!({"key": "t"})), "flow");
        assert_eq!(field(json!({"concurrency": 0})), "flow.concurrency");
        assert_eq!(
            field(json!({"rate": {"limit": 5, "period_secs": 0}})),
            "flow.rate.period_secs"
        );
        assert_eq!(
            field(json!({"rate": {"limit": 5000, "period_secs": 1}})),
            "flow.rate.limit"
        );
        assert_eq!(
            field(json!({"rate": {"limit": 5}})),
            "flow.rate.period_secs"
        );
        assert_eq!(field(json!({"concurrency": 1, "burst": 3})), "flow.burst");
        assert_eq!(field(json!(3)), "flow");
    }
}
