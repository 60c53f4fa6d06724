//! `textDocument/codeAction`: the agent's entry points where the user is, answered from
//! the buffer and the index alone (no model call, no disk walk).
//!
//! - "Agent: fix this" for each diagnostic in the request's context;
//! - "Agent: <instruction>" on a line with an `agent:` comment;
//! - "Agent: implement this" on a selection, or in a function whose body is a stub
//!   (found on the syntax tree: `agentls_index::stub`);
//! - "Agent: explain" and "Agent: write tests for …";
//! - "Agent: accept change" / "Agent: reject change" on changes landed for review, and
//!   for all of a session's changes (clients without code lenses, such as Helix);
//! - "Apply next edit: …" when the user's last edit implies others (next-edit
//!   suggestions, [`super::next_edit::code_action`]).

use agentls_index::{OutlineItem, SymbolKind};
use agentls_protocol::agent::{Position, Range};
use agentls_protocol::commands::{self, SessionArgs, TaskArgs};
use ropey::Rope;
use serde_json::Value;
use tower_lsp::lsp_types as lsp;

use crate::convert::from_lsp;
use crate::indexing::Reads;
use crate::state::State;

/// Longest instruction shown in a title (chars).
const MAX_TITLE: usize = 60;

/// The code actions for `params`.
pub fn code_actions(state: &State, params: lsp::CodeActionParams) -> Vec<lsp::CodeActionOrCommand> {
    let uri = from_lsp::uri(&params.text_document.uri);
    let Some(snapshot) = state.store.snapshot(&uri) else {
        return Vec::new();
    };
    let path = uri.to_file_path();
    let rope = &snapshot.rope;
    let lsp_uri = params.text_document.uri.to_string();
    let version = Some(snapshot.version);
    let first = params.range.start.line;
    let mut last = params.range.end.line;
    if last > first && params.range.end.character == 0 {
        last -= 1;
    }
    // Helix's cursor is a one-character selection: that is a place, not a selection.
    let selection = params.range.start != params.range.end
        && !(params.range.start.line == params.range.end.line
            && params.range.end.character <= params.range.start.character + 1);
    let task = |instruction: String, range: Range| TaskArgs {
        uri: Some(lsp_uri.clone()),
        range: Some(range),
        version,
        instruction,
        model: None,
    };
    let mut out = Actions::new(params.context.only.as_deref());
    if let Some(action) = super::next_edit::code_action(state, &params.text_document.uri)
        && action.kind.as_ref().is_some_and(|k| out.wanted(k))
    {
        out.actions
            .push(lsp::CodeActionOrCommand::CodeAction(action));
    }

    if let Some(path) = &path {
        let found = shown_diagnostics(&params.context.diagnostics);
        state.diagnostics.record(path, (first, last), found);
    }
    for d in &params.context.diagnostics {
        let mut instruction = d.message.clone();
        if let Some(source) = &d.source {
            instruction = format!("{instruction} ({source})");
        }
        out.push(
            format!("Agent: fix this: {}", cut(&d.message)),
            lsp::CodeActionKind::QUICKFIX,
            commands::FIX,
            &task(instruction, protocol_range(d.range)),
            vec![d.clone()],
        );
    }

    let line_text = line(rope, first);
    if let Some(instruction) = agent_comment(&line_text) {
        out.push(
            format!("Agent: {}", cut(&instruction)),
            lsp::CodeActionKind::REFACTOR_REWRITE,
            commands::IMPLEMENT,
            &task(instruction, lines_range(rope, first, first)),
            vec![],
        );
    }

    // The index as of this request: a stub opened just before it is in its outline.
    let definition = path
        .as_deref()
        .and_then(|p| crate::indexing::caught_up(state, Reads::One(&uri)).outline(p))
        .and_then(|outline| innermost(&outline, first).cloned());
    if selection {
        out.push(
            "Agent: implement this".to_owned(),
            lsp::CodeActionKind::REFACTOR_REWRITE,
            commands::IMPLEMENT,
            &task(String::new(), protocol_range(params.range)),
            vec![],
        );
    } else if let Some(def) = &definition
        && is_callable(def.kind)
        && let Some(lang) = path.as_deref().and_then(agentls_index::Language::from_path)
        && agentls_index::stub::is_stub(lang, &rope.to_string(), def.name_span.start)
    {
        out.push(
            format!("Agent: implement `{}`", def.name),
            lsp::CodeActionKind::REFACTOR_REWRITE,
            commands::IMPLEMENT,
            &task(
                format!("Implement `{}`.", def.name),
                lines_range(rope, def.span.start.line, def.span.end.line),
            ),
            vec![],
        );
    }

    let (explain_range, what) = match (&definition, selection) {
        (_, true) => (protocol_range(params.range), "this".to_owned()),
        (Some(def), false) => (
            lines_range(rope, def.span.start.line, def.span.end.line),
            format!("`{}`", def.name),
        ),
        (None, false) => (lines_range(rope, first, last), "this".to_owned()),
    };
    out.push(
        format!("Agent: explain {what}"),
        lsp::CodeActionKind::EMPTY,
        commands::EXPLAIN,
        &task(String::new(), explain_range),
        vec![],
    );
    if let Some(def) = &definition {
        out.push(
            format!("Agent: write tests for `{}`", def.name),
            lsp::CodeActionKind::EMPTY,
            commands::WRITE_TESTS,
            &task(
                String::new(),
                lines_range(rope, def.span.start.line, def.span.end.line),
            ),
            vec![],
        );
    }

    // A question of the user's own, where the editor has no free text: the server asks
    // which one (window/showMessageRequest) when the command runs.
    out.push(
        "Agent: ask…".to_owned(),
        lsp::CodeActionKind::EMPTY,
        commands::ASK,
        &task(String::new(), explain_range),
        vec![],
    );
    if let Some(path) = &path {
        review_actions(state, path, rope, (first as usize, last as usize), &mut out);
    }
    cancel_actions(state, &mut out);
    out.actions
}

/// The diagnostics the client showed with the request, as the agent reads them: line
/// (1-based), severity and message.
fn shown_diagnostics(diagnostics: &[lsp::Diagnostic]) -> Vec<(usize, String, String)> {
    diagnostics
        .iter()
        .map(|d| {
            let severity = match d.severity {
                Some(lsp::DiagnosticSeverity::ERROR) => "error",
                Some(lsp::DiagnosticSeverity::WARNING) => "warning",
                Some(lsp::DiagnosticSeverity::INFORMATION) => "info",
                _ => "hint",
            };
            (
                d.range.start.line as usize + 1,
                severity.to_owned(),
                d.message.clone(),
            )
        })
        .collect()
}

/// While a run goes on, a way to stop it from the same menu.
fn cancel_actions(state: &State, out: &mut Actions) {
    for entry in state.sessions.all() {
        if entry.status() == agentls_protocol::agent::SessionStatus::Running {
            let title = entry.info().title;
            out.push_args(
                format!("Agent: cancel `{}`", cut(&title)),
                commands::CANCEL,
                &SessionArgs {
                    session: Some(entry.id.clone()),
                    change: None,
                },
            );
        }
    }
}

fn review_actions(
    state: &State,
    path: &std::path::Path,
    rope: &Rope,
    lines: (usize, usize),
    out: &mut Actions<'_>,
) {
    for entry in state.sessions.all() {
        let pending = entry.pending().clone();
        let in_file: Vec<_> = pending.iter().filter(|c| c.path == path).collect();
        if in_file.is_empty() {
            continue;
        }
        for change in &in_file {
            let Some((a, b)) = change.current_lines(rope) else {
                continue;
            };
            if a > lines.1 || b < lines.0 {
                continue;
            }
            let args = SessionArgs {
                session: Some(entry.id.clone()),
                change: Some(change.id),
            };
            let at = format!("lines {}-{}", a + 1, b + 1);
            out.push_args(
                format!("Agent: accept change ({at})"),
                commands::ACCEPT,
                &args,
            );
            out.push_args(
                format!("Agent: reject change ({at})"),
                commands::REJECT,
                &args,
            );
        }
        let all = SessionArgs {
            session: Some(entry.id.clone()),
            change: None,
        };
        let n = pending.len();
        out.push_args(
            format!("Agent: accept all {n} change(s) of the session"),
            commands::ACCEPT,
            &all,
        );
        out.push_args(
            format!("Agent: reject all {n} change(s) of the session"),
            commands::REJECT,
            &all,
        );
    }
}

/// The actions collected, filtered by the request's `only` kinds.
struct Actions<'a> {
    only: Option<&'a [lsp::CodeActionKind]>,
    actions: Vec<lsp::CodeActionOrCommand>,
}

impl<'a> Actions<'a> {
    fn new(only: Option<&'a [lsp::CodeActionKind]>) -> Self {
        Self {
            only,
            actions: Vec::new(),
        }
    }

    fn wanted(&self, kind: &lsp::CodeActionKind) -> bool {
        match self.only {
            None => true,
            Some(only) => only.iter().any(|o| {
                kind.as_str() == o.as_str()
                    || kind.as_str().starts_with(&format!("{}.", o.as_str()))
            }),
        }
    }

    fn push(
        &mut self,
        title: String,
        kind: lsp::CodeActionKind,
        command: &str,
        args: &TaskArgs,
        diagnostics: Vec<lsp::Diagnostic>,
    ) {
        let args = serde_json::to_value(args).unwrap_or(Value::Null);
        self.add(title, kind, command, args, diagnostics);
    }

    fn push_args(&mut self, title: String, command: &str, args: &SessionArgs) {
        let args = serde_json::to_value(args).unwrap_or(Value::Null);
        self.add(title, lsp::CodeActionKind::EMPTY, command, args, vec![]);
    }

    fn add(
        &mut self,
        title: String,
        kind: lsp::CodeActionKind,
        command: &str,
        args: Value,
        diagnostics: Vec<lsp::Diagnostic>,
    ) {
        // An empty kind is the "other" kind: shown unless the client filters by kind.
        if !self.wanted(&kind) {
            return;
        }
        self.actions
            .push(lsp::CodeActionOrCommand::CodeAction(lsp::CodeAction {
                title: title.clone(),
                kind: (!kind.as_str().is_empty()).then_some(kind),
                diagnostics: (!diagnostics.is_empty()).then_some(diagnostics),
                command: Some(lsp::Command {
                    title,
                    command: command.to_owned(),
                    arguments: Some(vec![args]),
                }),
                ..Default::default()
            }));
    }
}

fn cut(s: &str) -> String {
    let s = s.lines().next().unwrap_or("").trim();
    if s.chars().count() <= MAX_TITLE {
        return s.to_owned();
    }
    format!("{}…", s.chars().take(MAX_TITLE).collect::<String>())
}

fn protocol_range(r: lsp::Range) -> Range {
    Range {
        start: Position {
            line: r.start.line,
            character: r.start.character,
        },
        end: Position {
            line: r.end.line,
            character: r.end.character,
        },
    }
}

/// Whole lines `first..=last` as a range: to the start of the line after (our own
/// commands read only the lines).
fn lines_range(_rope: &Rope, first: u32, last: u32) -> Range {
    Range {
        start: Position {
            line: first,
            character: 0,
        },
        end: Position {
            line: last + 1,
            character: 0,
        },
    }
}

fn line(rope: &Rope, line: u32) -> String {
    let line = line as usize;
    if line >= rope.len_lines() {
        return String::new();
    }
    rope.line(line)
        .to_string()
        .trim_end_matches(['\n', '\r'])
        .to_owned()
}

/// The innermost definition whose lines hold `line`.
fn innermost(items: &[OutlineItem], line: u32) -> Option<&OutlineItem> {
    let item = items
        .iter()
        .find(|i| i.span.start.line <= line && line <= i.span.end.line)?;
    innermost(&item.children, line).or(Some(item))
}

fn is_callable(kind: SymbolKind) -> bool {
    matches!(kind, SymbolKind::Function | SymbolKind::Method)
}

/// The instruction of an `agent:` comment on this line, if it has one.
pub fn agent_comment(line: &str) -> Option<String> {
    let lower = line.to_lowercase();
    let at = lower.find("agent:")?;
    let before = line[..at].trim_end();
    let is_comment = ["//", "#", "--", "/*", "<!--", ";", "*"]
        .iter()
        .any(|m| before.ends_with(m) || before.contains(m));
    if !is_comment {
        return None;
    }
    let text = line[at + "agent:".len()..]
        .trim()
        .trim_end_matches("*/")
        .trim_end_matches("-->")
        .trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_comments_in_several_languages() {
        assert_eq!(
            agent_comment("    // agent: add a cache").as_deref(),
            Some("add a cache")
        );
        assert_eq!(
            agent_comment("x = 1  # Agent: handle None").as_deref(),
            Some("handle None")
        );
        assert_eq!(
            agent_comment("/* agent: sort it */").as_deref(),
            Some("sort it")
        );
        assert_eq!(agent_comment("let agent: Agent = a;"), None);
        assert_eq!(agent_comment("// agent:"), None);
    }
}
