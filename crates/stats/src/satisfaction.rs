//! Satisfaction: how the user's next message after an agent turn reads (continues,
//! corrects, rejects, frustrated), as a classifier model judged it. This module holds
//! the classifier's prompt, the parser of its answer and the per-model shares; the
//! model call itself is the caller's (the server), and off by default.
//!
//! The parser is lenient about the wrapping (prose around the JSON, a code fence) and
//! strict about the label: anything but the four names is refused, so a confused
//! classifier stores nothing rather than a wrong row.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cut;

/// How the user's message reads after the agent's turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    /// Moves on to something new, or builds on the result.
    Continues,
    /// Points out a specific mistake to fix.
    Corrects,
    /// Discards or undoes the agent's work.
    Rejects,
    /// Repeated complaints, errors pasted back in anger, "still broken".
    Frustrated,
}

impl Label {
    /// Every label, in the order tables show them.
    pub const ALL: [Label; 4] = [
        Label::Continues,
        Label::Corrects,
        Label::Rejects,
        Label::Frustrated,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Continues => "continues",
            Label::Corrects => "corrects",
            Label::Rejects => "rejects",
            Label::Frustrated => "frustrated",
        }
    }

    /// The label named `s` (any case, surrounding blanks ignored).
    pub fn parse(s: &str) -> Option<Label> {
        let s = s.trim().to_ascii_lowercase();
        Label::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

/// One judged follow-up message, as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SatisfactionRecord {
    /// The session.
    pub session_id: String,
    /// The model whose turn the message answered.
    pub model: String,
    /// `continues`, `corrects`, `rejects` or `frustrated`.
    pub label: String,
    /// The classifier's short reason; `None` under `[stats] privacy` (the default).
    pub reason: Option<String>,
    /// When it was judged, Unix ms.
    pub at_ms: i64,
}

/// The longest reason stored (characters), when privacy is off.
pub const MAX_REASON_CHARS: usize = 200;
/// How much of the agent's last answer the classifier sees (characters).
pub const MAX_ANSWER_CHARS: usize = 1000;
/// How much of the user's message the classifier sees (characters).
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// The classifier's system prompt: the four labels, one line each, and the answer's
/// shape.
pub const SYSTEM_PROMPT: &str = "You classify how a user reacts to a coding agent. You get \
the agent's last answer and the user's next message. Pick exactly one label:\n\
- continues: moves on to something new or builds on the result\n\
- corrects: points out a specific mistake to fix\n\
- rejects: discards or undoes the agent's work\n\
- frustrated: repeated complaints, stack traces pasted back with anger, \"still broken\"\n\
Answer with one JSON object and nothing else: {\"label\": \"<one of the four>\", \
\"reason\": \"<one short sentence>\"}";

/// The classifier's user message: the agent's answer and the user's message, each cut.
pub fn request_text(agent_answer: &str, user_message: &str) -> String {
    format!(
        "The agent's last answer:\n<<<\n{}\n>>>\n\nThe user's next message:\n<<<\n{}\n>>>",
        cut(agent_answer.trim(), MAX_ANSWER_CHARS),
        cut(user_message.trim(), MAX_MESSAGE_CHARS)
    )
}

/// What the classifier said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The label.
    pub label: Label,
    /// Its reason, cut to [`MAX_REASON_CHARS`]; `None` when it gave none.
    pub reason: Option<String>,
}

/// Why an answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// No JSON object with a `label` anywhere in it.
    #[error("no JSON object with a label in the classifier's answer")]
    NoObject,
    /// A label that is none of the four.
    #[error("unknown label {0:?}")]
    UnknownLabel(String),
}

/// Reads the classifier's answer: the first JSON object in it (in prose, in a code
/// fence or bare) that has a string `label`.
pub fn parse(answer: &str) -> Result<Verdict, ParseError> {
    for (start, _) in answer.match_indices('{') {
        let mut objects =
            serde_json::Deserializer::from_str(&answer[start..]).into_iter::<serde_json::Value>();
        let Some(Ok(value)) = objects.next() else {
            continue;
        };
        let Some(label) = value.get("label").and_then(|l| l.as_str()) else {
            continue;
        };
        let label = Label::parse(label).ok_or_else(|| ParseError::UnknownLabel(label.into()))?;
        let reason = value
            .get("reason")
            .and_then(|r| r.as_str())
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| cut(r, MAX_REASON_CHARS));
        return Ok(Verdict { label, reason });
    }
    Err(ParseError::NoObject)
}

/// One model's labels: how many of each, and their shares.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SatisfactionSummary {
    /// The model whose turns were judged.
    pub model: String,
    /// Messages judged.
    pub n: u64,
    /// Per label (all four, in [`Label::ALL`]'s order): count and share.
    pub labels: Vec<LabelShare>,
}

/// One label's count and share under a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelShare {
    /// The label.
    pub label: &'static str,
    /// How many.
    pub count: u64,
    /// `count / n`.
    pub share: f64,
}

impl SatisfactionSummary {
    /// `continues 60% · corrects 20% · rejects 0% · frustrated 20%  (n=5)`.
    pub fn line(&self) -> String {
        let shares: Vec<String> = self
            .labels
            .iter()
            .map(|l| format!("{} {:.0}%", l.label, l.share * 100.0))
            .collect();
        format!("{}  (n={})", shares.join(" · "), self.n)
    }
}

/// The labels counted per model (rows with a label this agentls does not know are
/// left out).
pub fn by_model(records: &[SatisfactionRecord]) -> Vec<SatisfactionSummary> {
    let mut counts: BTreeMap<&str, [u64; 4]> = BTreeMap::new();
    for r in records {
        let Some(i) = Label::ALL.iter().position(|l| l.as_str() == r.label) else {
            continue;
        };
        counts.entry(r.model.as_str()).or_default()[i] += 1;
    }
    counts
        .into_iter()
        .map(|(model, c)| {
            let n: u64 = c.iter().sum();
            SatisfactionSummary {
                model: model.to_owned(),
                n,
                labels: Label::ALL
                    .iter()
                    .zip(c)
                    .map(|(l, count)| LabelShare {
                        label: l.as_str(),
                        count,
                        share: count as f64 / n as f64,
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_object_is_read() {
        let v = parse(r#"{"label": "corrects", "reason": "says it panics"}"#).unwrap();
        assert_eq!(v.label, Label::Corrects);
        assert_eq!(v.reason.as_deref(), Some("says it panics"));
    }

    #[test]
    fn json_in_prose_is_found_after_braces_that_are_not_it() {
        let answer = "Sure. The user wrote {not json} and then:\n\
            {\"label\": \"Frustrated\", \"reason\": \"still broken, again\"} hope that helps";
        let v = parse(answer).unwrap();
        assert_eq!(v.label, Label::Frustrated);
        assert_eq!(v.reason.as_deref(), Some("still broken, again"));
    }

    #[test]
    fn a_code_fence_is_read() {
        let answer = "```json\n{\n  \"label\": \"rejects\",\n  \"reason\": \"revert it\"\n}\n```";
        assert_eq!(parse(answer).unwrap().label, Label::Rejects);
    }

    #[test]
    fn an_unknown_label_is_refused() {
        assert_eq!(
            parse(r#"{"label": "happy", "reason": "x"}"#),
            Err(ParseError::UnknownLabel("happy".into()))
        );
        assert_eq!(parse("continues"), Err(ParseError::NoObject));
        assert_eq!(
            parse(r#"{"reason": "no label"}"#),
            Err(ParseError::NoObject)
        );
    }

    #[test]
    fn a_missing_reason_is_none_and_a_long_one_is_cut() {
        let v = parse(r#"{"label": "continues"}"#).unwrap();
        assert_eq!((v.label, v.reason), (Label::Continues, None));
        let long = "é".repeat(500);
        let v = parse(&format!(r#"{{"label": "continues", "reason": "{long}"}}"#)).unwrap();
        let reason = v.reason.unwrap();
        assert_eq!(
            reason.chars().count(),
            MAX_REASON_CHARS + 1,
            "200 and the mark"
        );
        assert!(reason.ends_with('…'));
    }

    #[test]
    fn the_request_cuts_the_answer_and_holds_the_message() {
        let text = request_text(&"a".repeat(5000), "that's wrong, it panics");
        assert!(text.contains("that's wrong, it panics"));
        assert!(text.matches('a').count() <= MAX_ANSWER_CHARS + 10, "{text}");
        for l in Label::ALL {
            assert!(SYSTEM_PROMPT.contains(l.as_str()));
        }
    }

    #[test]
    fn shares_per_model() {
        let rec = |model: &str, label: &str| SatisfactionRecord {
            model: model.into(),
            label: label.into(),
            ..SatisfactionRecord::default()
        };
        let rows = by_model(&[
            rec("a", "continues"),
            rec("a", "continues"),
            rec("a", "corrects"),
            rec("a", "frustrated"),
            rec("b", "rejects"),
            rec("b", "unheard-of"),
        ]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].n, 4);
        assert_eq!(
            rows[0].line(),
            "continues 50% · corrects 25% · rejects 0% · frustrated 25%  (n=4)"
        );
        assert_eq!((rows[1].n, rows[1].labels[2].count), (1, 1));
    }
}
