//! A chain as a workflow (docs/app-guide.md "Workflows"): a job may carry a `name`, and a step
//! may take named earlier steps' results as its `inputs`. Checked here at enqueue; the consumer
//! resolves the names into the step's `inputs` in the batch that enqueues it
//! (`jobs_store::jobs::ChainWrite`).

use crate::request::api_error::ApiError;
use crate::request::field_error::invalid;

/// The longest step name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// The most earlier results one step may take: each is a stored result of at most
/// `stored_result::MAX_RESULT_BYTES` (64 KB), so a step's inputs stay within 512 KB.
pub const MAX_INPUTS: usize = 8;

/// Where a job stands, for the earlier steps its `inputs` may name.
#[derive(Clone, Copy)]
pub enum Earlier<'a> {
    /// It comes first (enqueued on its own, or a chain's first job): nothing is before it.
    First,
    /// A step after these names, in the order they run.
    Named(&'a [&'a str]),
    /// Not known here: a follow-up, or a step the consumer enqueues, whose chain's earlier
    /// names are in D1. A name no earlier step took resolves to nothing.
    Unknown,
}

/// A job's `name`: 1 to [`MAX_NAME_CHARS`] characters.
pub fn check_name(name: Option<&str>) -> Result<(), ApiError> {
    match name {
        Some(name) if name.is_empty() || name.chars().count() > MAX_NAME_CHARS => Err(invalid(
            "invalid_field",
            "name",
            format!("must be 1 to {MAX_NAME_CHARS} characters"),
        )),
        _ => Ok(()),
    }
}

/// A step's `inputs`: 1 to [`MAX_INPUTS`] distinct names, each of an `earlier` step when known.
/// Returned as stored: the JSON array of the names.
pub fn checked_inputs(
    inputs: Option<&[String]>,
    earlier: Earlier<'_>,
) -> Result<Option<String>, ApiError> {
    let Some(names) = inputs else {
        return Ok(None);
    };
    if let Earlier::First = earlier {
        let message = "only a chain's later step takes inputs: nothing comes before this job";
        return Err(invalid("invalid_field", "inputs", message));
    }
    if names.is_empty() || names.len() > MAX_INPUTS {
        let message = format!("must name 1 to {MAX_INPUTS} earlier steps");
        return Err(invalid("invalid_field", "inputs", message));
    }
    for (i, name) in names.iter().enumerate() {
        let field = || format!("inputs[{i}]");
        if names[..i].contains(name) {
            return Err(invalid(
                "duplicate_name",
                field(),
                format!("\"{name}\" is named twice"),
            ));
        }
        if let Earlier::Named(known) = earlier {
            if !known.contains(&name.as_str()) {
                let message = format!("no step before this one is named \"{name}\"");
                return Err(invalid("unknown_step", field(), message));
            }
        }
    }
    Ok(Some(serde_json::to_string(names).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_name_is_bounded() {
        assert!(check_name(None).is_ok());
        assert!(check_name(Some("fetch")).is_ok());
        assert!(check_name(Some(&"é".repeat(MAX_NAME_CHARS))).is_ok());
        for bad in [String::new(), "x".repeat(MAX_NAME_CHARS + 1)] {
            let e = check_name(Some(&bad)).unwrap_err();
            assert_eq!(
                (e.code, e.field.as_deref()),
                ("invalid_field", Some("name"))
            );
        }
    }

    #[test]
    fn inputs_name_earlier_steps_once_each() {
        let known = ["fetch", "count"];
        let ok = checked_inputs(Some(&names(&["count", "fetch"])), Earlier::Named(&known));
        assert_eq!(ok.unwrap().as_deref(), Some(r#"["count","fetch"]"#));
        let e =
            checked_inputs(Some(&names(&["fetch", "later"])), Earlier::Named(&known)).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("unknown_step", Some("inputs[1]"))
        );
        assert!(e.message.contains("\"later\""), "{}", e.message);
        let none_named = checked_inputs(Some(&names(&["fetch"])), Earlier::Named(&[]));
        assert_eq!(none_named.unwrap_err().code, "unknown_step");
        let first = checked_inputs(Some(&names(&["fetch"])), Earlier::First).unwrap_err();
        assert_eq!(
            (first.code, first.field.as_deref()),
            ("invalid_field", Some("inputs"))
        );
        let twice = checked_inputs(Some(&names(&["a", "a"])), Earlier::Unknown).unwrap_err();
        assert_eq!(
            (twice.code, twice.field.as_deref()),
            ("duplicate_name", Some("inputs[1]"))
        );
        assert!(checked_inputs(Some(&names(&["any"])), Earlier::Unknown).is_ok());
        assert!(checked_inputs(Some(&[]), Earlier::Unknown).is_err());
        let many: Vec<String> = (0..=MAX_INPUTS).map(|i| i.to_string()).collect();
        assert!(checked_inputs(Some(&many), Earlier::Unknown).is_err());
        assert_eq!(checked_inputs(None, Earlier::First).unwrap(), None);
    }
}
