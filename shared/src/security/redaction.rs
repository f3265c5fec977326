//! Credentials a payload carries in its `headers` (the `http` type's, docs/app-guide.md "Job
//! types") go out with the job's request and are never shown again: a job's view (the API, the
//! dashboard) shows their values redacted. D1 keeps them until retention deletes the job.

use serde_json::Value;

/// What a credential's value reads in a view.
pub const REDACTED: &str = "[redacted]";

/// Parts of a header name (compared lowercase) that mark its value a credential; a harmless
/// header caught by them (`Idempotency-Key`) only reads redacted.
const CREDENTIAL_MARKS: [&str; 9] = [
    "auth",
    "token",
    "secret",
    "password",
    "key",
    "cookie",
    "session",
    "signature",
    "credential",
];

/// Whether a header named `name` carries a credential.
fn is_credential_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    CREDENTIAL_MARKS.iter().any(|mark| name.contains(mark))
}

/// `payload` with the values of its credential `headers` replaced by [`REDACTED`].
pub fn redact_credentials(mut payload: Value) -> Value {
    if let Some(Value::Object(headers)) = payload.get_mut("headers") {
        for (name, value) in headers.iter_mut() {
            if is_credential_header(name) {
                *value = Value::String(REDACTED.to_string());
            }
        }
    }
    payload
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn credential_headers_are_redacted_and_the_rest_shown() {
        let payload = json!({
            "url": "https://partner.example/hook?token=kept",
            "headers": {
                "Authorization": "Bearer s3cret", "X-Api-Key": "k", "Cookie": "sid=1",
                "X-Auth-Token": "t", "X-Client-Secret": "c", "Proxy-Authorization": "p",
                "Ocp-Apim-Subscription-Key": "o", "api_key": "a", "X-Signature": "s",
                "Session": "q",
                "Content-Type": "application/json", "X-Request-Source": "billing",
            },
        });
        assert_eq!(
            redact_credentials(payload),
            json!({
                "url": "https://partner.example/hook?token=kept",
                "headers": {
                    "Authorization": REDACTED, "X-Api-Key": REDACTED, "Cookie": REDACTED,
                    "X-Auth-Token": REDACTED, "X-Client-Secret": REDACTED,
                    "Proxy-Authorization": REDACTED, "Ocp-Apim-Subscription-Key": REDACTED,
                    "api_key": REDACTED, "X-Signature": REDACTED, "Session": REDACTED,
                    "Content-Type": "application/json", "X-Request-Source": "billing",
                },
            })
        );
    }

    #[test]
    fn a_payload_without_headers_is_shown_as_it_is() {
        for payload in [
            json!({"message_id": "m1"}),
            json!({"headers": "text"}),
            json!([1, 2]),
        ] {
            assert_eq!(redact_credentials(payload.clone()), payload);
        }
    }
}
