//! `diagnostics`: syntax errors from tree-sitter, plus, per file, the editor's
//! diagnostics when the editor has reported some for an open file (forwarded with
//! `agent/diagnostics` or seen in code action requests), else what the workspace's own
//! language servers, run as children, say of its current text.

use std::path::PathBuf;

use agentls_index::{Language, SyntaxErrorKind};
use agentls_model::PathKind;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::{display, resolve};
use crate::{CheckResult, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// Problems in a file (or in every open file).
#[derive(Debug, Clone, Copy, Default)]
pub struct Diagnostics;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiagnosticsArgs {
    /// File path relative to the workspace root.
    #[serde(default)]
    path: Option<String>,
}

#[async_trait]
impl Tool for Diagnostics {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "diagnostics",
            description: "Problems in a file, each line naming where it comes from: (1) syntax errors found by tree-sitter in its current text; (2) for a file open in the editor that the editor has reported problems on, the editor's diagnostics (its language servers, forwarded to agentls); otherwise (3) the workspace's own language servers (rust-analyzer, pyright or pylsp, gopls, typescript-language-server, clangd; those installed) run by agentls on the file's current text, waiting a bounded time. When none of these exists for a file, only syntax is checked, and the answer says so. Without `path`, checks every file open in the editor. Run it after edits. Does not build the project: use run_command for that.",
            parameters: crate::schema::cached!(DiagnosticsArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::File)]
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
        let mut checked_by = std::collections::BTreeSet::new();
        let mut no_server = Vec::new();
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
            let editor = open_in_editor(ctx, path)
                .then(|| ctx.diagnostics.as_ref().map(|d| d.diagnostics(path)))
                .flatten()
                .filter(|found| !found.is_empty());
            if let Some(found) = editor {
                for (line, severity, message) in found {
                    count += 1;
                    out.push_str(&format!("{shown}:{line}: {severity}: {message} (editor)\n"));
                }
                continue;
            }
            match ctx.checker.as_ref() {
                Some(checker) => match checker.check(path, &text).await {
                    CheckResult::NoServer => no_server.push(shown),
                    CheckResult::Problems {
                        server, problems, ..
                    } => {
                        checked_by.insert(server.clone());
                        for (line, severity, message) in problems {
                            count += 1;
                            out.push_str(&format!(
                                "{shown}:{line}: {severity}: {message} ({server})\n"
                            ));
                        }
                    }
                    CheckResult::Unavailable { server, why } => {
                        out.push_str(&format!("{shown}: {server} not consulted: {why}\n"));
                    }
                },
                None => no_server.push(shown),
            }
        }
        if count == 0 {
            out.insert_str(
                0,
                &format!(
                    "no problems found in {} file{}\n",
                    paths.len(),
                    if paths.len() == 1 { "" } else { "s" }
                ),
            );
        }
        if !checked_by.is_empty() {
            let names: Vec<String> = checked_by.into_iter().collect();
            out.push_str(&format!("checked by: {}\n", names.join(", ")));
        }
        if !no_server.is_empty() {
            out.push_str(&format!(
                "syntax only (no editor diagnostics and no language server) for: {}\n",
                no_server.join(", ")
            ));
        }
        Ok(ToolOutput::with_summary(
            out,
            format!("diagnostics: {count}"),
        ))
    }
}

/// Whether the editor has `path` open (its buffer is in the store).
fn open_in_editor(ctx: &ToolContext, path: &std::path::Path) -> bool {
    agentls_text::DocUri::from_file_path(path).is_some_and(|u| ctx.store.snapshot(&u).is_some())
}
