//! `grep`: regex or literal search over the workspace, open buffers included.

use agentls_model::PathKind;
use agentls_search::{CaseMode, GrepError, GrepOptions, Overlay};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::{display, resolve};
use crate::util::{blocking, clip};
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_MAX: usize = 100;
const MAX_CONTEXT: usize = 10;

/// Searches file contents.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// Regular expression (or text with `literal`).
    pattern: String,
    /// Directory to search, relative to the root; default `.`.
    #[serde(default)]
    path: Option<String>,
    /// Only files whose path matches this glob.
    #[serde(default, alias = "glob")]
    include: Option<String>,
    /// Treat the pattern as plain text.
    #[serde(default)]
    literal: bool,
    /// Ignore case.
    #[serde(default)]
    case_insensitive: bool,
    /// Match whole words only.
    #[serde(default)]
    word: bool,
    /// Lines of context before and after each match.
    #[schemars(range(max = MAX_CONTEXT))]
    #[serde(default)]
    context: Option<usize>,
    /// Default 100.
    #[schemars(range(min = 1))]
    #[serde(default)]
    max_results: Option<usize>,
}

#[async_trait]
impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep",
            description: "Search file contents with a regular expression (Rust regex syntax; set `literal` for plain text), like ripgrep: gitignore respected, binary files skipped, unsaved editor buffers searched instead of their files. Returns `path:line: text` per match, sorted, with optional context lines (`path-line- text`).",
            parameters: crate::schema::cached!(GrepArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::Entry)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: GrepArgs = parse_args("grep", args)?;
        if args.pattern.is_empty() {
            return Err(ToolError::invalid_arguments("grep: empty pattern"));
        }
        let dir = resolve(&ctx.root, args.path.as_deref().unwrap_or("."))?;
        if !dir.exists() {
            return Err(ToolError::environment(format!(
                "{}: no such directory",
                display(&ctx.root, &dir)
            )));
        }
        let max = args.max_results.unwrap_or(DEFAULT_MAX).max(1);
        let mut opts = GrepOptions::new(args.pattern.clone());
        opts.literal = args.literal;
        opts.word = args.word;
        opts.case = if args.case_insensitive {
            CaseMode::Insensitive
        } else {
            CaseMode::Sensitive
        };
        opts.include = args.include.into_iter().collect();
        let context = args.context.unwrap_or(0).min(MAX_CONTEXT);
        opts.before_context = context;
        opts.after_context = context;
        opts.max_results = Some(max);
        let root = ctx.root.clone();
        let store = ctx.store.clone();
        let pattern = args.pattern;
        blocking(move || {
            let overlay = Overlay::from_store(&store);
            let found = agentls_search::grep(&dir, &opts, &overlay).map_err(|e| match e {
                GrepError::Pattern(m) => ToolError::invalid_arguments(format!(
                    "grep: invalid regex: {m}; escape special characters or set literal: true"
                )),
                other => ToolError::invalid_arguments(format!("grep: {other}")),
            })?;
            let mut out = String::new();
            for m in &found.matches {
                let p = display(&root, &m.path);
                for c in &m.before {
                    out.push_str(&format!("{p}-{}- {}\n", c.line + 1, clip(&c.text, 300)));
                }
                out.push_str(&format!(
                    "{p}:{}: {}\n",
                    m.line + 1,
                    clip(m.text.trim_end_matches(['\n', '\r']), 300)
                ));
                for c in &m.after {
                    out.push_str(&format!("{p}-{}- {}\n", c.line + 1, clip(&c.text, 300)));
                }
                if context > 0 {
                    out.push_str("--\n");
                }
            }
            let n = found.matches.len();
            if n == 0 {
                out = format!(
                    "no matches for `{pattern}` ({} files searched)",
                    found.files_searched
                );
            } else if found.truncated {
                out.push_str(&format!(
                    "[stopped at {max} matches; narrow the pattern, path or include glob]\n"
                ));
            }
            Ok(ToolOutput::with_summary(
                out,
                format!("grep {pattern}: {n} matches"),
            ))
        })
        .await
    }
}
