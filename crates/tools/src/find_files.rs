//! `find_files`: paths matching a glob, gitignore respected.

use agentls_model::PathKind;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::{display, resolve};
use crate::util::blocking;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_MAX: usize = 200;

/// Finds files by glob.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindFiles;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct FindFilesArgs {
    /// A glob over paths relative to the workspace root: `*` matches within a directory, `**` across directories.
    #[serde(alias = "glob")]
    pattern: String,
    /// Directory to search, relative to the root; default `.`.
    #[serde(default)]
    path: Option<String>,
    /// Default 200.
    #[schemars(range(min = 1))]
    #[serde(default)]
    max_results: Option<usize>,
}

#[async_trait]
impl Tool for FindFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "find_files",
            description: "Find files by glob pattern, gitignore rules respected. A pattern without `/` matches file names at any depth (`*.rs`, `Cargo.toml`); with `/` it matches paths relative to the search directory (`src/**/*.rs`). Returns sorted paths relative to the workspace root.",
            parameters: crate::schema::cached!(FindFilesArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::Dir)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: FindFilesArgs = parse_args("find_files", args)?;
        let dir = resolve(&ctx.root, args.path.as_deref().unwrap_or("."))?;
        if !dir.is_dir() {
            return Err(ToolError::environment(format!(
                "{}: no such directory",
                display(&ctx.root, &dir)
            )));
        }
        let max = args.max_results.unwrap_or(DEFAULT_MAX).max(1);
        let root = ctx.root.clone();
        let pattern = args.pattern;
        blocking(move || {
            let mut ob = ignore::overrides::OverrideBuilder::new(&dir);
            ob.add(&pattern).map_err(|e| {
                ToolError::invalid_arguments(format!("find_files: bad glob `{pattern}`: {e}"))
            })?;
            let overrides = ob.build().map_err(|e| {
                ToolError::invalid_arguments(format!("find_files: bad glob `{pattern}`: {e}"))
            })?;
            let walk = ignore::WalkBuilder::new(&dir)
                .hidden(false)
                .require_git(false)
                .filter_entry(|e| e.file_name() != ".git")
                .overrides(overrides)
                .build();
            let mut found: Vec<String> = walk
                .flatten()
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
                .map(|e| display(&root, e.path()))
                .collect();
            found.sort();
            let total = found.len();
            found.truncate(max);
            let mut out = found.join("\n");
            if total == 0 {
                out = format!("no files match `{pattern}`");
            } else if total > max {
                out.push_str(&format!(
                    "\n[{total} files match; showing {max}. Narrow the pattern or the path]"
                ));
            }
            Ok(ToolOutput::with_summary(
                out,
                format!("find_files {pattern}: {total} files"),
            ))
        })
        .await
    }
}
