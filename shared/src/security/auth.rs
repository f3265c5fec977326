//! Bearer-token authorization with three scopes. Tokens are Worker secrets, each a
//! comma-separated list so a new token can be added before the old one is removed. An entry
//! may be named (`webapp:<token>`): the name, never the token, says who called
//! (docs/configuration.md "Configuration").

use crate::job::enqueue::NewJob;
use crate::request::api_error::ApiError;
use crate::security::type_fence::{parse_fences, TypeFence};
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::{Choice, ConstantTimeEq};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// May read `GET /metrics` only (a scraper: METRICS_TOKENS).
    Metrics,
    /// May enqueue and read jobs.
    Enqueue,
    /// May do everything, including enqueue and read the metrics.
    Admin,
}

/// The caller a token identifies: its scope, its entry's name (or the token's short
/// fingerprint when the entry has none: shared `actor_of`), and for an enqueue token that
/// `ENQUEUE_TOKEN_TYPES` names, the job types it may use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub scope: Scope,
    pub name: String,
    /// `None`: every type.
    pub types: Option<TypeFence>,
}

impl Caller {
    /// Whether the caller sees a job of type `name`: a fenced token sees only its types.
    pub fn may_read(&self, name: &str) -> bool {
        self.types.as_ref().is_none_or(|fence| fence.allows(name))
    }

    /// Whether the caller may see, or cancel, a job of type `job_type` that `enqueued_by`
    /// enqueued: an admin token any job; an enqueue token only those it enqueued itself (by its
    /// name) and may read, never another token's (docs/http-api.md "HTTP API (producer)").
    pub fn may_see(&self, job_type: &str, enqueued_by: Option<&str>) -> bool {
        let own = self.scope == Scope::Admin || enqueued_by == Some(self.name.as_str());
        own && self.may_read(job_type)
    }

    /// Every job of an enqueue request inside the caller's fence (`batch`: a job's fields are
    /// named `jobs[i].type`, else `type`). 403 naming the first field outside it.
    pub fn may_enqueue(&self, jobs: &[NewJob], batch: bool) -> Result<(), ApiError> {
        let Some(fence) = &self.types else {
            return Ok(());
        };
        let at = |i| match batch {
            true => format!("jobs[{i}]."),
            false => String::new(),
        };
        (jobs.iter().enumerate()).try_for_each(|(i, job)| fence.check(job, &at(i)))
    }
}

/// One entry of a token list: the token and who it is, the name it was given or else its
/// fingerprint (worked out once, with the list).
#[derive(Clone)]
struct Entry {
    name: String,
    token: String,
    /// An enqueue token's fence, from `ENQUEUE_TOKEN_TYPES` by its name (worked out once, with
    /// the list); `None`: every type.
    types: Option<TypeFence>,
}

/// The longest name an entry may give its token.
const MAX_NAME_CHARS: usize = 32;

#[derive(Clone)]
pub struct Tokens {
    enqueue: Vec<Entry>,
    admin: Vec<Entry>,
    metrics: Vec<Entry>,
    /// Why `ENQUEUE_TOKEN_TYPES` was refused, if it was: then every enqueue token is refused
    /// too (a fence that does not parse must not open).
    fence_error: Option<String>,
}

/// The secrets the token lists are read from (each unset or a comma-separated list), and the
/// `ENQUEUE_TOKEN_TYPES` var (crate::security::type_fence).
#[derive(Clone, Copy, Default)]
pub struct TokenSecrets<'a> {
    pub enqueue: Option<&'a str>,
    pub admin: Option<&'a str>,
    pub metrics: Option<&'a str>,
    pub enqueue_types: Option<&'a str>,
}

impl Tokens {
    /// Builds from the secrets; unset secrets and blank entries grant nothing.
    pub fn from_secrets(secrets: TokenSecrets<'_>) -> Tokens {
        let mut enqueue = split_tokens(secrets.enqueue, fingerprint);
        let names: Vec<&str> = enqueue.iter().map(|e| e.name.as_str()).collect();
        let fence_error = match parse_fences(secrets.enqueue_types, &names) {
            Ok(fences) => {
                for entry in &mut enqueue {
                    entry.types = fences.get(&entry.name).cloned();
                }
                None
            }
            Err(why) => Some(why),
        };
        Tokens {
            admin: split_tokens(secrets.admin, fingerprint),
            metrics: split_tokens(secrets.metrics, fingerprint),
            enqueue,
            fence_error,
        }
    }

    /// Why `ENQUEUE_TOKEN_TYPES` was refused, if it was (for the log; GET /healthz says only
    /// that it was).
    pub fn fence_error(&self) -> Option<&str> {
        self.fence_error.as_deref()
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
        let metrics = matching(&self.metrics, token);
        // The route decides which list counts, so a token in two lists works for both.
        let granted = match required {
            Scope::Admin => None,
            Scope::Enqueue => enqueue.map(|entry| (Scope::Enqueue, entry)),
            Scope::Metrics => metrics.map(|entry| (Scope::Metrics, entry)),
        };
        if let Some((scope, entry)) = admin.map(|entry| (Scope::Admin, entry)).or(granted) {
            // Why stays in the producer's log: it names other tokens and their types.
            if let (Scope::Enqueue, Some(_)) = (scope, &self.fence_error) {
                let message = "ENQUEUE_TOKEN_TYPES is refused, and with it every enqueue token; \
                               the producer's log (worker.error, source config) says why";
                return Err(ApiError::new(503, "not_configured", message));
            }
            return Ok(Caller {
                scope,
                name: entry.name.clone(),
                // Only an enqueue entry carries a fence: an admin token is never fenced.
                types: entry.types.clone(),
            });
        }
        // Known, but not for this route: 403; unknown: 401.
        let message = match (enqueue.is_some(), metrics.is_some(), required) {
            (false, false, _) => return Err(unauthorized("invalid token")),
            (false, true, _) => "this token can only read /metrics",
            (true, _, Scope::Metrics) => "this token cannot read /metrics",
            (true, _, _) => "this token cannot use admin routes",
        };
        Err(ApiError::new(403, "forbidden", message))
    }
}

/// Redacted: tokens must not end up in logs.
impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("enqueue", &self.enqueue.len())
            .field("admin", &self.admin.len())
            .field("metrics", &self.metrics.len())
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
                types: None,
            },
            _ => Entry {
                name: unnamed(entry),
                token: entry.to_string(),
                types: None,
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
        Tokens::from_secrets(TokenSecrets {
            enqueue: Some("enq-old, enq-new,,"),
            admin: Some("adm"),
            metrics: Some("m1, scraper:m2"),
            ..TokenSecrets::default()
        })
    }

    fn status(header: Option<&str>, required: Scope) -> Result<Scope, (u16, &'static str)> {
        tokens()
            .authorize(header, required)
            .map(|caller| caller.scope)
            .map_err(|e| (e.status, e.code))
    }

    #[test]
    fn named_entries_name_their_caller_and_never_by_value() {
        let tokens = Tokens::from_secrets(TokenSecrets {
            enqueue: Some("webapp:tok-web, tok-anon, bad name:tok-x, x:y:z"),
            admin: Some("ops:tok-ops"),
            ..TokenSecrets::default()
        });
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
    }

    #[test]
    fn an_enqueue_token_sees_the_jobs_it_enqueued_an_admin_token_every_job() {
        let caller = |scope, name: &str| Caller {
            scope,
            name: name.into(),
            types: None,
        };
        let web = caller(Scope::Enqueue, "webapp");
        assert!(web.may_see("noop", Some("webapp")));
        assert!(!web.may_see("noop", Some("other")));
        assert!(
            !web.may_see("noop", None),
            "a schedule's run: no token enqueued it"
        );
        assert!(caller(Scope::Admin, "ops").may_see("noop", None));
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
        // A scraper's token reads the metrics and nothing else; known, so refused with 403.
        assert_eq!(status(Some("Bearer m1"), Metrics), Ok(Metrics));
        assert_eq!(status(Some("Bearer m2"), Metrics), Ok(Metrics));
        assert_eq!(status(Some("Bearer adm"), Metrics), Ok(Admin));
        for required in [Enqueue, Admin] {
            assert_eq!(status(Some("Bearer m2"), required), Err((403, "forbidden")));
        }
        assert_eq!(
            status(Some("Bearer enq-old"), Metrics),
            Err((403, "forbidden"))
        );
        assert_eq!(
            status(Some("Bearer m3"), Metrics),
            Err((401, "unauthorized"))
        );
        // One token in two lists is good for both.
        let both = Tokens::from_secrets(TokenSecrets {
            enqueue: Some("shared"),
            metrics: Some("shared"),
            ..TokenSecrets::default()
        });
        let scope = |required| {
            both.authorize(Some("Bearer shared"), required)
                .map(|c| c.scope)
        };
        assert_eq!(scope(Metrics), Ok(Metrics));
        assert_eq!(scope(Enqueue), Ok(Enqueue));
        assert_eq!(scope(Admin).map_err(|e| e.status), Err(403));
    }

    #[test]
    fn an_enqueue_token_the_var_names_is_fenced_and_a_bad_var_refuses_every_one() {
        let with = |types: &str| {
            Tokens::from_secrets(TokenSecrets {
                enqueue: Some("site:tok-site, app:tok-app"),
                admin: Some("site:tok-ops"),
                enqueue_types: Some(types),
                ..TokenSecrets::default()
            })
        };
        let tokens = with(r#"{"site": ["noop"]}"#);
        let call = |tokens: &Tokens, token: &str, scope| {
            tokens.authorize(Some(&format!("Bearer {token}")), scope)
        };
        let site = call(&tokens, "tok-site", Scope::Enqueue).unwrap();
        assert!(site
            .types
            .is_some_and(|t| t.allows("noop") && !t.allows("http")));
        assert_eq!(
            call(&tokens, "tok-app", Scope::Enqueue).unwrap().types,
            None
        );
        // An admin token of the same name is not fenced.
        assert_eq!(
            call(&tokens, "tok-ops", Scope::Enqueue).unwrap().types,
            None
        );
        assert_eq!(tokens.fence_error(), None);
        let bad = with(r#"{"sight": ["noop"]}"#);
        assert!(bad.fence_error().is_some_and(|e| e.contains("sight")));
        for token in ["tok-site", "tok-app"] {
            let e = call(&bad, token, Scope::Enqueue).unwrap_err();
            assert_eq!((e.status, e.code), (503, "not_configured"));
            assert!(
                !e.message.contains("sight"),
                "another token's name stays in the log"
            );
        }
        assert_eq!(
            call(&bad, "tok-ops", Scope::Admin).unwrap().scope,
            Scope::Admin
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
    fn no_secrets_means_no_access() {
        let none = Tokens::from_secrets(TokenSecrets {
            admin: Some(" , "),
            ..TokenSecrets::default()
        });
        let e = none
            .authorize(Some("Bearer x"), Scope::Enqueue)
            .unwrap_err();
        assert_eq!(e.status, 401);
    }

    #[test]
    fn debug_does_not_leak_tokens() {
        let shown = format!("{:?}", tokens());
        assert_eq!(shown, "Tokens { enqueue: 2, admin: 1, metrics: 2 }");
        let caller = tokens()
            .authorize(Some("Bearer adm"), Scope::Admin)
            .unwrap();
        assert!(!format!("{caller:?}").contains("adm\""), "{caller:?}");
    }
}
