//! AI tags of a feed item (docs/app-guide.md "AI tagging and budgets"): what the model is asked
//! for, and the check of what it answers. Only a reply that passes is stored; anything else leaves
//! the item untagged.

use serde::{Deserialize, Serialize};

/// Description characters sent to the model at most; a longer description is cut.
pub const MAX_CONTENT_CHARS: usize = 4000;
/// Characters a topic or category may have; longer ones mean the model rambled.
const MAX_LABEL_CHARS: usize = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sentiment {
    Positive,
    Negative,
    Neutral,
    Mixed,
}

/// What is stored in `feed_items.ai_tags`. Unknown fields in a reply are dropped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AiTags {
    pub topics: Vec<String>,
    pub sentiment: Sentiment,
    pub categories: Vec<String>,
    pub confidence: f64,
}

pub const TAGGING_SYSTEM_PROMPT: &str = "You tag news articles. Answer with one JSON object and \
nothing else: {\"topics\": [3 to 5 short keywords], \"sentiment\": \"positive\" | \"negative\" | \
\"neutral\" | \"mixed\", \"categories\": [1 to 3 of Technology, Business, Science, Health, \
Politics, Entertainment, Sports, World, Lifestyle, Local], \"confidence\": a number from 0 to 1}.";

/// The user message for one item; the description is cut to [`MAX_CONTENT_CHARS`].
pub fn tagging_prompt(title: &str, url: &str, description: Option<&str>) -> String {
    let description: String = description
        .unwrap_or("")
        .chars()
        .take(MAX_CONTENT_CHARS)
        .collect();
    format!("Title: {title}\nURL: {url}\nDescription: {description}")
}

/// The tags in a model's text: a JSON object, bare or in a ```json fence, checked against the
/// shape the prompt asks for. `Err` says what is wrong, for the log.
pub fn parse_tags(text: &str) -> Result<AiTags, String> {
    let json = unfence(text.trim());
    let tags: AiTags =
        serde_json::from_str(json).map_err(|e| format!("reply is not the tags object: {e}"))?;
    check_labels("topics", &tags.topics, 3, 5)?;
    check_labels("categories", &tags.categories, 1, 3)?;
    if !(0.0..=1.0).contains(&tags.confidence) {
        return Err(format!(
            "confidence must be between 0 and 1, not {}",
            tags.confidence
        ));
    }
    Ok(tags)
}

/// The inside of a Markdown code fence (with or without a language), or the text itself.
fn unfence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

fn check_labels(field: &str, labels: &[String], min: usize, max: usize) -> Result<(), String> {
    if !(min..=max).contains(&labels.len()) {
        return Err(format!(
            "{field} must have {min} to {max} entries, not {}",
            labels.len()
        ));
    }
    match labels
        .iter()
        .find(|l| l.trim().is_empty() || l.chars().count() > MAX_LABEL_CHARS)
    {
        Some(bad) => Err(format!("{field} has an empty or overlong entry {bad:?}")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const GOOD: &str = r#"{"topics":["AI","Machine Learning","Technology"],"sentiment":"positive",
        "categories":["Technology","Science"],"confidence":0.85}"#;

    #[test]
    fn accepts_the_example_bare_or_fenced() {
        let tags = parse_tags(GOOD).unwrap();
        assert_eq!(tags.topics.len(), 3);
        assert_eq!(tags.sentiment, Sentiment::Positive);
        assert_eq!(tags.confidence, 0.85);
        assert_eq!(
            parse_tags(&format!("```json\n{GOOD}\n```")),
            Ok(tags.clone())
        );
        assert_eq!(parse_tags(&format!("  ```\n{GOOD}```  ")), Ok(tags.clone()));
        let extra = r#"{"topics":["a","b","c","d","e"],"sentiment":"mixed","categories":["World"],
            "confidence":0,"reasoning":"dropped"}"#;
        let stored = serde_json::to_value(parse_tags(extra).unwrap()).unwrap();
        assert_eq!(
            stored,
            json!({"topics":["a","b","c","d","e"],"sentiment":"mixed","categories":["World"],"confidence":0.0})
        );
    }

    #[test]
    fn refuses_what_breaks_the_shape() {
        let with = |patch: serde_json::Value| {
            let mut v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
            for (k, val) in patch.as_object().unwrap() {
                v[k] = val.clone();
            }
            parse_tags(&v.to_string())
        };
        assert!(with(json!({"topics": ["a", "b"]}))
            .unwrap_err()
            .contains("topics"));
        assert!(with(json!({"topics": ["a", "b", "c", "d", "e", "f"]})).is_err());
        assert!(with(json!({"topics": ["a", " ", "c"]})).is_err());
        assert!(with(json!({"categories": []}))
            .unwrap_err()
            .contains("categories"));
        assert!(with(json!({"categories": ["a", "b", "c", "d"]})).is_err());
        assert!(with(json!({"sentiment": "angry"})).is_err());
        assert!(with(json!({"confidence": 1.5}))
            .unwrap_err()
            .contains("confidence"));
        assert!(with(json!({"confidence": -0.1})).is_err());
        assert!(with(json!({"confidence": "high"})).is_err());
        assert!(parse_tags("I think the topics are AI and ML.").is_err());
        assert!(parse_tags("```json\n{\"topics\": [\n```").is_err());
        assert!(parse_tags("").is_err());
    }

    #[test]
    fn prompt_cuts_long_descriptions() {
        let long = "é".repeat(MAX_CONTENT_CHARS + 50);
        let prompt = tagging_prompt("T", "https://a.io", Some(&long));
        assert!(prompt.starts_with("Title: T\nURL: https://a.io\nDescription: "));
        assert_eq!(
            prompt.chars().filter(|c| *c == 'é').count(),
            MAX_CONTENT_CHARS
        );
        assert!(tagging_prompt("T", "u", None).ends_with("Description: "));
    }

    proptest! {
        /// Whatever the model says, parsing never panics, and what it accepts has the shape.
        #[test]
        fn accepted_tags_always_fit(text in ".{0,300}") {
            if let Ok(tags) = parse_tags(&text) {
                prop_assert!((3..=5).contains(&tags.topics.len()));
                prop_assert!((1..=3).contains(&tags.categories.len()));
                prop_assert!((0.0..=1.0).contains(&tags.confidence));
            }
        }

        #[test]
        fn counts_decide(topics in 0usize..8, categories in 0usize..5, confidence in -1.0f64..2.0) {
            let v = json!({
                "topics": vec!["t"; topics], "sentiment": "neutral",
                "categories": vec!["c"; categories], "confidence": confidence,
            });
            let ok = (3..=5).contains(&topics) && (1..=3).contains(&categories)
                && (0.0..=1.0).contains(&confidence);
            prop_assert_eq!(parse_tags(&v.to_string()).is_ok(), ok);
        }
    }
}
