//! `navigate`: go to definition, find references, hover, outline, answered by the
//! workspace's language server for the file (type-aware), or by the symbol index (by
//! name) when none runs for it or it gives no answer. The answer says which.

use std::fmt::Write as _;

use agentls_model::PathKind;
use agentls_text::PositionEncoding;
use agentls_text::position::to_position;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::{display, read, resolve};
use crate::{NavAnswer, NavAsk, NavQuery, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Most places listed.
const MAX_PLACES: usize = 50;
/// Most hover text kept, in chars.
const MAX_HOVER: usize = 4000;

/// Definition, references, hover and outline through the language servers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Navigate;

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Action {
    Definition,
    References,
    Hover,
    Outline,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct NavigateArgs {
    /// What to ask.
    action: Action,
    /// File path relative to the workspace root.
    path: String,
    /// 1-based line where the symbol is written (not for outline).
    #[schemars(range(min = 1))]
    #[serde(default)]
    line: Option<usize>,
    /// The identifier on that line, as written (not for outline).
    #[serde(default)]
    symbol: Option<String>,
}

#[async_trait]
impl Tool for Navigate {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "navigate",
            description: "Ask the workspace's language server (type-aware; the symbol index, by name, when no server runs for the file) about code: `definition` (where the symbol is defined), `references` (every use, its definition included), `hover` (its type and documentation), `outline` (the file's classes, functions and methods with their lines). For definition, references and hover give `line` (1-based) and `symbol`, the identifier as written on that line; for outline only `path`. Returns `path:line: text` lines, or the hover text; says which source answered.",
            parameters: crate::schema::cached!(NavigateArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::File)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: NavigateArgs = crate::parse_args("navigate", args)?;
        let path = resolve(&ctx.root, &args.path)?;
        let shown = display(&ctx.root, &path);
        let source = read(ctx, &path).map_err(|e| {
            ToolError::environment(match &e {
                agentls_text::ReadError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    format!("{shown}: no such file; use find_files to find the right path")
                }
                _ => e.to_string(),
            })
        })?;
        let text = source.rope.to_string();
        let (ask, line0, character, symbol) = match args.action {
            Action::Outline => (NavAsk::Outline, 0, 0, String::new()),
            action => {
                let (Some(line), Some(symbol)) = (args.line, args.symbol) else {
                    return Err(ToolError::invalid_arguments(
                        "navigate: definition, references and hover need `line` (1-based) and `symbol` (the identifier on that line)",
                    ));
                };
                let (line0, character) = locate(&source.rope, line, &symbol, &shown)?;
                let ask = match action {
                    Action::Definition => NavAsk::Definition,
                    Action::References => NavAsk::References,
                    _ => NavAsk::Hover,
                };
                (ask, line0, character, symbol)
            }
        };
        let query = NavQuery {
            ask,
            line: line0,
            character,
        };
        let asked = match &ctx.checker {
            Some(checker) => checker.navigate(&path, &text, query).await,
            None => None,
        };
        let what = match ask {
            NavAsk::Definition => format!("definition of `{symbol}`"),
            NavAsk::References => format!("references to `{symbol}`"),
            NavAsk::Hover => format!("hover on `{symbol}`"),
            NavAsk::Outline => format!("outline of {shown}"),
        };
        let (from, answer) = match asked {
            Some(Ok((server, answer))) if !is_empty(&answer) => (server, answer),
            Some(Ok((server, _))) => (
                format!("the symbol index, by name: {server} knew nothing here"),
                from_index(ctx, &path, ask, &symbol)?,
            ),
            Some(Err(why)) => (
                format!("the symbol index, by name: {why}"),
                from_index(ctx, &path, ask, &symbol)?,
            ),
            None => (
                "the symbol index, by name: no language server for this file".to_owned(),
                from_index(ctx, &path, ask, &symbol)?,
            ),
        };
        let body = render(ctx, &answer);
        let count = match &answer {
            NavAnswer::Places(p) => format!("{} places", p.len()),
            NavAnswer::Outline(o) => format!("{} symbols", o.len()),
            NavAnswer::Hover(_) => "hover".to_owned(),
        };
        Ok(ToolOutput::with_summary(
            format!("{what} (from {from}):\n{body}"),
            format!("{what}: {count}"),
        ))
    }
}

/// The 0-based line and UTF-16 column of `symbol` on 1-based `line`: its first
/// occurrence as a whole word, else its first occurrence.
fn locate(
    rope: &ropey::Rope,
    line: usize,
    symbol: &str,
    shown: &str,
) -> Result<(u32, u32), ToolError> {
    let symbol = symbol.trim();
    let lines = rope.len_lines();
    if line == 0 || line > lines || symbol.is_empty() {
        return Err(ToolError::invalid_arguments(format!(
            "navigate: {shown} has {lines} lines; give a 1-based `line` in it and a non-empty `symbol`"
        )));
    }
    let text = rope.line(line - 1).to_string();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let whole = text.match_indices(symbol).find(|(i, _)| {
        let before = text[..*i].chars().next_back();
        let after = text[i + symbol.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    });
    let Some((byte, _)) = whole.or_else(|| text.match_indices(symbol).next()) else {
        return Err(ToolError::invalid_arguments(format!(
            "navigate: `{symbol}` is not on line {line} of {shown}, which reads: {}",
            text.trim_end()
        )));
    };
    let char_idx = rope.line_to_char(line - 1) + text[..byte].chars().count();
    let pos = to_position(rope, char_idx, PositionEncoding::Utf16);
    Ok((pos.line, pos.character))
}

fn is_empty(answer: &NavAnswer) -> bool {
    match answer {
        NavAnswer::Places(p) => p.is_empty(),
        NavAnswer::Hover(h) => h.trim().is_empty(),
        NavAnswer::Outline(o) => o.is_empty(),
    }
}

/// The index's answer: definitions and references by name, the file's outline; for a
/// hover, the definitions (their lines say the signature).
fn from_index(
    ctx: &ToolContext,
    path: &std::path::Path,
    ask: NavAsk,
    symbol: &str,
) -> Result<NavAnswer, ToolError> {
    let index = ctx
        .index
        .read()
        .map_err(|_| ToolError::bug("navigate: index lock poisoned"))?;
    Ok(match ask {
        NavAsk::Definition | NavAsk::Hover => NavAnswer::Places(
            index
                .definitions(symbol)
                .iter()
                .map(|d| (d.path.to_path_buf(), d.name_span.start.line + 1))
                .collect(),
        ),
        NavAsk::References => {
            let mut places: Vec<_> = index
                .definitions(symbol)
                .iter()
                .map(|d| (d.path.to_path_buf(), d.name_span.start.line + 1))
                .chain(
                    index
                        .references(symbol)
                        .iter()
                        .map(|r| (r.path.to_path_buf(), r.span.start.line + 1)),
                )
                .collect();
            places.sort();
            places.dedup();
            NavAnswer::Places(places)
        }
        NavAsk::Outline => {
            let mut out = Vec::new();
            fn walk(
                items: &[agentls_index::OutlineItem],
                depth: usize,
                out: &mut Vec<(String, String, u32, usize)>,
            ) {
                for i in items {
                    out.push((
                        i.name.to_string(),
                        i.kind.as_str().to_owned(),
                        i.name_span.start.line + 1,
                        depth,
                    ));
                    walk(&i.children, depth + 1, out);
                }
            }
            walk(&index.outline(path).unwrap_or_default(), 0, &mut out);
            NavAnswer::Outline(out)
        }
    })
}

/// The answer for the model: places with their line's text, the outline indented by
/// depth, the hover text.
fn render(ctx: &ToolContext, answer: &NavAnswer) -> String {
    let mut out = String::new();
    match answer {
        NavAnswer::Places(places) if places.is_empty() => out.push_str("(none found)\n"),
        NavAnswer::Places(places) => {
            for (path, line) in places.iter().take(MAX_PLACES) {
                let text = read(ctx, path)
                    .ok()
                    .and_then(|s| {
                        let l = usize::try_from(*line).ok()?.checked_sub(1)?;
                        (l < s.rope.len_lines()).then(|| s.rope.line(l).to_string())
                    })
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{}:{line}: {}",
                    display(&ctx.root, path),
                    text.trim().chars().take(200).collect::<String>()
                );
            }
            if places.len() > MAX_PLACES {
                let _ = writeln!(out, "[{} more]", places.len() - MAX_PLACES);
            }
        }
        NavAnswer::Hover(text) => {
            out.extend(text.chars().take(MAX_HOVER));
            out.push('\n');
        }
        NavAnswer::Outline(entries) if entries.is_empty() => out.push_str("(no symbols)\n"),
        NavAnswer::Outline(entries) => {
            for (name, kind, line, depth) in entries {
                let _ = writeln!(
                    out,
                    "{:indent$}{line} {kind} {name}",
                    "",
                    indent = depth * 2
                );
            }
        }
    }
    out
}
