//! Monthly spend budgets (docs/app-guide.md "AI tagging and budgets") for any job type whose
//! registry entry declares one ([`crate::job::job_type::JobType::budget`]). Each UTC month has its own limit and
//! spend; the share used picks the action (NORMAL, REDUCE, QUEUE, HARD_STOP), and reaching 75, 90
//! and 100 % raises an alert once per month. The tables' SQL is in the store crate (`budgets`,
//! `budget_alerts`), which reads the thresholds from here.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::Value;

use crate::request::api_error::ApiError;
use crate::util::severity::Severity;

/// What a type's budget starts from before an operator changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetSpec {
    pub default_limit_cents: i64,
}

/// Shares of the limit, in percent, where the action changes; each also raises an alert.
pub const REDUCE_AT_PCT: u32 = 75;
pub const QUEUE_AT_PCT: u32 = 90;
pub const HARD_STOP_AT_PCT: u32 = 100;
pub const ALERT_THRESHOLDS: [u32; 3] = [REDUCE_AT_PCT, QUEUE_AT_PCT, HARD_STOP_AT_PCT];

/// The largest monthly limit an operator may set: one million dollars.
pub const MAX_LIMIT_CENTS: i64 = 100_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetAction {
    /// Under 75 %: full batches.
    Normal,
    /// 75-90 %: smaller batches, to stretch what is left.
    Reduce,
    /// 90-100 %: nothing now; the next run checks again.
    Queue,
    /// 100 % or more: nothing until the month rolls over (or the limit is raised).
    HardStop,
}

impl BudgetAction {
    /// The action for `spent_cents` of `limit_cents`. A limit of 0 is a hard stop.
    pub fn of(spent_cents: f64, limit_cents: i64) -> BudgetAction {
        if reached(spent_cents, limit_cents, HARD_STOP_AT_PCT) {
            BudgetAction::HardStop
        } else if reached(spent_cents, limit_cents, QUEUE_AT_PCT) {
            BudgetAction::Queue
        } else if reached(spent_cents, limit_cents, REDUCE_AT_PCT) {
            BudgetAction::Reduce
        } else {
            BudgetAction::Normal
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BudgetAction::Normal => "normal",
            BudgetAction::Reduce => "reduce",
            BudgetAction::Queue => "queue",
            BudgetAction::HardStop => "hard_stop",
        }
    }

    /// Items per batch; 0 means do nothing now.
    pub fn batch_size(self) -> usize {
        match self {
            BudgetAction::Normal => 20,
            BudgetAction::Reduce => 10,
            BudgetAction::Queue | BudgetAction::HardStop => 0,
        }
    }

    pub fn proceeds(self) -> bool {
        self.batch_size() > 0
    }
}

/// `spent * 100 >= limit * pct`: exact for whole cents, and the same test the alert SQL makes.
fn reached(spent_cents: f64, limit_cents: i64, pct: u32) -> bool {
    spent_cents * 100.0 >= limit_cents as f64 * f64::from(pct)
}

/// The share used, in percent with two decimals; a limit of 0 reads as 100 %.
pub fn percent_used(spent_cents: f64, limit_cents: i64) -> f64 {
    if limit_cents <= 0 {
        return 100.0;
    }
    (spent_cents * 10_000.0 / limit_cents as f64).round() / 100.0
}

/// Cents for display: sums of fractional per-call costs, cut to four decimals.
pub fn cents(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

/// Months a history shows by default, and at most.
pub const HISTORY_MONTHS: u32 = 12;
pub const MAX_HISTORY_MONTHS: u32 = 24;

/// The `months` parameter of a budget history: 1 to [`MAX_HISTORY_MONTHS`].
pub fn history_months(value: Option<&str>) -> Result<u32, ApiError> {
    crate::request::field_error::count_param("months", value, HISTORY_MONTHS, MAX_HISTORY_MONTHS)
}

/// How loud an alert threshold is (INFO at 75 %, WARNING at 90 %, CRITICAL at 100 %).
pub fn alert_severity(threshold: u32) -> Severity {
    match threshold {
        t if t >= HARD_STOP_AT_PCT => Severity::Critical,
        t if t >= QUEUE_AT_PCT => Severity::Warning,
        _ => Severity::Info,
    }
}

/// [`alert_severity`] by name, as logs and the budget API show it.
pub fn alert_level(threshold: u32) -> &'static str {
    alert_severity(threshold).as_str()
}

/// The UTC month of `ms`, as `YYYY-MM` (the budgets table's key).
pub fn month_of(ms: i64) -> String {
    month_back(ms, 0)
}

/// The month `back` months before the month of `ms` (0 is that month itself).
pub fn month_back(ms: i64, back: u32) -> String {
    let at = utc(ms);
    let index = at.year() * 12 + at.month0() as i32 - back as i32;
    format!(
        "{:04}-{:02}",
        index.div_euclid(12),
        index.rem_euclid(12) + 1
    )
}

/// When the month after the one of `ms` starts (a hard stop ends then), in Unix ms.
pub fn next_month_start_ms(ms: i64) -> i64 {
    let at = utc(ms);
    let (year, month) = if at.month() == 12 {
        (at.year() + 1, 1)
    } else {
        (at.year(), at.month() + 1)
    };
    NaiveDate::from_ymd_opt(year, month, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map_or(i64::MAX, |t| t.and_utc().timestamp_millis())
}

fn utc(ms: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default()
}

/// Tokens one call used, as the API reported them (the Messages API's `usage` object).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The most tokens one call is taken to have used, each way: far past any model's context, so
/// no real bill is cut, while a reply claiming 2^64 cannot overflow the month's counters (and
/// still costs enough to stop any budget).
pub const MAX_CALL_TOKENS: u64 = 1_000_000_000;

impl Usage {
    /// What a reply reported, each count cut at MAX_CALL_TOKENS: the API's answer is untrusted.
    pub fn bounded(self) -> Usage {
        Usage {
            input_tokens: self.input_tokens.min(MAX_CALL_TOKENS),
            output_tokens: self.output_tokens.min(MAX_CALL_TOKENS),
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// Prices in US dollars per million tokens, as providers list them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenPrices {
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
}

impl TokenPrices {
    /// Claude Sonnet 4: $3 in, $15 out per million tokens (about $0.006 per article of
    /// 1000 tokens in and 200 out).
    pub const CLAUDE_SONNET_4: TokenPrices = TokenPrices {
        input_usd_per_mtok: 3.0,
        output_usd_per_mtok: 15.0,
    };

    /// The configured prices (either may be unset: its default stays); `Err` names the bad one.
    pub fn configured(input: Option<&str>, output: Option<&str>) -> Result<TokenPrices, String> {
        let price = |value: Option<&str>, default: f64, name: &str| match value {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| p.is_finite() && *p >= 0.0)
                .ok_or_else(|| {
                    format!("{name} must be a price in USD per million tokens, not {v:?}")
                }),
        };
        let defaults = TokenPrices::CLAUDE_SONNET_4;
        Ok(TokenPrices {
            input_usd_per_mtok: price(input, defaults.input_usd_per_mtok, "input")?,
            output_usd_per_mtok: price(output, defaults.output_usd_per_mtok, "output")?,
        })
    }

    /// What `usage` cost, in cents.
    pub fn cost_cents(&self, usage: Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_usd_per_mtok
            + usage.output_tokens as f64 * self.output_usd_per_mtok)
            * 100.0
            / 1_000_000.0
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitChange {
    limit_cents: i64,
}

/// The body of a limit change, `{"limit_cents": 0..=MAX_LIMIT_CENTS}` (whole cents).
pub fn validate_limit_change(body: &Value) -> Result<i64, ApiError> {
    if !body.is_object() {
        // serde would read `[n]` as the struct, positionally.
        return Err(ApiError::new(
            400,
            "invalid_body",
            "the body must be a JSON object",
        ));
    }
    let change: LimitChange = crate::request::field_error::decode_fields(body)?;
    if !(0..=MAX_LIMIT_CENTS).contains(&change.limit_cents) {
        return Err(ApiError::new(
            422,
            "out_of_range",
            format!("limit_cents must be between 0 and {MAX_LIMIT_CENTS}"),
        )
        .with_field("limit_cents"));
    }
    Ok(change.limit_cents)
}

/// A newly raised alert, as the store's `budget_alerts::budget_alert_insert_reached` returns it.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct RaisedAlert {
    pub job_type: String,
    pub month: String,
    pub threshold: u32,
    pub spent_cents: f64,
    pub limit_cents: i64,
}

impl RaisedAlert {
    /// The `budget.alert` log line (the sweep's alert evaluator routes the table's unnotified rows to webhooks).
    pub fn log_line(&self) -> Value {
        serde_json::json!({
            "event": "budget.alert",
            "job_type": self.job_type,
            "month": self.month,
            "threshold": self.threshold,
            "level": alert_level(self.threshold),
            "spent_cents": cents(self.spent_cents),
            "limit_cents": self.limit_cents,
            "percent_used": percent_used(self.spent_cents, self.limit_cents),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::time_fmt::parse_rfc3339;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn actions_at_the_thresholds() {
        let limit = 50_000;
        assert_eq!(BudgetAction::of(0.0, limit), BudgetAction::Normal);
        assert_eq!(BudgetAction::of(37_499.99, limit), BudgetAction::Normal);
        assert_eq!(BudgetAction::of(37_500.0, limit), BudgetAction::Reduce);
        assert_eq!(BudgetAction::of(44_999.9, limit), BudgetAction::Reduce);
        assert_eq!(BudgetAction::of(45_000.0, limit), BudgetAction::Queue);
        assert_eq!(BudgetAction::of(49_999.99, limit), BudgetAction::Queue);
        assert_eq!(BudgetAction::of(50_000.0, limit), BudgetAction::HardStop);
        assert_eq!(BudgetAction::of(90_000.0, limit), BudgetAction::HardStop);
        assert_eq!(BudgetAction::of(0.0, 0), BudgetAction::HardStop);
        let sizes = [
            BudgetAction::Normal,
            BudgetAction::Reduce,
            BudgetAction::Queue,
            BudgetAction::HardStop,
        ]
        .map(|a| (a.as_str(), a.batch_size(), a.proceeds()));
        assert_eq!(
            sizes,
            [
                ("normal", 20, true),
                ("reduce", 10, true),
                ("queue", 0, false),
                ("hard_stop", 0, false)
            ]
        );
    }

    #[test]
    fn percent_and_levels() {
        assert_eq!(percent_used(37_500.0, 50_000), 75.0);
        assert_eq!(percent_used(1.0, 3), 33.33);
        assert_eq!(percent_used(120.0, 100), 120.0);
        assert_eq!(percent_used(5.0, 0), 100.0);
        assert_eq!(
            ALERT_THRESHOLDS.map(alert_level),
            ["info", "warning", "critical"]
        );
    }

    #[test]
    fn display_cents_and_history_months() {
        assert_eq!(cents(0.1 + 0.2), 0.3);
        assert_eq!(cents(1.234_56), 1.2346);
        assert_eq!(history_months(None), Ok(12));
        assert_eq!(history_months(Some("24")), Ok(24));
        for bad in ["0", "25", "-1", "x", ""] {
            let e = history_months(Some(bad)).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                ("out_of_range", Some("months"))
            );
        }
    }

    #[test]
    fn months_are_utc_and_roll_over() {
        let at = |s| parse_rfc3339(s).unwrap();
        assert_eq!(month_of(at("2025-01-31T23:59:59.999Z")), "2025-01");
        assert_eq!(month_of(at("2025-02-01T00:00:00Z")), "2025-02");
        // 23:30 on 31 Dec in New York is already January in UTC.
        assert_eq!(month_of(at("2025-12-31T23:30:00-05:00")), "2026-01");
        assert_eq!(
            next_month_start_ms(at("2025-12-15T10:00:00Z")),
            at("2026-01-01T00:00:00Z")
        );
        assert_eq!(
            next_month_start_ms(at("2024-02-29T12:00:00Z")),
            at("2024-03-01T00:00:00Z")
        );
        let now = at("2025-03-10T00:00:00Z");
        assert_eq!(month_back(now, 0), "2025-03");
        assert_eq!(month_back(now, 3), "2024-12");
        assert_eq!(month_back(now, 15), "2023-12");
    }

    #[test]
    fn cost_from_usage_and_prices() {
        let sonnet = TokenPrices::CLAUDE_SONNET_4;
        let article = Usage {
            input_tokens: 1000,
            output_tokens: 200,
        };
        // About $0.006 an article.
        assert!((sonnet.cost_cents(article) - 0.6).abs() < 1e-9);
        let million = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
        };
        assert_eq!(sonnet.cost_cents(million), 1800.0);
        assert_eq!(TokenPrices::configured(None, None), Ok(sonnet));
        let custom = TokenPrices::configured(Some("0.8"), Some(" 4 ")).unwrap();
        assert_eq!(custom.cost_cents(million), 480.0);
        assert!(TokenPrices::configured(Some("-1"), None).is_err());
        assert!(TokenPrices::configured(None, Some("cheap"))
            .unwrap_err()
            .starts_with("output"));
        let mut total = Usage::default();
        total += article;
        total += article;
        assert_eq!(total.input_tokens, 2000);
        total += Usage {
            input_tokens: u64::MAX,
            output_tokens: 0,
        };
        assert_eq!(total.input_tokens, u64::MAX, "saturates, never wraps");
    }

    #[test]
    fn limit_changes_are_checked() {
        assert_eq!(
            validate_limit_change(&json!({"limit_cents": 75_000})),
            Ok(75_000)
        );
        assert_eq!(validate_limit_change(&json!({"limit_cents": 0})), Ok(0));
        let field = |v: Value| {
            let e = validate_limit_change(&v).unwrap_err();
            (e.status, e.code, e.field.unwrap())
        };
        assert_eq!(
            field(json!({"limit_cents": -1})),
            (422, "out_of_range", "limit_cents".into())
        );
        assert_eq!(
            field(json!({"limit_cents": MAX_LIMIT_CENTS + 1})),
            (422, "out_of_range", "limit_cents".into())
        );
        assert_eq!(
            field(json!({"limit_cents": 1.5})),
            (422, "invalid_field", "limit_cents".into())
        );
        assert_eq!(
            field(json!({"limit_cents": "100"})),
            (422, "invalid_field", "limit_cents".into())
        );
        assert_eq!(
            field(json!({})),
            (422, "invalid_field", "limit_cents".into())
        );
        assert_eq!(
            field(json!({"limit_cents": 1, "budgetLimitCents": 2})),
            (422, "unknown_field", "budgetLimitCents".into())
        );
        let array = validate_limit_change(&json!([1])).unwrap_err();
        assert_eq!((array.status, array.code), (400, "invalid_body"));
    }

    #[test]
    fn raised_alert_log_line() {
        let line = RaisedAlert {
            job_type: "ai_tagging".into(),
            month: "2025-01".into(),
            threshold: 90,
            spent_cents: 45_000.0,
            limit_cents: 50_000,
        }
        .log_line();
        assert_eq!(line["event"], "budget.alert");
        assert_eq!(line["level"], "warning");
        assert_eq!(line["percent_used"], 90.0);
    }

    proptest! {
        /// More spend never means a laxer action, and the action agrees with the alerts: an
        /// action past NORMAL means its threshold's alert condition holds.
        #[test]
        fn actions_only_tighten_as_spend_grows(
            limit in 0i64..=MAX_LIMIT_CENTS,
            a in 0.0f64..2e8,
            b in 0.0f64..2e8,
        ) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let rank = |x: BudgetAction| x.batch_size();
            prop_assert!(rank(BudgetAction::of(hi, limit)) <= rank(BudgetAction::of(lo, limit)));
            let action = BudgetAction::of(hi, limit);
            let crossed = ALERT_THRESHOLDS.iter().filter(|t| reached(hi, limit, **t)).count();
            let expected = match action {
                BudgetAction::Normal => 0,
                BudgetAction::Reduce => 1,
                BudgetAction::Queue => 2,
                BudgetAction::HardStop => 3,
            };
            prop_assert_eq!(crossed, expected);
        }

        #[test]
        fn month_back_walks_whole_months(ms in 0i64..4_000_000_000_000, back in 0u32..600) {
            let month = month_back(ms, back);
            let (y, m) = month.split_once('-').unwrap();
            let (y, m): (i32, i32) = (y.parse().unwrap(), m.parse().unwrap());
            let now = month_of(ms);
            let (ny, nm) = now.split_once('-').unwrap();
            let (ny, nm): (i32, i32) = (ny.parse().unwrap(), nm.parse().unwrap());
            prop_assert!((1..=12).contains(&m));
            prop_assert_eq!((ny * 12 + nm - 1) - (y * 12 + m - 1), back as i32);
            prop_assert!(next_month_start_ms(ms) > ms);
            prop_assert_ne!(month_of(next_month_start_ms(ms)), now);
            prop_assert_eq!(month_of(next_month_start_ms(ms) - 1), month_of(ms));
        }
    }
}
