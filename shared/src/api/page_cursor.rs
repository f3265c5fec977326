//! Opaque cursors for lists in a stable order: the position of the last row shown, as
//! (sort key, id), hex-encoded so clients treat it as a token rather than parse it.

use crate::request::api_error::ApiError;

pub fn encode(key: i64, id: &str) -> String {
    hex::encode(format!("{key}:{id}"))
}

/// 422 on anything `encode` did not make.
pub fn decode(cursor: &str) -> Result<(i64, String), ApiError> {
    hex::decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| {
            let (key, id) = text.split_once(':')?;
            Some((key.parse().ok()?, id.to_string()))
        })
        .ok_or_else(|| {
            ApiError::new(422, "invalid_field", "cursor is not one this API returned")
                .with_field("cursor")
        })
}

/// A page size from `limit` (default `default`, at most `max`).
pub fn limit(value: Option<&str>, default: u32, max: u32) -> Result<u32, ApiError> {
    crate::request::field_error::count_param("limit", value, default, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_forgeries() {
        let c = encode(-7, "01JABC");
        assert_eq!(decode(&c), Ok((-7, "01JABC".to_string())));
        for bad in ["zz", "", &hex::encode("nocolon"), &hex::encode("x:1")] {
            assert_eq!(decode(bad).unwrap_err().field.as_deref(), Some("cursor"));
        }
    }

    #[test]
    fn limits() {
        assert_eq!(limit(None, 50, 200), Ok(50));
        assert_eq!(limit(Some("200"), 50, 200), Ok(200));
        for bad in ["0", "201", "x", "-1"] {
            assert_eq!(limit(Some(bad), 50, 200).unwrap_err().code, "out_of_range");
        }
    }
}
