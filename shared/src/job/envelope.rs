//! The queue message. It carries only the job's id and type: the payload and
//! state live in D1, so a message stays tiny and can never disagree with the row.
//! Plain fields only: Workers serialise maps into JS `Map`s that arrive empty.
//! `cid` (the correlation id) is optional and omitted when absent, so version 1 consumers and
//! producers on either side of a deploy read each other's messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Bumped when the message shape changes, so an old consumer refuses a new
/// message loudly instead of misreading it.
pub const MESSAGE_VERSION: u8 = 1;

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct JobMessage {
    pub v: u8,
    pub id: String,
    #[serde(rename = "type")]
    pub job_type: String,
    /// The correlation id of the request that enqueued the job (see crate::observe::correlation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cid: Option<String>,
}

impl JobMessage {
    /// A message for a job as stored (its type by name), carrying its correlation id.
    pub fn stored(id: &str, job_type: &str, cid: Option<&str>) -> Self {
        JobMessage {
            v: MESSAGE_VERSION,
            id: id.to_string(),
            job_type: job_type.to_string(),
            cid: cid.map(str::to_string),
        }
    }

    /// Reads a message body (its JSON text), checking the version before the shape. A current
    /// message, nearly every one, is read straight into its struct; anything else is read as a
    /// tree to say what is wrong with it.
    pub fn parse(body: &str) -> Result<JobMessage, String> {
        match serde_json::from_str::<JobMessage>(body) {
            Ok(message) if message.v == MESSAGE_VERSION => Ok(message),
            _ => match serde_json::from_str::<Value>(body) {
                Ok(value) => JobMessage::parse_value(&value),
                Err(e) => Err(format!("not a job message: {e}")),
            },
        }
    }

    fn parse_value(value: &Value) -> Result<JobMessage, String> {
        let version = value.get("v").and_then(Value::as_u64);
        if version != Some(u64::from(MESSAGE_VERSION)) {
            return Err(match version {
                Some(v) => format!("unsupported message version {v} (expected {MESSAGE_VERSION})"),
                None => "not a job message: no numeric version field \"v\"".to_string(),
            });
        }
        JobMessage::deserialize(value).map_err(|e| format!("malformed job message: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::job_type::JobType;
    use serde_json::json;

    #[test]
    fn serialises_to_the_wire_shape() {
        let m = JobMessage::stored("01HZX", JobType::RSS_FEED_REFRESH.as_str(), None);
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"v": 1, "id": "01HZX", "type": "rss_feed_refresh"})
        );
    }

    #[test]
    fn parse_round_trips() {
        let m = JobMessage::stored("a", JobType::HTTP.as_str(), None);
        assert_eq!(
            JobMessage::parse(&serde_json::to_string(&m).unwrap()),
            Ok(m)
        );
    }

    #[test]
    fn correlation_id_is_optional_on_the_wire() {
        let m = JobMessage::stored("a", "noop", Some("4bf9"));
        let wire = serde_json::to_value(&m).unwrap();
        assert_eq!(
            wire,
            json!({"v": 1, "id": "a", "type": "noop", "cid": "4bf9"})
        );
        assert_eq!(JobMessage::parse(&wire.to_string()), Ok(m));
        let old =
            JobMessage::parse(&json!({"v": 1, "id": "a", "type": "noop"}).to_string()).unwrap();
        assert_eq!(old.cid, None);
    }

    #[test]
    fn parse_tolerates_extra_fields() {
        let m = JobMessage::parse(
            &json!({"v": 1, "id": "a", "type": "noop", "trace": "t"}).to_string(),
        );
        assert_eq!(m.map(|m| m.job_type), Ok("noop".to_string()));
    }

    #[test]
    fn parse_rejects_other_versions_and_shapes() {
        assert_eq!(
            JobMessage::parse(&json!({"v": 2, "id": "a", "type": "noop"}).to_string()),
            Err("unsupported message version 2 (expected 1)".to_string())
        );
        assert!(
            JobMessage::parse(&json!({"id": "a", "type": "noop"}).to_string())
                .unwrap_err()
                .contains("no numeric version")
        );
        assert!(JobMessage::parse(&json!("hello").to_string()).is_err());
        let missing_id =
            JobMessage::parse(&json!({"v": 1, "type": "noop"}).to_string()).unwrap_err();
        assert!(missing_id.contains("missing field `id`"), "{missing_id}");
    }
}
