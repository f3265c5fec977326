//! Bearer-token authorization with two scopes. Tokens are Worker secrets, each a
//! comma-separated list so a new token can be added before the old one is removed. An entry
//! may be named (`webapp:<token>`): the name, never the token, says who called (README
//! "Configuration").

use crate::api::api_error::ApiError;
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::{Choice, ConstantTimeEq};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// May enqueue and read jobs.
    Enqueue,
    /// May do everything, including enqueue.
    Admin,
}

/// The caller a token identifies: its scope, and its entry's name (or the token's short
/// fingerprint when the entry has none: shared `actor_of`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub scope: Scope,
    pub name: String,
}

/// One entry of a token list: the token and who it is, the name it was given or else its
/// fingerprint (worked out once, with the list).
#[derive(Clone)]
struct Entry {
    name: String,
    token: String,
}

/// The longest name an entry may give its token.
const MAX_NAME_CHARS: usize = 32;

#[derive(Clone)]
pub struct Tokens {
    enqueue: Vec<Entry>,
    admin: Vec<Entry>,
}

impl Tokens {
    /// Builds from the two secrets; unset secrets and blank entries grant nothing.
    pub fn from_secrets(enqueue: Option<&str>, admin: Option<&str>) -> Tokens {
        Tokens {
            enqueue: split_tokens(enqueue, fingerprint),
            admin: split_tokens(admin, fingerprint),
        }
    }

    /// Checks `Authorization: Bearer <token>` against `required`, returning the
    /// caller: the token's own scope and name. 401 when the caller is not identified, 403
    /// when the token is valid but too weak.
    pub fn authorize(
        &self,
        authorization_header: Option<&str>,
        required: Scope,
    ) -> Result<Caller, ApiError> {
        let token = authorization_header
            .and_then(bearer_token)
            .ok_or_else(|| unauthorized("send an Authorization: Bearer <token> header"))?;
        // Compare against every token, without stopping at a match, so the time
        // taken says nothing about which token (or how much of one) matched.
        let admin = matching(&self.admin, token);
        let enqueue = matching(&self.enqueue, token);
        let caller = |scope, entry: &Entry| Caller {
            scope,
            name: entry.name.clone(),
        };
        match (admin, enqueue) {
            (Some(entry), _) => Ok(caller(Scope::Admin, entry)),
            (None, None) => Err(unauthorized("invalid token")),
            (None, Some(_)) if required == Scope::Admin => Err(ApiError::new(
                403,
                "forbidden",
                "this token cannot use admin routes",
            )),
            (None, Some(entry)) => Ok(caller(Scope::Enqueue, entry)),
        }
    }
}

/// Whether `Authorization: Bearer <token>` carries one of the comma-separated tokens in
/// `secret` (constant time), for a route with its own token list such as METRICS_TOKENS.
pub fn bearer_in(authorization_header: Option<&str>, secret: Option<&str>) -> bool {
    // Only whether one matches: no names, so no fingerprints.
    let tokens = split_tokens(secret, |_| String::new());
    authorization_header
        .and_then(bearer_token)
        .is_some_and(|token| matching(&tokens, token).is_some())
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

/// The entries of a token list. `name:token` names its token when `name` is 1 to 32 of
/// `A-Z a-z 0-9 _ . -`; any other entry is a bare token (so a token holding `:` must be named),
/// known by `unnamed(token)`.
fn split_tokens(secret: Option<&str>, unnamed: fn(&str) -> String) -> Vec<Entry> {
    secret
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|entry| match entry.split_once(':') {
            Some((name, token)) if is_name(name) && !token.trim().is_empty() => Entry {
                name: name.to_string(),
                token: token.trim().to_string(),
            },
            _ => Entry {
                name: unnamed(entry),
                token: entry.to_string(),
            },
        })
        .collect()
}

fn is_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// `token:<first 12 hex digits of SHA-256(token)>`: how a token without a name is known, in
/// the audit log and on the jobs it enqueued.
pub fn fingerprint(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    format!("token:{}", &hex::encode(digest)[..12])
}

/// The token of `Bearer <token>` (the scheme is case-insensitive, RFC 9110).
pub(crate) fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The entry whose token is `candidate`. Every token is compared, in constant time each, so
/// the time taken says nothing of how much of a token matched.
fn matching<'t>(tokens: &'t [Entry], candidate: &str) -> Option<&'t Entry> {
    let mut found = None;
    for entry in tokens {
        let equal: Choice = entry.token.as_bytes().ct_eq(candidate.as_bytes());
        if bool::from(equal) && found.is_none() {
            found = Some(entry);
        }
    }
    found
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
            .map(|caller| caller.scope)
            .map_err(|e| (e.status, e.code))
    }

    #[test]
    fn named_entries_name_their_caller_and_never_by_value() {
        let tokens = Tokens::from_secrets(
            Some("webapp:tok-web, tok-anon, bad name:tok-x, x:y:z"),
            Some("ops:tok-ops"),
        );
        let name = |token: &str| {
            tokens
                .authorize(Some(&format!("Bearer {token}")), Scope::Enqueue)
                .map(|c| (c.scope, c.name))
        };
        assert_eq!(name("tok-web"), Ok((Scope::Enqueue, "webapp".into())));
        assert_eq!(name("tok-ops"), Ok((Scope::Admin, "ops".into())));
        assert_eq!(name("y:z"), Ok((Scope::Enqueue, "x".into())));
        let anon = name("tok-anon").unwrap().1;
        assert_eq!(anon, fingerprint("tok-anon"));
        assert!(anon.starts_with("token:") && !anon.contains("tok-anon"));
        // Not a valid name: the whole entry is the token.
        assert!(name("bad name:tok-x").is_ok());
        assert!(name("tok-x").is_err());
        assert!(name("webapp:tok-web").is_err());
        assert!(bearer_in(Some("Bearer m2"), Some("metrics:m2")));
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
        let caller = tokens()
            .authorize(Some("Bearer adm"), Scope::Admin)
            .unwrap();
        assert!(!format!("{caller:?}").contains("adm\""), "{caller:?}");
    }
}
