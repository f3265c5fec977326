//! Signed delivery (docs/app-guide.md "Signed delivery"): every request to an app carries
//! `X-Jobs-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256>` over one canonical string that
//! binds the body to where and as what it was sent:
//!
//! ```text
//! <t> LF <METHOD> LF <url> LF <job type> LF <job id> LF <attempt> LF <body>
//! ```
//!
//! so a signature seen at one endpoint is worthless at another URL, with another method, for
//! another job, type or attempt. No field before the body can hold a line feed (the URL is
//! WHATWG-serialized), so the string is unambiguous. The older `v1` (timestamp and body only)
//! is gone: anyone able to enqueue an `http` job could have had any body signed with it.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const SIGNATURE_HEADER: &str = "X-Jobs-Signature";

/// The header entry that holds a signature of the canonical string above.
const VERSION: &str = "v2";

/// What a signature covers besides its timestamp: the request as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignedRequest<'a> {
    /// Upper case, as sent (`POST`).
    pub method: &'a str,
    /// Absolute, WHATWG-serialized (what `new URL(u).href` gives), without a fragment.
    pub url: &'a str,
    /// `X-Jobs-Type`: an app that takes forwarded jobs checks that it is its own, so an
    /// `http` job aimed at it (signed as `http`) is not taken for one.
    pub job_type: &'a str,
    /// `X-Jobs-Id`.
    pub job_id: &'a str,
    /// `X-Jobs-Attempt`: the job's run number, unique per delivery over the job's life.
    pub attempt: u32,
    /// The raw bytes sent (empty for GET and HEAD).
    pub body: &'a [u8],
}

/// The header value `t=<unix seconds>,v2=<hex hmac>`, signed with `secret`.
pub fn sign(secret: &[u8], timestamp_secs: i64, request: &SignedRequest) -> String {
    let tag = mac(secret, timestamp_secs, request).finalize().into_bytes();
    format!("t={timestamp_secs},{VERSION}={}", hex::encode(tag))
}

/// Why a delivery's signature was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// No `X-Jobs-Signature` header.
    MissingHeader,
    /// No `t=<integer>` or no `v2=<hex>` entry.
    InvalidHeader,
    /// `t` is further from now than the tolerance: an old delivery replayed, or a bad clock.
    StaleTimestamp,
    /// No `v2` entry is the HMAC of this request under any of the secrets.
    NoMatchingSignature,
}

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SignatureError::MissingHeader => "no X-Jobs-Signature header",
            SignatureError::InvalidHeader => "X-Jobs-Signature lacks t=<secs> or v2=<hex>",
            SignatureError::StaleTimestamp => "the signature's timestamp is out of tolerance",
            SignatureError::NoMatchingSignature => "no signature matches this request",
        })
    }
}

impl std::error::Error for SignatureError {}

/// Checks `header` for `request` within `tolerance_secs` of `now_secs`, against every one of
/// `secrets` (an app holds the old and the new secret while the signer rotates). Several `v2`
/// entries are allowed; each comparison is constant-time.
pub fn verify(
    secrets: &[&[u8]],
    header: Option<&str>,
    request: &SignedRequest,
    now_secs: i64,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::MissingHeader)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some((VERSION, sig)) => signatures.extend(hex::decode(sig).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::InvalidHeader)?;
    if signatures.is_empty() {
        return Err(SignatureError::InvalidHeader);
    }
    if now_secs.abs_diff(timestamp) > tolerance_secs.unsigned_abs() {
        return Err(SignatureError::StaleTimestamp);
    }
    let matches = secrets.iter().any(|secret| {
        let expected = mac(secret, timestamp, request);
        signatures
            .iter()
            .any(|sig| expected.clone().verify_slice(sig).is_ok())
    });
    matches
        .then_some(())
        .ok_or(SignatureError::NoMatchingSignature)
}

/// The secret deliveries are signed with: the first entry of `SIGNING_SECRETS` (comma-separated,
/// blanks ignored), else `SIGNING_SECRET`. The other entries only let one list serve the
/// consumer and the apps alike: apps verify against all of them, the consumer signs with one.
pub fn signing_secret<'a>(secrets: Option<&'a str>, secret: Option<&'a str>) -> Option<&'a str> {
    secrets
        .and_then(|list| list.split(',').map(str::trim).find(|s| !s.is_empty()))
        .or(secret)
}

fn mac(secret: &[u8], timestamp_secs: i64, request: &SignedRequest) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    let attempt = request.attempt.to_string();
    let timestamp = timestamp_secs.to_string();
    let fields = [
        &timestamp,
        request.method,
        request.url,
        request.job_type,
        request.job_id,
        &attempt,
    ];
    for field in fields {
        mac.update(field.as_bytes());
        mac.update(b"\n");
    }
    mac.update(request.body);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    // Computed independently with Python's hmac module:
    // hmac.new(b'k', b"1\nGET\nhttps://a.example/\nhttp\n01J\n1\n", hashlib.sha256).hexdigest()
    const K_GET: &str = "a8270dad48cf5a634bafcd4d8eaf9cfbdafe1e9b385fc069cb686088027a2a28";
    // hmac.new(b'whsec_test', b'1700000000\nPOST\nhttps://app.example/hooks/a?x=1\n'
    //   b'weather_refresh\n01HF0000000000000000000000\n2\n{"id":"01HF"}', hashlib.sha256)
    const WHSEC: &str = "ade3202a61998921cbf611c1b5f17d1ca98ce7888db65b93b66fa06a31f4c739";
    // The same string under b'whsec_old'.
    const WHSEC_OLD: &str = "14b7b6359feee274f8c1ea535f1c28be75a411c89448cbc83b253d1c48b0e797";

    const T: i64 = 1_700_000_000;

    fn request() -> SignedRequest<'static> {
        SignedRequest {
            method: "POST",
            url: "https://app.example/hooks/a?x=1",
            job_type: "weather_refresh",
            job_id: "01HF0000000000000000000000",
            attempt: 2,
            body: br#"{"id":"01HF"}"#,
        }
    }

    fn check(
        secrets: &[&[u8]],
        header: &str,
        request: &SignedRequest,
        now: i64,
    ) -> Result<(), SignatureError> {
        verify(secrets, Some(header), request, now, 300)
    }

    #[test]
    fn sign_matches_known_vectors() {
        let get = SignedRequest {
            method: "GET",
            url: "https://a.example/",
            job_type: "http",
            job_id: "01J",
            attempt: 1,
            body: b"",
        };
        assert_eq!(sign(b"k", 1, &get), format!("t=1,v2={K_GET}"));
        assert_eq!(
            sign(b"whsec_test", T, &request()),
            format!("t=1700000000,v2={WHSEC}")
        );
        assert_eq!(
            sign(b"whsec_old", T, &request()),
            format!("t=1700000000,v2={WHSEC_OLD}")
        );
    }

    #[test]
    fn verify_accepts_a_fresh_signature() {
        let header = sign(b"whsec_test", T, &request());
        for now in [T, T + 300, T - 300] {
            assert_eq!(check(&[b"whsec_test"], &header, &request(), now), Ok(()));
        }
    }

    #[test]
    fn the_signature_is_bound_to_method_url_type_job_and_attempt() {
        let header = sign(b"whsec_test", T, &request());
        let r = request();
        let others = [
            SignedRequest { method: "PUT", ..r },
            SignedRequest {
                url: "https://app.example/hooks/b?x=1",
                ..r
            },
            SignedRequest {
                url: "https://app.example/hooks/a?x=2",
                ..r
            },
            SignedRequest {
                job_type: "http",
                ..r
            },
            SignedRequest {
                job_id: "01HF0000000000000000000001",
                ..r
            },
            SignedRequest { attempt: 3, ..r },
            SignedRequest { body: b"{}", ..r },
        ];
        for other in others {
            assert_eq!(
                check(&[b"whsec_test"], &header, &other, T),
                Err(SignatureError::NoMatchingSignature),
                "{other:?}"
            );
        }
        // The separators are part of what is signed: moving text between fields breaks it.
        let shifted = SignedRequest {
            url: "https://app.example/hooks/a?x=1\nweather_refresh",
            job_type: "",
            ..r
        };
        assert_eq!(
            check(&[b"whsec_test"], &header, &shifted, T),
            Err(SignatureError::NoMatchingSignature)
        );
    }

    #[test]
    fn rotation_verifies_against_any_secret_held() {
        let header = sign(b"whsec_test", T, &request());
        let both: [&[u8]; 2] = [b"whsec_old", b"whsec_test"];
        assert_eq!(check(&both, &header, &request(), T), Ok(()));
        assert_eq!(
            check(&[b"whsec_old"], &header, &request(), T),
            Err(SignatureError::NoMatchingSignature)
        );
        assert_eq!(
            check(&[], &header, &request(), T),
            Err(SignatureError::NoMatchingSignature)
        );
    }

    #[test]
    fn verify_says_why_it_refuses() {
        let header = sign(b"whsec_test", T, &request());
        let secrets: [&[u8]; 1] = [b"whsec_test"];
        assert_eq!(
            verify(&secrets, None, &request(), T, 300),
            Err(SignatureError::MissingHeader)
        );
        assert_eq!(
            check(&secrets, &header, &request(), T + 301),
            Err(SignatureError::StaleTimestamp)
        );
        assert_eq!(
            check(&secrets, &header, &request(), T - 301),
            Err(SignatureError::StaleTimestamp)
        );
        let moved = header.replace("t=1700000000", "t=1700000001");
        assert_eq!(
            check(&secrets, &moved, &request(), T),
            Err(SignatureError::NoMatchingSignature)
        );
        // v1 (timestamp and body only) is no longer read at all.
        let v1 = header.replace("v2=", "v1=");
        for bad in [
            "",
            "t=1700000000",
            &format!("v2={WHSEC}"),
            "t=x,v2=zz",
            "garbage",
            &v1,
        ] {
            assert_eq!(
                check(&secrets, bad, &request(), T),
                Err(SignatureError::InvalidHeader),
                "{bad}"
            );
        }
    }

    #[test]
    fn verify_accepts_any_of_several_entries() {
        let header = format!("t=1700000000, v2={}, v2={WHSEC}", "00".repeat(32));
        assert_eq!(check(&[b"whsec_test"], &header, &request(), T), Ok(()));
    }

    #[test]
    fn the_first_of_signing_secrets_signs_else_signing_secret() {
        assert_eq!(signing_secret(Some("new,old"), Some("single")), Some("new"));
        assert_eq!(signing_secret(Some(" , new ,old"), None), Some("new"));
        assert_eq!(signing_secret(Some(" , "), Some("single")), Some("single"));
        assert_eq!(signing_secret(None, Some("single")), Some("single"));
        assert_eq!(signing_secret(None, None), None);
    }
}
