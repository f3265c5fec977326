//! The little the D1 routes share: the binding, D1's errors as 503s, one batch (one D1 round
//! trip), reading rows, and the query string.

use jobs_shared::request::api_error::ApiError;
use serde::de::DeserializeOwned;
use worker::{D1Database, D1PreparedStatement, D1Result, Env};

use crate::request::Request;

pub fn database(env: &Env) -> Result<D1Database, ApiError> {
    env.d1("DB").map_err(ApiError::from)
}

/// Every statement in one round trip and one transaction.
pub async fn batch(
    db: &D1Database,
    statements: Vec<D1PreparedStatement>,
) -> Result<Vec<D1Result>, ApiError> {
    db.batch(statements).await.map_err(ApiError::from)
}

pub fn rows<T: DeserializeOwned>(result: &D1Result) -> Result<Vec<T>, ApiError> {
    result.results().map_err(ApiError::from)
}

/// The query string as (key, value) pairs, in order, repeated keys and all (the `url` crate's
/// parser would be dead weight in the WASM: the runtime's URL is already serialized).
pub fn query_pairs(req: &Request) -> Vec<(String, String)> {
    form_urlencoded::parse(req.query().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The query string as (key, value) pairs; a repeated key is a 422 rather than a silent pick.
pub fn query(req: &Request) -> Result<Vec<(String, String)>, ApiError> {
    let pairs = query_pairs(req);
    for (i, (key, _)) in pairs.iter().enumerate() {
        if pairs[..i].iter().any(|(k, _)| k == key) {
            return Err(ApiError::new(
                422,
                "invalid_field",
                format!("{key} is given more than once"),
            )
            .with_field(key.as_str()));
        }
    }
    Ok(pairs)
}

/// `query`, and a 422 for a key not in `known` (whose message lists them if `list_known`).
pub fn only_params(
    req: &Request,
    known: &[&str],
    list_known: bool,
) -> Result<Vec<(String, String)>, ApiError> {
    let pairs = query(req)?;
    match pairs.iter().find(|(k, _)| !known.contains(&k.as_str())) {
        Some((key, _)) => {
            let mut message = format!("unknown parameter {key:?}");
            if list_known {
                message.push_str(&format!("; known: {}", known.join(", ")));
            }
            Err(ApiError::new(422, "unknown_field", message).with_field(key.as_str()))
        }
        None => Ok(pairs),
    }
}

pub fn param<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}
