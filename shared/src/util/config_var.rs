//! Numeric vars that tune the Workers (the sweep's knobs, the alert thresholds): a bad value
//! never stops anything; it keeps its default and is reported.

use std::fmt::Display;

/// `value` (the var `name`) as a whole number from 1 to `max`; `None` when unset or blank. A bad
/// value also reads as `None`, and a warning naming it and `instead` (what is used) joins
/// `warnings`.
pub(crate) fn int_var(
    name: &str,
    value: Option<String>,
    max: i64,
    instead: impl Display,
    warnings: &mut Vec<String>,
) -> Option<i64> {
    let text = value.filter(|v| !v.trim().is_empty())?;
    match text.trim().parse::<i64>() {
        Ok(n) if (1..=max).contains(&n) => Some(n),
        _ => {
            warnings.push(format!(
                "{name}={text:?} is not 1 to {max}; using {instead}"
            ));
            None
        }
    }
}
