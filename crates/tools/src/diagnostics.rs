//! `diagnostics`: syntax errors from tree-sitter plus what the editor's language
//! servers last reported.

use std::path::PathBuf;

use agentls_index::{Language, SyntaxErrorKind};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::paths::{display, resolve};
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Problems in a file (or in every open file).
#[derive(Debug, Clone, Copy, Default)]
pub struct Diagnostics;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiagnosticsArgs {
    #[serde(default)]
    path: Option<String>,
}

#[async_trait]
impl Tool for Diagnostics {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "diagnostics",
            description: "Problems in a file: syntax errors found by tree-sitter in its current text, plus the diagnostics (type errors, lints) the editor last reported for it. Without `path`, checks every file open in the editor. Cheap; run it after edits. Does not build the project: use run_command for that.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."}
                },
                "additionalProperties": false
            }),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let a: DiagnosticsArgs = parse_args("diagnostics", args)?;
        let paths: Vec<PathBuf> = match &a.path {
            Some(p) => vec![resolve(&ctx.root, p)?],
            None => ctx
                .store
                .snapshots()
                .iter()
                .filter_map(|s| s.uri.to_file_path())
                .filter(|p| p.starts_with(&ctx.root))
                .collect(),
        };
        if paths.is_empty() {
            return Ok(ToolOutput::text("no open files; pass a path"));
        }
        let mut out = String::new();
        let mut count = 0;
        for path in &paths {
            let shown = display(&ctx.root, path);
            let text = match crate::paths::read(ctx, path) {
                Ok(s) => s.rope.to_string(),
                Err(e) if a.path.is_some() => return Err(ToolError::environment(e.to_string())),
                Err(_) => continue,
            };
            if let Some(lang) = Language::from_path(path) {
                for e in agentls_index::syntax_errors(lang, &text) {
                    count += 1;
                    let kind = match e.kind {
                        SyntaxErrorKind::Error => "syntax error".to_owned(),
                        SyntaxErrorKind::Missing(what) => format!("missing `{what}`"),
                    };
                    out.push_str(&format!(
                        "{shown}:{}:{}: error: {kind}\n",
                        e.line + 1,
                        e.column + 1
                    ));
                }
            }
            if let Some(source) = &ctx.diagnostics {
                for (line, severity, message) in source.diagnostics(path) {
                    count += 1;
                    out.push_str(&format!("{shown}:{line}: {severity}: {message}\n"));
                }
            }
        }
        if count == 0 {
            out = format!(
                "no problems found in {} file{}",
                paths.len(),
                if paths.len() == 1 { "" } else { "s" }
            );
            if ctx.diagnostics.is_none() {
                out.push_str(" (syntax only: no editor diagnostics in this session)");
            }
        }
        Ok(ToolOutput::with_summary(
            out,
            format!("diagnostics: {count}"),
        ))
    }
}
