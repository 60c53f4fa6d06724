//! Keeping long sessions inside the window. First, old tool outputs are masked: a
//! one-line stub stays in the transcript and the full text goes to [`Artifacts`], which
//! the model can read back with the [`ReadArtifact`] tool. If that is not enough, the
//! older turns are folded into a structured summary written by the cheapest model,
//! with facts the harness extracts itself (goal, files, failures) appended so that a
//! weak summary cannot lose them. The user's own messages are always kept verbatim.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use agentls_model::{CancellationToken, ChatRequest, Message, Part, Provider, Role, collect};
use agentls_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};
use async_trait::async_trait;
use serde_json::json;

/// Marks the summary part of a compacted transcript.
pub const SUMMARY_MARK: &str = "[Summary of the earlier part of this session]";
/// Marks a masked tool output.
pub const MASK_MARK: &str = "[masked output";

/// Full texts of masked tool outputs, by id. Cheap to clone (shared).
#[derive(Clone, Debug, Default)]
pub struct Artifacts {
    inner: Arc<Mutex<Vec<String>>>,
}

impl Artifacts {
    /// Stores `text`, returning its id (`art-N`).
    pub fn put(&self, text: String) -> String {
        let mut v = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        v.push(text);
        format!("art-{}", v.len())
    }

    /// The text stored under `id`.
    pub fn get(&self, id: &str) -> Option<String> {
        let n: usize = id.strip_prefix("art-")?.parse().ok()?;
        let v = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        v.get(n.checked_sub(1)?).cloned()
    }
}

/// The `read_artifact` tool: reads back a masked tool output.
#[derive(Debug)]
pub struct ReadArtifact(pub Artifacts);

#[derive(serde::Deserialize)]
struct ReadArtifactArgs {
    id: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadArtifact {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_artifact",
            description: "Read the full text of an earlier tool output that was masked to save \
                context, by the id given in its stub. Optional 1-based line `offset` and `limit`.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Artifact id, e.g. art-3"},
                    "offset": {"type": "integer", "minimum": 1},
                    "limit": {"type": "integer", "minimum": 1}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    async fn call(
        &self,
        _ctx: &ToolContext,
        args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        let a: ReadArtifactArgs = parse_args("read_artifact", args)?;
        let text = self.0.get(&a.id).ok_or_else(|| {
            ToolError::invalid_arguments(format!(
                "no artifact {:?}; ids look like art-1 and are given in masked-output stubs",
                a.id
            ))
        })?;
        let skip = a.offset.unwrap_or(1).saturating_sub(1);
        let lines: Vec<&str> = text
            .lines()
            .skip(skip)
            .take(a.limit.unwrap_or(usize::MAX))
            .collect();
        Ok(ToolOutput::with_summary(
            lines.join("\n"),
            format!("read {} ({} lines)", a.id, lines.len()),
        ))
    }
}

/// Rough token count of a request (4 bytes a token), for the threshold check.
pub fn estimate_tokens(req: &ChatRequest) -> usize {
    req.approx_chars() / CHARS_PER_TOKEN as usize
}

/// Characters per token assumed before a provider has counted a prompt (English prose;
/// code and JSON run denser).
pub const CHARS_PER_TOKEN: f64 = 4.0;

/// Masks tool outputs of at least `min_bytes` outside the last `keep_recent`
/// messages. Returns how many were masked.
pub fn mask_old_outputs(
    messages: &mut [Message],
    keep_recent: usize,
    min_bytes: usize,
    artifacts: &Artifacts,
) -> usize {
    let names: HashMap<String, String> = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some((c.id.clone(), c.name.clone())),
            _ => None,
        })
        .collect();
    let end = messages.len().saturating_sub(keep_recent);
    let mut masked = 0;
    for m in &mut messages[..end] {
        for p in &mut m.parts {
            let Part::ToolResult(r) = p else { continue };
            if r.content.len() < min_bytes || r.content.starts_with(MASK_MARK) {
                continue;
            }
            let first: String = r
                .content
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(100)
                .collect();
            let lines = r.content.lines().count();
            let bytes = r.content.len();
            let tool = names.get(&r.call_id).map_or("a tool", String::as_str);
            let full = std::mem::take(&mut r.content);
            let id = artifacts.put(full);
            r.content = format!(
                "{MASK_MARK} of {tool}: {lines} lines, {bytes} bytes; first line: {first:?}; \
                 read it again with read_artifact {{\"id\": \"{id}\"}}]"
            );
            masked += 1;
        }
    }
    masked
}

/// Folds the messages before the last `keep_recent` (moved forward to the next
/// assistant message, so calls and their results stay together) into one user message:
/// the user's own texts verbatim, then the summary. Returns how many messages were
/// folded (0 when there was nothing to fold).
pub async fn summarize(
    messages: &mut Vec<Message>,
    keep_recent: usize,
    summarizer: Option<&dyn Provider>,
    cancel: &CancellationToken,
) -> usize {
    let mut cut = messages.len().saturating_sub(keep_recent);
    while cut < messages.len() && messages[cut].role != Role::Assistant {
        cut += 1;
    }
    if cut >= messages.len() || cut < 2 {
        return 0;
    }
    let head: Vec<Message> = messages.drain(..cut).collect();
    let facts = extract_facts(&head);
    let rendered = render_transcript(&head);
    let written = match summarizer {
        Some(p) => match model_summary(p, &rendered, cancel).await {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(
                    "summary by {} failed, keeping harness facts only: {e}",
                    p.name()
                );
                None
            }
        },
        None => None,
    };
    let mut parts: Vec<Part> = head
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::Text(t) if !t.starts_with(SUMMARY_MARK) => Some(Part::Text(t.clone())),
            _ => None,
        })
        .collect();
    let mut summary = format!("{SUMMARY_MARK}\n");
    if let Some(w) = written {
        summary.push_str(w.trim());
        summary.push_str("\n\n");
    }
    summary.push_str(&facts);
    parts.push(Part::Text(summary));
    messages.insert(
        0,
        Message {
            role: Role::User,
            parts,
        },
    );
    cut
}

async fn model_summary(
    provider: &dyn Provider,
    transcript: &str,
    cancel: &CancellationToken,
) -> Result<String, agentls_model::ModelError> {
    let system = "You summarise the earlier part of a coding agent's session so that it can \
        continue without it. Answer with these headings, each with short bullet points: Goal, \
        User constraints, Files touched, Failing tests and error kinds, Decisions, Next steps.";
    let req = ChatRequest::new(Some(system.into()), transcript.to_owned());
    let answer = collect(provider.stream(&req, cancel.clone())).await?;
    Ok(answer.text)
}

const MAX_RENDERED: usize = 60_000;

fn render_transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        for p in &m.parts {
            match (m.role, p) {
                (Role::User, Part::Text(t)) => out.push_str(&format!("USER: {t}\n")),
                (Role::Assistant, Part::Text(t)) => out.push_str(&format!("ASSISTANT: {t}\n")),
                (_, Part::ToolCall(c)) => {
                    out.push_str(&format!("CALL {}({})\n", c.name, c.arguments))
                }
                (_, Part::ToolResult(r)) => {
                    let s: String = r.content.chars().take(800).collect();
                    out.push_str(&format!(
                        "RESULT{}: {s}\n",
                        if r.is_error { " (error)" } else { "" }
                    ));
                }
            }
        }
        if out.len() > MAX_RENDERED {
            out.push_str("[… earlier transcript cut]\n");
            break;
        }
    }
    out
}

/// What the harness keeps by itself: the goal, files touched, failures.
fn extract_facts(messages: &[Message]) -> String {
    let goal = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| &m.parts)
        .find_map(|p| match p {
            Part::Text(t) if !t.starts_with(SUMMARY_MARK) => Some(t.clone()),
            _ => None,
        });
    let mut files = BTreeSet::new();
    let mut failures = BTreeSet::new();
    let mut error_kinds = BTreeSet::new();
    for p in messages.iter().flat_map(|m| &m.parts) {
        match p {
            Part::ToolCall(c) => {
                if let Ok(v) = c.parse_arguments() {
                    for key in ["path", "from", "to"] {
                        if let Some(s) = v.get(key).and_then(|s| s.as_str()) {
                            files.insert(s.to_owned());
                        }
                    }
                }
            }
            Part::ToolResult(r) => {
                if r.is_error
                    && let Some(kind) = r
                        .content
                        .strip_prefix("error (")
                        .and_then(|s| s.split(')').next())
                {
                    error_kinds.insert(kind.to_owned());
                }
                for line in r.content.lines() {
                    let l = line.trim();
                    if (l.contains("FAILED") || l.contains("panicked at") || l.starts_with("error"))
                        && failures.len() < 20
                    {
                        failures.insert(l.chars().take(200).collect::<String>());
                    }
                }
            }
            Part::Text(t) => {
                // An earlier summary carries its facts forward, section by section.
                if let Some(rest) = t.strip_prefix(SUMMARY_MARK) {
                    let mut section = None;
                    for line in rest.lines() {
                        match line {
                            "Files touched:" => section = Some(0),
                            "Failures seen:" => section = Some(1),
                            "Error kinds:" => section = Some(2),
                            _ => {
                                let Some(item) = line.strip_prefix("- ") else {
                                    continue;
                                };
                                if item == "(none)" {
                                    continue;
                                }
                                match section {
                                    Some(0) => files.insert(item.to_owned()),
                                    Some(1) => failures.insert(item.to_owned()),
                                    Some(2) => error_kinds.insert(item.to_owned()),
                                    _ => false,
                                };
                            }
                        }
                    }
                }
            }
        }
    }
    let list = |set: &BTreeSet<String>| {
        if set.is_empty() {
            "- (none)\n".to_owned()
        } else {
            set.iter().map(|s| format!("- {s}\n")).collect()
        }
    };
    format!(
        "Facts kept by the harness:\nGoal: {}\nFiles touched:\n{}Failures seen:\n{}Error kinds:\n{}",
        goal.unwrap_or_else(|| "(see the user's messages)".into()),
        list(&files),
        list(&failures),
        list(&error_kinds),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_model::{ToolCall, ToolResult};

    fn call(id: &str, path: &str) -> Message {
        Message::assistant_calls(
            None,
            vec![ToolCall {
                id: id.into(),
                name: "read_file".into(),
                arguments: json!({"path": path}).to_string(),
            }],
        )
    }

    fn result(id: &str, text: &str) -> Message {
        Message::tool_results(vec![ToolResult {
            call_id: id.into(),
            content: text.into(),
            is_error: false,
        }])
    }

    #[test]
    fn masking_keeps_a_stub_and_the_text_re_readable() {
        let big = "line\n".repeat(200);
        let mut msgs = vec![
            Message::user("fix it"),
            call("c1", "a.rs"),
            result("c1", &big),
            call("c2", "b.rs"),
            result("c2", &big),
        ];
        let arts = Artifacts::default();
        assert_eq!(mask_old_outputs(&mut msgs, 2, 100, &arts), 1);
        let Part::ToolResult(r) = &msgs[2].parts[0] else {
            panic!()
        };
        assert!(
            r.content.starts_with(MASK_MARK) && r.content.contains("art-1"),
            "{}",
            r.content
        );
        assert_eq!(arts.get("art-1").as_deref(), Some(big.as_str()));
        let Part::ToolResult(r) = &msgs[4].parts[0] else {
            panic!()
        };
        assert_eq!(r.content, big);
        // Masking twice does not mask stubs.
        assert_eq!(mask_old_outputs(&mut msgs, 2, 10, &arts), 0);
    }

    #[tokio::test]
    async fn summary_keeps_user_messages_goal_and_failures_and_pairs() {
        let mut msgs = vec![
            Message::user("make test_parse pass; do not touch Cargo.toml"),
            call("c1", "src/parse.rs"),
            result(
                "c1",
                "test tests::test_parse ... FAILED\nthread panicked at src/parse.rs:3",
            ),
            Message::assistant("Looking."),
            Message::user("also keep the API"),
            call("c2", "src/lib.rs"),
            result("c2", "ok"),
        ];
        let folded = summarize(&mut msgs, 2, None, &CancellationToken::new()).await;
        assert_eq!(folded, 5);
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[0].role, Role::User);
        let text: Vec<String> = msgs[0]
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(text[0], "make test_parse pass; do not touch Cargo.toml");
        assert_eq!(text[1], "also keep the API");
        assert!(text[2].contains("Goal: make test_parse pass"));
        assert!(text[2].contains("test tests::test_parse ... FAILED"));
        assert!(text[2].contains("src/parse.rs"));
        // The kept tail starts with the call whose result follows it.
        assert!(matches!(msgs[1].parts[0], Part::ToolCall(_)));
    }
}
