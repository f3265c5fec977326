//! RSS 2.0 / RSS 1.0 and Atom feeds (docs/app-guide.md "rss_feed_refresh"): parsing with quick-xml,
//! and the decisions about each entry (skip when title or URL is missing, the dedup key, the
//! content hash). quick-xml directly rather than a feed crate: the handler needs five fields per
//! entry, and the feed crates bring date, URL, MIME and regex parsers that would double the Worker.

use crate::request::api_error::ApiError;
use crate::retry::error_class::{ErrorClass, HandlerClass, JobError};
use crate::util::text_prefix::char_prefix;
use crate::util::time_fmt::parse_rfc3339;
use chrono::DateTime;
use md5::{Digest as _, Md5};
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use sha2::Sha256;

/// One entry as the feed wrote it; any field may be missing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedEntry {
    pub guid: Option<String>,
    pub title: Option<String>,
    pub url: Option<String>,
    pub description: Option<String>,
    pub published: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Rss,
    Atom,
}

/// Parses an RSS or Atom document. Anything else, or malformed XML, is an error (the source's
/// error count goes up; the feed may recover).
pub fn parse_feed(xml: &str) -> Result<Vec<FeedEntry>, String> {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().trim_text(true);
    let mut kind = None;
    let mut entries = Vec::new();
    // Depth of the open entry element, and the entry's direct child being read.
    let mut depth = 0usize;
    let mut entry: Option<(usize, FeedEntry)> = None;
    let mut field: Option<(String, String)> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("invalid XML at byte {}: {e}", reader.error_position()))?;
        match event {
            Event::Start(e) => {
                depth += 1;
                let name = local_name(&e);
                let Some(kind) = kind else {
                    kind = Some(root_kind(&name)?);
                    continue;
                };
                match &mut entry {
                    None if is_entry(kind, &name) => entry = Some((depth, FeedEntry::default())),
                    Some((at, item)) if depth == *at + 1 => {
                        if kind == Kind::Atom && name == "link" {
                            take_atom_link(item, &e);
                        }
                        field = Some((name, String::new()));
                    }
                    _ => {}
                }
            }
            Event::Empty(e) => {
                let name = local_name(&e);
                if kind.is_none() {
                    return Err(format!("<{name}/> is not an RSS or Atom document"));
                }
                if let Some((at, item)) = &mut entry {
                    if depth == *at && kind == Some(Kind::Atom) && name == "link" {
                        take_atom_link(item, &e);
                    }
                }
            }
            Event::Text(t) => {
                if let Some((_, text)) = &mut field {
                    let t = t.unescape().map_err(|e| format!("invalid text: {e}"))?;
                    text.push_str(&t);
                }
            }
            Event::CData(c) => {
                if let Some((_, text)) = &mut field {
                    text.push_str(&String::from_utf8_lossy(&c.into_inner()));
                }
            }
            Event::End(_) => {
                if let (Some((at, item)), Some(kind)) = (&mut entry, kind) {
                    if depth == *at + 1 {
                        if let Some((name, text)) = field.take() {
                            set_field(kind, item, &name, text);
                        }
                    } else if depth == *at {
                        entries.push(std::mem::take(item));
                        entry = None;
                    }
                }
                depth = depth.saturating_sub(1);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    match kind {
        Some(_) if depth == 0 => Ok(entries),
        Some(_) => Err("the document ends inside an element".to_string()),
        None => Err("empty document: not RSS or Atom".to_string()),
    }
}

fn local_name(e: &BytesStart) -> String {
    String::from_utf8_lossy(e.local_name().as_ref()).into_owned()
}

fn root_kind(name: &str) -> Result<Kind, String> {
    match name {
        "rss" | "RDF" => Ok(Kind::Rss),
        "feed" => Ok(Kind::Atom),
        other => Err(format!("<{other}> is not an RSS or Atom document")),
    }
}

fn is_entry(kind: Kind, name: &str) -> bool {
    match kind {
        Kind::Rss => name == "item",
        Kind::Atom => name == "entry",
    }
}

/// Atom's entry URL: the first `<link href>` whose rel is absent or "alternate".
fn take_atom_link(item: &mut FeedEntry, e: &BytesStart) {
    let attr = |key: &str| {
        e.try_get_attribute(key)
            .ok()
            .flatten()
            .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
    };
    if item.url.is_none() && matches!(attr("rel").as_deref(), None | Some("alternate")) {
        item.url = attr("href");
    }
}

fn set_field(kind: Kind, item: &mut FeedEntry, name: &str, text: String) {
    let slot = match (kind, name) {
        (_, "title") => &mut item.title,
        (Kind::Rss, "link") => &mut item.url,
        (Kind::Rss, "guid") | (Kind::Atom, "id") => &mut item.guid,
        (Kind::Rss, "description") | (Kind::Atom, "summary") => &mut item.description,
        (Kind::Atom, "content") if item.description.is_none() => &mut item.description,
        (Kind::Rss, "pubDate" | "date") | (Kind::Atom, "published") => &mut item.published,
        (Kind::Atom, "updated") if item.published.is_none() => &mut item.published,
        _ => return,
    };
    let text = text.trim();
    if !text.is_empty() {
        *slot = Some(text.to_string());
    }
}

/// An entry ready to store.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NewFeedItem {
    /// The entry's GUID, or `hash:` + SHA-256 of URL and published date when it has none.
    pub guid: String,
    pub title: String,
    pub url: String,
    pub description: Option<String>,
    pub published_at: Option<i64>,
    /// MD5 of title + description, for later similarity checks.
    pub content_hash: String,
}

impl NewFeedItem {
    /// About the bytes the item takes as written (its text; JSON escaping aside): what a
    /// refresh holds in memory before it writes.
    pub fn stored_len(&self) -> usize {
        self.guid.len()
            + self.title.len()
            + self.url.len()
            + self.description.as_ref().map_or(0, String::len)
            + self.content_hash.len()
    }
}

/// What one refresh makes of a feed's entries.
#[derive(Debug, Default, PartialEq)]
pub struct SortedEntries {
    pub items: Vec<NewFeedItem>,
    /// Entries without a title or URL.
    pub skipped: u32,
    /// Entries repeating a key met earlier in the same document.
    pub duplicate: u32,
    /// The GUIDs (absent: `None`) of the skipped entries that lack a title or URL, for their
    /// `entry.missing_fields` events.
    pub missing_fields: Vec<Option<String>>,
}

impl SortedEntries {
    /// Entries the feed held: stored, duplicate and skipped.
    pub fn fetched(&self) -> u32 {
        self.items.len() as u32 + self.duplicate + self.skipped
    }
}

/// A failed fetch's `error_type` for the `rss_fetch_errors_total` metric (docs/operating.md "GET
/// /metrics"): `http_<status>` for an HTTP answer (the `HTTP <status>` message every status
/// failure carries, see `classify_http_status`), else the error's class (`timeout`,
/// `server_error` for an unreadable feed, `internal` for rows D1 refused).
pub fn fetch_error_type(error: &JobError) -> String {
    match error
        .message
        .strip_prefix("HTTP ")
        .and_then(|s| s.parse::<u16>().ok())
    {
        Some(status) => format!("http_{status}"),
        None => error.class.as_str().to_string(),
    }
}

/// Sorts a feed's entries into items to store. Bounded (docs/app-guide.md "rss_feed_refresh"): at
/// most [`MAX_ENTRIES_PER_FEED`] entries are looked at and the rest counted as skipped, as is an
/// entry whose title, URL or GUID is over [`MAX_FIELD_CHARS`]; a description is cut at
/// [`MAX_DESCRIPTION_CHARS`] (its content hash is of the whole text).
pub fn sort_entries(entries: Vec<FeedEntry>) -> SortedEntries {
    let mut sorted = SortedEntries::default();
    let mut seen = std::collections::HashSet::new();
    let over = entries.len().saturating_sub(MAX_ENTRIES_PER_FEED);
    sorted.skipped = over as u32;
    for entry in entries.into_iter().take(MAX_ENTRIES_PER_FEED) {
        let too_long = |f: &Option<String>| f.as_ref().is_some_and(|t| t.len() > MAX_FIELD_CHARS);
        let (Some(title), Some(url)) = (entry.title.clone(), entry.url.clone()) else {
            sorted.skipped += 1;
            sorted.missing_fields.push(entry.guid);
            continue;
        };
        if too_long(&entry.title) || too_long(&entry.url) || too_long(&entry.guid) {
            sorted.skipped += 1;
            continue;
        }
        let guid = entry.guid.unwrap_or_else(|| {
            let published = entry.published.as_deref().unwrap_or_default();
            format!(
                "hash:{}",
                hex::encode(Sha256::digest(format!("{url}\n{published}")))
            )
        });
        if !seen.insert(guid.clone()) {
            sorted.duplicate += 1;
            continue;
        }
        let description = entry.description.unwrap_or_default();
        let content_hash = hex::encode(Md5::digest(format!("{title}{description}")));
        let description = char_prefix(&description, MAX_DESCRIPTION_CHARS).to_string();
        sorted.items.push(NewFeedItem {
            guid,
            published_at: entry.published.as_deref().and_then(parse_feed_date),
            title,
            url,
            description: (!description.is_empty()).then_some(description),
            content_hash,
        });
    }
    sorted
}

/// The items as JSON arrays of at most [`MAX_INSERT_JSON_BYTES`] each (one alone when it is
/// larger), one per INSERT: no statement's bound value nears D1's 2,000,000-byte limit,
/// however many items a feed has or how much escaping their text needs.
pub fn item_chunks(items: &[NewFeedItem]) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut chunk = String::new();
    for item in items {
        let json = serde_json::to_string(item).unwrap_or_default();
        if !chunk.is_empty() && chunk.len() + json.len() + 2 > MAX_INSERT_JSON_BYTES {
            chunk.push(']');
            chunks.push(std::mem::take(&mut chunk));
        }
        chunk.push(if chunk.is_empty() { '[' } else { ',' });
        chunk.push_str(&json);
    }
    if !chunk.is_empty() {
        chunk.push(']');
        chunks.push(chunk);
    }
    chunks
}

/// RSS dates are RFC 2822, Atom's RFC 3339; an unreadable date is just absent.
pub fn parse_feed_date(s: &str) -> Option<i64> {
    DateTime::parse_from_rfc2822(s)
        .ok()
        .map(|t| t.timestamp_millis())
        .or_else(|| parse_rfc3339(s))
}

/// A feed answered 404 or 410. Retried, unlike another 4xx: feeds come back, and each failure
/// counts toward its source's auto-disable (docs/app-guide.md "rss_feed_refresh").
pub const GONE: ErrorClass = ErrorClass::Handler(&HandlerClass {
    name: "gone",
    retryable: true,
});

/// The failure disabled its RSS source (its [`MAX_CONSECUTIVE_ERRORS`]th in a row): only an
/// operator's re-enable helps, so not retried.
pub const SOURCE_DISABLED: ErrorClass = ErrorClass::Handler(&HandlerClass {
    name: "source_disabled",
    retryable: false,
});

/// Consecutive failed refreshes that disable a source.
pub const MAX_CONSECUTIVE_ERRORS: u32 = 5;
/// A feed's body is read up to this many bytes; a longer one fails its source.
pub const MAX_FEED_BYTES: usize = 1024 * 1024;
/// Entries of one feed looked at per refresh: a feed longer than that is unusually large.
pub const MAX_ENTRIES_PER_FEED: usize = 1000;
/// An entry with a longer title, URL or GUID is skipped.
pub const MAX_FIELD_CHARS: usize = 2048;
/// Descriptions are stored up to this many characters.
pub const MAX_DESCRIPTION_CHARS: usize = 16 * 1024;
/// The most item JSON one INSERT binds (see [`item_chunks`]).
pub const MAX_INSERT_JSON_BYTES: usize = 256 * 1024;

/// How long one refresh may take: each feed (request and body) within `feed_timeout_ms`, and
/// no feed starts unless it can end within `budget_ms` of the job's start; the sources left
/// are refreshed by the next run. The budget stays well inside the type's 60 s timeout, which
/// bounds the job's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RssLimits {
    pub feed_timeout_ms: u32,
    pub budget_ms: u32,
}

impl RssLimits {
    pub const DEFAULT: RssLimits = RssLimits {
        feed_timeout_ms: 15_000,
        budget_ms: 40_000,
    };
    /// The largest budget a var may set: the write and the record still fit in the timeout.
    pub const MAX_BUDGET_SECS: i64 = 45;

    /// `RSS_FEED_TIMEOUT_SECS` and `RSS_REFRESH_BUDGET_SECS` (1 to 45 each); a bad value keeps
    /// its default and is reported. A feed timeout over the budget is cut to the budget.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (RssLimits, Vec<String>) {
        let mut warnings = Vec::new();
        let mut read = |name: &str, default: u32| {
            crate::util::config_var::int_var(
                name,
                var(name),
                Self::MAX_BUDGET_SECS,
                "the default",
                &mut warnings,
            )
            .map_or(default, |secs| secs as u32 * 1000)
        };
        let budget_ms = read("RSS_REFRESH_BUDGET_SECS", Self::DEFAULT.budget_ms);
        let feed_timeout_ms =
            read("RSS_FEED_TIMEOUT_SECS", Self::DEFAULT.feed_timeout_ms).min(budget_ms);
        (
            RssLimits {
                feed_timeout_ms,
                budget_ms,
            },
            warnings,
        )
    }

    /// Whether a feed may start at `now_ms` in a refresh that started at `started_ms`.
    pub fn may_start(self, started_ms: i64, now_ms: i64) -> bool {
        now_ms + i64::from(self.feed_timeout_ms) <= started_ms + i64::from(self.budget_ms)
    }
}
/// Refresh intervals allowed (also a CHECK constraint in D1).
pub const REFRESH_INTERVAL_MINUTES: std::ops::RangeInclusive<u32> = 15..=1440;

/// A source as the refresh decision needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceState {
    pub is_active: bool,
    pub last_fetched_at: Option<i64>,
    pub refresh_interval_minutes: u32,
    pub retry_after_until: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshDecision {
    Refresh,
    Inactive,
    NotDue,
    /// The feed's own 429 asked us to wait until then.
    RateLimited {
        until_ms: i64,
    },
}

/// Whether to fetch a source now. `force` (the admin's manual refresh) skips the interval but
/// not a disabled source, nor the feed's own Retry-After.
pub fn refresh_decision(source: &SourceState, now_ms: i64, force: bool) -> RefreshDecision {
    if !source.is_active {
        return RefreshDecision::Inactive;
    }
    if let Some(until_ms) = source.retry_after_until.filter(|u| *u > now_ms) {
        return RefreshDecision::RateLimited { until_ms };
    }
    let interval_ms = i64::from(source.refresh_interval_minutes) * 60_000;
    match source.last_fetched_at {
        Some(at) if !force && at + interval_ms > now_ms => RefreshDecision::NotDue,
        _ => RefreshDecision::Refresh,
    }
}

/// A source's error count after one more failure, and whether it stays active.
pub fn after_refresh_failure(error_count: u32) -> (u32, bool) {
    let count = error_count.saturating_add(1);
    (count, count < MAX_CONSECUTIVE_ERRORS)
}

/// A source the admin adds: `{name, url, refresh_interval_minutes?}`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSource {
    pub name: String,
    pub url: String,
    #[serde(default = "default_interval")]
    pub refresh_interval_minutes: u32,
}

fn default_interval() -> u32 {
    60
}

/// Checks an admin's new source; errors name the field.
pub fn validate_new_source(body: &serde_json::Value) -> Result<NewSource, ApiError> {
    let invalid = |field: &str, message: String| {
        crate::request::field_error::invalid("invalid_field", field, message)
    };
    let source: NewSource = crate::request::field_error::decode(body)
        .map_err(|e| invalid(&e.error.field, e.error.message))?;
    if source.name.trim().is_empty() {
        return Err(invalid("name", "must not be empty".into()));
    }
    crate::job::payloads::check_url("url", &source.url).map_err(|e| invalid("url", e.message))?;
    if !REFRESH_INTERVAL_MINUTES.contains(&source.refresh_interval_minutes) {
        return Err(ApiError::new(
            422,
            "out_of_range",
            format!(
                "must be between {} and {} minutes",
                REFRESH_INTERVAL_MINUTES.start(),
                REFRESH_INTERVAL_MINUTES.end()
            ),
        )
        .with_field("refresh_interval_minutes"));
    }
    Ok(source)
}

/// An admin's change to a source: `{"is_active"?: bool, "error_count"?: 0}`, at least one.
/// `error_count` may only be reset (an operator re-enables and resets a source in one call,
/// docs/app-guide.md "rss_feed_refresh"); re-enabling resets it anyway.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcePatch {
    pub is_active: Option<bool>,
    pub error_count: Option<u32>,
}

impl SourcePatch {
    /// Whether the change clears the error streak (`error_count`, `last_error_message`).
    pub fn resets_errors(self) -> bool {
        self.is_active == Some(true) || self.error_count == Some(0)
    }
}

/// Checks an admin's change to a source; errors name the field.
pub fn validate_source_patch(body: &serde_json::Value) -> Result<SourcePatch, ApiError> {
    let invalid = |field: &str, message: String| {
        crate::request::field_error::invalid("invalid_field", field, message)
    };
    if !body.is_object() {
        return Err(invalid(
            "is_active",
            "send {\"is_active\": true|false}".into(),
        ));
    }
    let patch: SourcePatch = crate::request::field_error::decode(body)
        .map_err(|e| invalid(&e.error.field, e.error.message))?;
    match patch {
        SourcePatch {
            is_active: None,
            error_count: None,
        } => Err(invalid(
            "is_active",
            "send is_active (true|false) and/or error_count (0)".into(),
        )),
        SourcePatch {
            error_count: Some(n),
            ..
        } if n != 0 => {
            Err(
                ApiError::new(422, "out_of_range", "error_count can only be reset to 0")
                    .with_field("error_count"),
            )
        }
        patch => Ok(patch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSS: &str = r#"<?xml version="1.0"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>News</title>
<item><title>One &amp; only</title><link>https://n.io/1</link><guid isPermaLink="false">g-1</guid>
  <description><![CDATA[<p>First</p>]]></description><pubDate>Tue, 10 Jun 2025 04:00:00 GMT</pubDate></item>
<item><title>Two</title><link>https://n.io/2</link><pubDate>Wed, 11 Jun 2025 04:00:00 +0000</pubDate></item>
<item><title>No link</title></item>
<item><title>One again</title><link>https://n.io/1b</link><guid>g-1</guid></item>
<item><source url="https://x"><title>not mine</title></source><link>https://n.io/3</link></item>
</channel></rss>"#;

    const ATOM: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Blog</title><id>urn:blog</id>
<entry><title>Hello</title><id>urn:e1</id><link rel="self" href="https://b.io/self"/>
  <link href="https://b.io/hello"/><updated>2025-06-10T04:00:00Z</updated><summary>Hi</summary></entry>
<entry><title type="html">Second</title><id>urn:e2</id><link rel="alternate" href="https://b.io/2"></link>
  <published>2025-06-11T04:00:00+02:00</published><content>Body</content></entry>
</feed>"#;

    #[test]
    fn reads_rss_items() {
        let entries = parse_feed(RSS).unwrap();
        assert_eq!(entries.len(), 5);
        assert_eq!(
            entries[0],
            FeedEntry {
                guid: Some("g-1".into()),
                title: Some("One & only".into()),
                url: Some("https://n.io/1".into()),
                description: Some("<p>First</p>".into()),
                published: Some("Tue, 10 Jun 2025 04:00:00 GMT".into()),
            }
        );
        assert_eq!(entries[1].guid, None);
        // A nested element's title is not the item's.
        assert_eq!(entries[4].title, None);
    }

    #[test]
    fn reads_atom_entries() {
        let entries = parse_feed(ATOM).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].url.as_deref(), Some("https://b.io/hello"));
        assert_eq!(entries[0].guid.as_deref(), Some("urn:e1"));
        assert_eq!(
            entries[0].published.as_deref(),
            Some("2025-06-10T04:00:00Z")
        );
        assert_eq!(entries[1].url.as_deref(), Some("https://b.io/2"));
        assert_eq!(entries[1].description.as_deref(), Some("Body"));
        assert_eq!(
            parse_feed_date(entries[1].published.as_deref().unwrap()),
            Some(1_749_607_200_000)
        );
    }

    #[test]
    fn refuses_what_is_not_a_feed() {
        for doc in [
            "<rss><channel><item><title>x</item></channel></rss>",
            "<html><body>hi</body></html>",
            "",
            "not xml at all",
            "<rss><channel>",
        ] {
            assert!(parse_feed(doc).is_err(), "{doc:?}");
        }
    }

    #[test]
    fn fetch_errors_are_typed_by_status_else_by_class() {
        use crate::retry::error_class::classify_http_status;
        let status = |code| classify_http_status(code, None, 0).unwrap_err();
        assert_eq!(fetch_error_type(&status(404)), "http_404");
        assert_eq!(fetch_error_type(&status(503)), "http_503");
        assert_eq!(fetch_error_type(&status(429)), "http_429");
        let timeout = JobError::new(ErrorClass::Timeout, "no answer within 2000 ms");
        assert_eq!(fetch_error_type(&timeout), "timeout");
        let garbage = JobError::new(ErrorClass::ServerError, "unreadable feed: invalid XML");
        assert_eq!(fetch_error_type(&garbage), "server_error");
        let gone = JobError::new(GONE, "HTTP 410");
        assert_eq!(fetch_error_type(&gone), "http_410");
        assert!(GONE.retryable() && !SOURCE_DISABLED.retryable());
        assert_eq!(SOURCE_DISABLED.as_str(), "source_disabled");
    }

    #[test]
    fn sorts_entries_skipping_incomplete_and_repeated_ones() {
        let sorted = sort_entries(parse_feed(RSS).unwrap());
        assert_eq!((sorted.skipped, sorted.duplicate), (2, 1));
        assert_eq!(sorted.items.len(), 2);
        assert_eq!(sorted.fetched(), 5);
        assert_eq!(sorted.missing_fields, [None, None], "no link; no title");
        let [one, two] = [&sorted.items[0], &sorted.items[1]];
        assert_eq!(one.guid, "g-1");
        assert_eq!(one.published_at, Some(1_749_528_000_000));
        assert_eq!(
            one.content_hash,
            hex::encode(Md5::digest("One & only<p>First</p>"))
        );
        // No GUID: the key is a hash of URL + published, stable across refreshes.
        assert!(two.guid.starts_with("hash:") && two.guid.len() == 5 + 64);
        assert_eq!(
            two.guid,
            sort_entries(parse_feed(RSS).unwrap()).items[1].guid
        );
        assert_eq!(two.description, None);
    }

    #[test]
    fn refresh_decisions() {
        const NOW: i64 = 10_000_000;
        let s = SourceState {
            is_active: true,
            last_fetched_at: Some(NOW - 14 * 60_000),
            refresh_interval_minutes: 15,
            retry_after_until: None,
        };
        assert_eq!(refresh_decision(&s, NOW, false), RefreshDecision::NotDue);
        assert_eq!(refresh_decision(&s, NOW, true), RefreshDecision::Refresh);
        let due = SourceState {
            last_fetched_at: Some(NOW - 15 * 60_000),
            ..s
        };
        assert_eq!(refresh_decision(&due, NOW, false), RefreshDecision::Refresh);
        let never = SourceState {
            last_fetched_at: None,
            ..s
        };
        assert_eq!(
            refresh_decision(&never, NOW, false),
            RefreshDecision::Refresh
        );
        let off = SourceState {
            is_active: false,
            ..due
        };
        assert_eq!(refresh_decision(&off, NOW, true), RefreshDecision::Inactive);
        let waiting = SourceState {
            retry_after_until: Some(NOW + 1),
            ..due
        };
        assert_eq!(
            refresh_decision(&waiting, NOW, true),
            RefreshDecision::RateLimited { until_ms: NOW + 1 }
        );
    }

    #[test]
    fn new_sources_are_checked() {
        let ok = validate_new_source(&serde_json::json!({"name": "N", "url": "https://n.io/rss"}));
        assert_eq!(ok.unwrap().refresh_interval_minutes, 60);
        for (body, field) in [
            (serde_json::json!({"name": "N", "url": "ftp://x"}), "url"),
            (serde_json::json!({"name": " ", "url": "https://x"}), "name"),
            (serde_json::json!({"url": "https://x"}), "name"),
            (
                serde_json::json!({"name": "N", "url": "https://x", "refresh_interval_minutes": 14}),
                "refresh_interval_minutes",
            ),
            (
                serde_json::json!({"name": "N", "url": "https://x", "refresh_interval_minutes": 1441}),
                "refresh_interval_minutes",
            ),
            (
                serde_json::json!({"name": "N", "url": "https://x", "nope": 1}),
                "nope",
            ),
        ] {
            assert_eq!(
                validate_new_source(&body).unwrap_err().field.as_deref(),
                Some(field),
                "{body}"
            );
        }
    }

    #[test]
    fn five_consecutive_failures_disable() {
        assert_eq!(after_refresh_failure(0), (1, true));
        assert_eq!(after_refresh_failure(3), (4, true));
        assert_eq!(after_refresh_failure(4), (5, false));
    }

    #[test]
    fn source_patches_are_checked() {
        let ok = |body| validate_source_patch(&body).unwrap();
        let seed = ok(serde_json::json!({"is_active": true, "error_count": 0}));
        assert_eq!(
            (seed.is_active, seed.error_count, seed.resets_errors()),
            (Some(true), Some(0), true)
        );
        assert!(!ok(serde_json::json!({"is_active": false})).resets_errors());
        assert!(ok(serde_json::json!({"error_count": 0})).resets_errors());
        for (body, field) in [
            (serde_json::json!({}), "is_active"),
            (serde_json::json!([]), "is_active"),
            (serde_json::json!({"is_active": "yes"}), "is_active"),
            (
                serde_json::json!({"is_active": true, "error_count": 3}),
                "error_count",
            ),
            (serde_json::json!({"error_count": -1}), "error_count"),
            (serde_json::json!({"is_active": true, "name": "x"}), "name"),
        ] {
            assert_eq!(
                validate_source_patch(&body).unwrap_err().field.as_deref(),
                Some(field),
                "{body}"
            );
        }
    }

    #[test]
    fn entries_are_bounded() {
        let entry = |i: usize| FeedEntry {
            guid: Some(format!("g{i}")),
            title: Some("t".into()),
            url: Some("https://x.io".into()),
            description: Some("d".repeat(MAX_DESCRIPTION_CHARS + 10)),
            published: None,
        };
        let mut entries: Vec<FeedEntry> = (0..MAX_ENTRIES_PER_FEED + 3).map(entry).collect();
        entries[0].title = Some("t".repeat(MAX_FIELD_CHARS + 1));
        entries[1].guid = Some("g".repeat(MAX_FIELD_CHARS + 1));
        let sorted = sort_entries(entries);
        assert_eq!(sorted.skipped, 3 + 2);
        assert_eq!(sorted.items.len(), MAX_ENTRIES_PER_FEED - 2);
        let stored = sorted.items[0].description.as_deref().unwrap();
        assert_eq!(stored.chars().count(), MAX_DESCRIPTION_CHARS);
        let whole = format!("t{}", "d".repeat(MAX_DESCRIPTION_CHARS + 10));
        assert_eq!(
            sorted.items[0].content_hash,
            hex::encode(Md5::digest(whole))
        );
    }

    #[test]
    fn item_chunks_stay_under_the_statement_bound_and_keep_every_item() {
        let item = |i: usize, len: usize| NewFeedItem {
            guid: format!("g{i}"),
            title: "\"quoted\"".into(),
            url: "https://x.io".into(),
            description: Some("\\".repeat(len)),
            published_at: None,
            content_hash: String::new(),
        };
        let items: Vec<NewFeedItem> = (0..300).map(|i| item(i, 2000)).collect();
        let chunks = item_chunks(&items);
        assert!(chunks.len() > 1);
        let mut back = 0;
        for chunk in &chunks {
            assert!(chunk.len() <= MAX_INSERT_JSON_BYTES, "{}", chunk.len());
            back += serde_json::from_str::<Vec<serde_json::Value>>(chunk)
                .unwrap()
                .len();
        }
        assert_eq!(back, 300);
        let big = [item(0, MAX_INSERT_JSON_BYTES)];
        assert_eq!(item_chunks(&big).len(), 1, "a larger item goes alone");
        assert!(item_chunks(&[]).is_empty());
    }

    #[test]
    fn refresh_limits_from_vars() {
        let (limits, warnings) = RssLimits::from_vars(|_| None);
        assert_eq!((limits, warnings.len()), (RssLimits::DEFAULT, 0));
        let (limits, warnings) = RssLimits::from_vars(|name| match name {
            "RSS_REFRESH_BUDGET_SECS" => Some("4".into()),
            "RSS_FEED_TIMEOUT_SECS" => Some("9".into()),
            _ => None,
        });
        assert_eq!((limits.budget_ms, limits.feed_timeout_ms), (4_000, 4_000));
        assert!(warnings.is_empty());
        let (limits, warnings) = RssLimits::from_vars(|_| Some("3600".into()));
        assert_eq!((limits, warnings.len()), (RssLimits::DEFAULT, 2));
        // Well inside the type's timeout, whatever the vars say.
        let timeout = i64::from(
            crate::job::job_type::JobType::RSS_FEED_REFRESH
                .spec()
                .timeout_ms,
        );
        assert!(RssLimits::MAX_BUDGET_SECS * 1000 <= timeout - 15_000);
        let d = RssLimits::DEFAULT;
        assert!(d.may_start(0, 25_000) && !d.may_start(0, 25_001));
    }
}
