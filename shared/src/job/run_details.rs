//! What one attempt ran and what it produced, kept as one JSON value on its run record
//! (`job_runs.details`, docs/app-guide.md "Run records and artifacts"): one column written by the
//! statement that writes the run, so it costs no row of its own.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::budget::Usage;
use crate::util::text_prefix::byte_prefix;

/// A lost attempt's details when the sweep's rescuer found it (docs/app-guide.md "Run records and
/// artifacts").
pub const FOUND_BY_SWEEP: &str = r#"{"found_by":"sweep"}"#;

/// A lost attempt's details when a consumer invocation's claim found it.
pub fn found_by_consumer(version: &str, invocation: &str) -> String {
    serde_json::json!({ "found_by": "consumer", "invocation": invocation, "version": version })
        .to_string()
}

/// An artifact's body kept inline on its run record up to this size; a larger one goes to R2
/// (the `ARTIFACTS` bucket), or, without that bucket, is cut to this size.
pub const INLINE_ARTIFACT_MAX_BYTES: usize = 4 * 1024;

/// What ran the attempt and what it did, and the lease the job held when its outcome was
/// written (`lease_until`): the consumer's own account of it where it has one, else the
/// record's SQL reads it from the job's row. A success keeps what its consumer invocation's
/// runs share ([`RunDetails::shared_by_invocation`]) once per invocation, and [`Ran`] on its
/// job's row (docs/app-guide.md "Run records and artifacts").
#[derive(Serialize, PartialEq)]
pub struct RunDetails {
    /// The consumer's deployed version id (its version-metadata binding), else `local`.
    pub version: String,
    /// The consumer invocation that ran it; its `batch.completed` line carries the same id.
    pub invocation: String,
    #[serde(flatten)]
    pub ran: Ran,
    /// The lease as the batch last wrote it (the claim's, or its heartbeat's latest), when D1
    /// confirmed that write; `None` after a heartbeat D1 refused, whose effect is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<i64>,
}

/// The run's own part of its details: its handler and what it sent, read and produced.
#[derive(Serialize, PartialEq)]
pub struct Ran {
    /// The handler module of the job's registry row.
    pub handler: &'static str,
    /// Stored only when the attempt sent or read a body, and its artifacts only when it made
    /// some: a success's details are on its job's row, and most succeed with neither. The job
    /// view shows the omitted ones as zeros and `[]` ([`show_omitted`]).
    #[serde(skip_serializing_if = "Bytes::is_zero")]
    pub bytes: Bytes,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmUse>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
}

/// What every run one consumer invocation records shares: its version, and the lease its batch
/// held when D1 confirmed it.
#[derive(Serialize)]
pub struct InvocationDetails<'a> {
    pub version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<i64>,
}

impl RunDetails {
    pub fn shared_by_invocation(&self) -> InvocationDetails<'_> {
        InvocationDetails {
            version: &self.version,
            lease_until: self.lease_until,
        }
    }
}

/// Body bytes of the attempt's outbound requests: sent, and received (read).
#[derive(Serialize, Clone, Copy, Default, Debug, PartialEq)]
pub struct Bytes {
    pub out: u64,
    #[serde(rename = "in")]
    pub received: u64,
}

impl Bytes {
    fn is_zero(&self) -> bool {
        *self == Bytes::default()
    }
}

/// Stored details (`details`, a JSON object) with the fields [`RunDetails`] leaves out when
/// empty put back, for a run the consumer ran (its details name a `handler`); a lost attempt's
/// details are left as they are.
pub fn show_omitted(details: &mut Map<String, Value>) {
    if details.contains_key("handler") {
        details
            .entry("bytes")
            .or_insert_with(|| serde_json::to_value(Bytes::default()).unwrap_or_default());
        details
            .entry("artifacts")
            .or_insert_with(|| Value::Array(Vec::new()));
    }
}

/// The LLM work of an attempt: the model, its calls, and the tokens they used.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct LlmUse {
    pub model: String,
    pub calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl LlmUse {
    pub fn add(&mut self, usage: Usage, calls: u32) {
        self.calls += calls;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
    }
}

/// One thing an attempt produced: its `kind`, its size in bytes, and either its R2 `key` or
/// its body `inline` (bounded by INLINE_ARTIFACT_MAX_BYTES); `extra` holds kind-specific fields.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Artifact {
    pub kind: &'static str,
    pub content_type: &'static str,
    pub size: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An artifact an attempt made, before it is kept: its kind, content type and body (JSON text,
/// or JSON lines).
#[derive(Clone, Copy)]
pub struct ArtifactBody<'a> {
    pub kind: &'static str,
    pub content_type: &'static str,
    pub body: &'a str,
}

/// Where an artifact's body goes.
#[derive(Debug, PartialEq)]
pub enum Placement {
    Inline(Value),
    /// In R2 under this key.
    Stored(String),
    /// No bucket to hold it: its first INLINE_ARTIFACT_MAX_BYTES, inline.
    Cut(Value),
}

impl Artifact {
    /// An artifact whose body lives in R2 under `key`.
    pub fn stored(
        kind: &'static str,
        content_type: &'static str,
        size: usize,
        key: String,
    ) -> Self {
        Artifact {
            key: Some(key),
            ..Artifact::bare(kind, content_type, size)
        }
    }

    fn bare(kind: &'static str, content_type: &'static str, size: usize) -> Self {
        Artifact {
            kind,
            content_type,
            size,
            key: None,
            inline: None,
            truncated: false,
            extra: Map::new(),
        }
    }

    /// `made`, an artifact of run `run` of job `job_id`: inline when small, else to R2 when
    /// `has_bucket`, else cut.
    pub fn place(
        made: &ArtifactBody<'_>,
        job_id: &str,
        run: u32,
        has_bucket: bool,
    ) -> (Artifact, Placement) {
        let ArtifactBody {
            kind,
            content_type,
            body,
        } = *made;
        let inline = |text: &str| {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
        };
        let size = body.len();
        let placement = if size <= INLINE_ARTIFACT_MAX_BYTES {
            Placement::Inline(inline(body))
        } else if has_bucket {
            Placement::Stored(artifact_key(job_id, run, kind))
        } else {
            Placement::Cut(Value::String(
                byte_prefix(body, INLINE_ARTIFACT_MAX_BYTES).to_string(),
            ))
        };
        let mut artifact = Artifact::bare(kind, content_type, size);
        match &placement {
            Placement::Inline(v) => artifact.inline = Some(v.clone()),
            Placement::Stored(key) => artifact.key = Some(key.clone()),
            Placement::Cut(v) => {
                artifact.inline = Some(v.clone());
                artifact.truncated = true;
            }
        }
        (artifact, placement)
    }

    /// The artifact with one more kind-specific field.
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(name.to_string(), value.into());
        self
    }
}

/// The R2 key of an artifact: per job and run, so a retry never overwrites an earlier
/// attempt's. Under `artifacts/`, the prefix the bucket's lifecycle rule expires.
pub fn artifact_key(job_id: &str, run: u32, kind: &str) -> String {
    let extension = if kind.ends_with("responses") {
        "jsonl"
    } else {
        "json"
    };
    format!("artifacts/{job_id}/{run}/{kind}.{extension}")
}

/// The R2 binding that keeps a stored artifact, by its key's prefix: the consumer writes under
/// these (`artifact_key`, shared `screenshot_key`), the producer's download (docs/app-guide.md "Run
/// records and artifacts") reads from the one a run record's key names, and no other.
pub fn artifact_bucket(key: &str) -> Option<&'static str> {
    [("screenshots/", "SCREENSHOTS"), ("artifacts/", "ARTIFACTS")]
        .into_iter()
        .find(|(prefix, _)| key.starts_with(prefix))
        .map(|(_, binding)| binding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_bytes_and_artifacts_are_not_stored_and_the_view_shows_them() {
        let details = RunDetails {
            version: "local".into(),
            invocation: "01K".into(),
            ran: Ran {
                handler: "noop",
                bytes: Bytes::default(),
                llm: None,
                artifacts: Vec::new(),
            },
            lease_until: Some(11),
        };
        let stored = serde_json::to_value(&details).unwrap();
        assert_eq!(
            stored,
            json!({"version": "local", "invocation": "01K", "handler": "noop", "lease_until": 11})
        );
        let Value::Object(mut shown) = stored else {
            panic!("not an object")
        };
        show_omitted(&mut shown);
        assert_eq!(shown["bytes"], json!({"out": 0, "in": 0}));
        assert_eq!(shown["artifacts"], json!([]));
        let mut lost: Map<String, Value> = serde_json::from_str(FOUND_BY_SWEEP).unwrap();
        show_omitted(&mut lost);
        assert_eq!(Value::Object(lost), json!({"found_by": "sweep"}));
    }

    #[test]
    fn small_bodies_stay_inline_large_ones_go_to_r2_or_are_cut() {
        let summary = ArtifactBody {
            kind: "feed_summary",
            content_type: "application/json",
            body: "{\"a\":1}",
        };
        let (a, p) = Artifact::place(&summary, "J", 2, true);
        assert_eq!(p, Placement::Inline(json!({"a": 1})));
        assert_eq!(
            serde_json::to_value(&a).unwrap(),
            json!({"kind": "feed_summary", "content_type": "application/json", "size": 7, "inline": {"a": 1}})
        );
        let big = "é".repeat(INLINE_ARTIFACT_MAX_BYTES);
        let responses = ArtifactBody {
            kind: "llm_responses",
            content_type: "application/x-ndjson",
            body: &big,
        };
        let (a, p) = Artifact::place(&responses, "J", 2, true);
        assert_eq!(
            p,
            Placement::Stored("artifacts/J/2/llm_responses.jsonl".into())
        );
        assert_eq!(a.key.as_deref(), Some("artifacts/J/2/llm_responses.jsonl"));
        assert_eq!((a.size, a.inline), (big.len(), None));
        let (a, p) = Artifact::place(&responses, "J", 2, false);
        let Placement::Cut(Value::String(cut)) = p else {
            panic!("not cut")
        };
        assert!(cut.len() <= INLINE_ARTIFACT_MAX_BYTES && a.truncated && a.key.is_none());
    }

    #[test]
    fn details_serialize_as_the_api_shows_them() {
        let mut llm = LlmUse {
            model: "m".into(),
            calls: 0,
            input_tokens: 0,
            output_tokens: 0,
        };
        llm.add(
            Usage {
                input_tokens: 10,
                output_tokens: 3,
            },
            2,
        );
        let details = RunDetails {
            version: "local".into(),
            invocation: "01K".into(),
            ran: Ran {
                handler: "ai_tagging",
                bytes: Bytes {
                    out: 5,
                    received: 7,
                },
                llm: Some(llm),
                artifacts: vec![
                    Artifact::stored("screenshot", "image/png", 9, "k".into()).with("width", 3)
                ],
            },
            lease_until: Some(11),
        };
        assert_eq!(
            serde_json::to_value(&details).unwrap(),
            json!({
                "version": "local", "invocation": "01K", "handler": "ai_tagging",
                "bytes": {"out": 5, "in": 7},
                "llm": {"model": "m", "calls": 2, "input_tokens": 10, "output_tokens": 3},
                "artifacts": [{"kind": "screenshot", "content_type": "image/png", "size": 9,
                               "key": "k", "width": 3}],
                "lease_until": 11,
            })
        );
    }

    #[test]
    fn each_stored_key_names_the_bucket_it_was_written_to() {
        // As handlers::screenshot's screenshot_key names an image.
        assert_eq!(artifact_bucket("screenshots/J/2.jpg"), Some("SCREENSHOTS"));
        let summary = artifact_key("J", 1, "feed_summary");
        assert_eq!(artifact_bucket(&summary), Some("ARTIFACTS"));
        assert_eq!(artifact_bucket("other/J/1.png"), None);
    }
}
