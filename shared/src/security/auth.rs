//! Bearer-token authorization with two scopes. Tokens are Worker secrets, each a
//! comma-separated list so a new token can be added before the old one is removed.

use crate::api::api_error::ApiError;
use std::fmt;
use subtle::{Choice, ConstantTimeEq};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// May enqueue and read jobs.
    Enqueue,
    /// May do everything, including enqueue.
    Admin,
}

#[derive(Clone)]
pub struct Tokens {
    enqueue: Vec<String>,
    admin: Vec<String>,
}

impl Tokens {
    /// Builds from the two secrets; unset secrets and blank entries grant nothing.
    pub fn from_secrets(enqueue: Option<&str>, admin: Option<&str>) -> Tokens {
        Tokens {
            enqueue: split_tokens(enqueue),
            admin: split_tokens(admin),
        }
    }

    /// Checks `Authorization: Bearer <token>` against `required`, returning the
    /// token's own scope. 401 when the caller is not identified, 403 when the
    /// token is valid but too weak.
    pub fn authorize(
        &self,
        authorization_header: Option<&str>,
        required: Scope,
    ) -> Result<Scope, ApiError> {
        let token = authorization_header
            .and_then(bearer_token)
            .ok_or_else(|| unauthorized("send an Authorization: Bearer <token> header"))?;
        // Compare against every token, without stopping at a match, so the time
        // taken says nothing about which token (or how much of one) matched.
        let is_admin = matches_any(&self.admin, token);
        let is_enqueue = matches_any(&self.enqueue, token);
        if bool::from(is_admin) {
            Ok(Scope::Admin)
        } else if !bool::from(is_enqueue) {
            Err(unauthorized("invalid token"))
        } else if required == Scope::Admin {
            Err(ApiError::new(
                403,
                "forbidden",
                "this token cannot use admin routes",
            ))
        } else {
            Ok(Scope::Enqueue)
        }
    }
}

/// Whether `Authorization: Bearer <token>` carries one of the comma-separated tokens in
/// `secret` (constant time), for a route with its own token list such as METRICS_TOKENS.
pub fn bearer_in(authorization_header: Option<&str>, secret: Option<&str>) -> bool {
    let tokens = split_tokens(secret);
    authorization_header
        .and_then(bearer_token)
        .is_some_and(|token| bool::from(matches_any(&tokens, token)))
}

/// Redacted: tokens must not end up in logs.
impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("enqueue", &self.enqueue.len())
            .field("admin", &self.admin.len())
            .finish()
    }
}

fn split_tokens(secret: Option<&str>) -> Vec<String> {
    secret
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect()
}

/// The token of `Bearer <token>` (the scheme is case-insensitive, RFC 9110).
pub(crate) fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn matches_any(tokens: &[String], candidate: &str) -> Choice {
    tokens.iter().fold(Choice::from(0), |found, token| {
        found | token.as_bytes().ct_eq(candidate.as_bytes())
    })
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(401, "unauthorized", message).with_field("authorization")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens::from_secrets(Some("enq-old, enq-new,,"), Some("adm"))
    }

    fn status(header: Option<&str>, required: Scope) -> Result<Scope, (u16, &'static str)> {
        tokens()
            .authorize(header, required)
            .map_err(|e| (e.status, e.code))
    }

    #[test]
    fn scopes() {
        use Scope::*;
        assert_eq!(status(Some("Bearer enq-old"), Enqueue), Ok(Enqueue));
        assert_eq!(status(Some("Bearer enq-new"), Enqueue), Ok(Enqueue));
        assert_eq!(status(Some("bearer  adm "), Enqueue), Ok(Admin));
        assert_eq!(status(Some("Bearer adm"), Admin), Ok(Admin));
        assert_eq!(
            status(Some("Bearer enq-new"), Admin),
            Err((403, "forbidden"))
        );
    }

    #[test]
    fn unidentified_callers_get_401() {
        for header in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer "),
            Some("Basic adm"),
            Some("adm"),
            Some("Bearer enq"),
            Some("Bearer enq-old2"),
            Some("Bearer ADM"),
        ] {
            assert_eq!(
                status(header, Scope::Enqueue),
                Err((401, "unauthorized")),
                "{header:?}"
            );
        }
        let e = tokens().authorize(None, Scope::Admin).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("authorization"));
    }

    #[test]
    fn bearer_in_a_separate_list() {
        assert!(bearer_in(Some("Bearer m2"), Some("m1, m2")));
        assert!(!bearer_in(Some("Bearer m3"), Some("m1,m2")));
        assert!(!bearer_in(Some("Bearer m1"), None));
        assert!(!bearer_in(None, Some("m1")));
    }

    #[test]
    fn no_secrets_means_no_access() {
        let none = Tokens::from_secrets(None, Some(" , "));
        let e = none
            .authorize(Some("Bearer x"), Scope::Enqueue)
            .unwrap_err();
        assert_eq!(e.status, 401);
    }

    #[test]
    fn debug_does_not_leak_tokens() {
        let shown = format!("{:?}", tokens());
        assert_eq!(shown, "Tokens { enqueue: 2, admin: 1 }");
    }
}
