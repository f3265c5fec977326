//! Who did an admin action, for the audit log: a short fingerprint of the bearer token, so the
//! log tells tokens apart (and a rotated one from its successor) without ever storing a secret.

use crate::security::auth::{bearer_token, fingerprint};

/// `token:<first 12 hex digits of SHA-256(token)>`, or `anonymous` without a bearer token.
pub fn actor_of(authorization_header: Option<&str>) -> String {
    match authorization_header.and_then(bearer_token) {
        Some(token) => fingerprint(token),
        None => "anonymous".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_stable_short_and_secret_free() {
        let a = actor_of(Some("Bearer secret-admin"));
        assert_eq!(a, actor_of(Some("bearer  secret-admin ")));
        assert_eq!(a.len(), "token:".len() + 12);
        assert!(!a.contains("secret"));
        assert_ne!(a, actor_of(Some("Bearer other")));
        assert_eq!(actor_of(None), "anonymous");
    }
}
