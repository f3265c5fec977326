//! Where a delivery goes (docs/app-guide.md "Your own job types", "Callbacks"): a URL, the URL
//! in a consumer var (`url_var`), or the Worker behind a consumer service binding. A team's type
//! names one as its `target`, a job its `callback`. Read by hand: an untagged serde enum would
//! bring serde's buffering of any value into the WASM.

use serde_json::Value;

use crate::request::api_error::ApiError;
use crate::request::field_error::{invalid, join};

/// A target URL is at most this long.
pub const MAX_URL_CHARS: usize = 2_048;

/// Where a delivery goes, as the consumer reads it: a forwarded type's (its registry row's
/// `Handler::Forward`) or a callback's ([`Target::endpoint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// A URL its definition names.
    Url(&'a str),
    /// The URL in the consumer's var of this name, so one definition serves every environment
    /// (the bundled catalog's types read `ENDPOINT_<TYPE>`).
    Var(&'a str),
    /// The Worker behind the consumer's service binding `binding`, at `path`: the request's URL
    /// is `https://<binding, lowercased><path>` (docs/app-guide.md "Your own job types").
    Service { binding: &'a str, path: &'a str },
}

/// A checked target, as its JSON gave it.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Url(String),
    Var(String),
    Service { binding: String, path: String },
}

impl Target {
    /// `{"url"}`, `{"url_var"}` or `{"service", "path"?}` at field `at`; errors name the field
    /// at fault (`target.url`, `callback.service`).
    pub fn parse(value: &Value, at: &str) -> Result<Target, ApiError> {
        let text = |field: &str| -> Result<String, ApiError> {
            match value.get(field) {
                None => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(invalid(
                    "invalid_field",
                    join(at, field),
                    "must be a string",
                )),
            }
        };
        let fields = value
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect::<Vec<_>>());
        match fields.as_deref() {
            Some(["url"]) => Ok(Target::Url(check_url(text("url")?, at)?)),
            Some(["url_var"]) => {
                let name = text("url_var")?;
                Ok(Target::Var(check_upper_name(
                    name,
                    &join(at, "url_var"),
                    "a var name",
                )?))
            }
            Some(["service"] | ["path", "service"] | ["service", "path"]) => {
                let binding = text("service")?;
                let field = join(at, "service");
                let path = match value.get("path") {
                    None => "/".to_string(),
                    Some(_) => text("path")?,
                };
                Ok(Target::Service {
                    binding: check_upper_name(binding, &field, "a binding name")?,
                    path: check_path(path, at)?,
                })
            }
            _ => Err(invalid(
                "invalid_field",
                at,
                "must be {\"url\"}, {\"url_var\"} or {\"service\", \"path\"?}",
            )),
        }
    }

    /// The target as the consumer's delivery reads it.
    pub fn endpoint(&self) -> Endpoint<'_> {
        match self {
            Target::Url(url) => Endpoint::Url(url),
            Target::Var(name) => Endpoint::Var(name),
            Target::Service { binding, path } => Endpoint::Service { binding, path },
        }
    }
}

fn check_url(url: String, at: &str) -> Result<String, ApiError> {
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    if !scheme_ok || url.len() > MAX_URL_CHARS || url.chars().any(char::is_whitespace) {
        let message = format!("must be an http(s) URL of at most {MAX_URL_CHARS} characters");
        return Err(invalid("invalid_field", join(at, "url"), message));
    }
    Ok(url)
}

/// A binding or var name as wrangler.toml writes it: `APP`, `ENDPOINT_BILLING`.
fn check_upper_name(name: String, field: &str, what: &str) -> Result<String, ApiError> {
    let ok = name.len() <= 64
        && name.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !ok {
        let message = format!("must be {what}: A-Z, 0-9 and _, starting with a letter, at most 64");
        return Err(invalid("invalid_field", field, message));
    }
    Ok(name)
}

fn check_path(path: String, at: &str) -> Result<String, ApiError> {
    let ok = path.starts_with('/')
        && path.len() <= MAX_URL_CHARS
        && !path.chars().any(|c| c.is_whitespace() || c == '#');
    if !ok {
        return Err(invalid(
            "invalid_field",
            join(at, "path"),
            "must start with / (a path and query, no fragment)",
        ));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(value: Value) -> Option<String> {
        Target::parse(&value, "callback")
            .err()
            .and_then(|e| e.field)
    }

    #[test]
    fn a_target_is_a_url_a_var_or_a_service() {
        let url = Target::parse(&json!({"url": "https://a.io/h"}), "callback").unwrap();
        assert_eq!(url.endpoint(), Endpoint::Url("https://a.io/h"));
        let service = Target::parse(&json!({"service": "APP"}), "callback").unwrap();
        assert_eq!(
            service.endpoint(),
            Endpoint::Service {
                binding: "APP",
                path: "/"
            }
        );
        assert_eq!(
            field(json!({"url": "ftp://a"})).as_deref(),
            Some("callback.url")
        );
        assert_eq!(field(json!({"url": 3})).as_deref(), Some("callback.url"));
        assert_eq!(
            field(json!({"service": "app"})).as_deref(),
            Some("callback.service")
        );
        assert_eq!(
            field(json!({"service": "APP", "path": "x"})).as_deref(),
            Some("callback.path")
        );
        assert_eq!(
            field(json!({"url": "https://a.io", "x": 1})).as_deref(),
            Some("callback")
        );
        assert_eq!(field(json!("https://a.io")).as_deref(), Some("callback"));
    }
}
