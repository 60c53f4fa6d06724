//! `list_dir`: a directory's entries, gitignore respected.

use agentls_model::PathKind;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::{display, resolve};
use crate::util::blocking;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const MAX_ENTRIES: usize = 1000;
const MAX_DEPTH: usize = 5;

/// Lists a directory, optionally a few levels deep.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListDir;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListDirArgs {
    /// Directory relative to the workspace root; default `.`.
    #[serde(default)]
    path: Option<String>,
    /// How many levels to list.
    #[schemars(range(min = 1, max = MAX_DEPTH))]
    #[serde(default)]
    depth: Option<usize>,
}

#[async_trait]
impl Tool for ListDir {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_dir",
            description: "List a directory of the workspace (default: the root). Directories end with `/`. Files ignored by .gitignore and the .git directory are left out. `depth` (default 1, at most 5) lists nested directories too, indented.",
            parameters: crate::schema::cached!(ListDirArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("path", PathKind::Dir)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: ListDirArgs = parse_args("list_dir", args)?;
        let dir = resolve(&ctx.root, args.path.as_deref().unwrap_or("."))?;
        let shown = display(&ctx.root, &dir);
        if !dir.is_dir() {
            return Err(ToolError::environment(if dir.exists() {
                format!("{shown}: not a directory; use read_file to read a file")
            } else {
                format!("{shown}: no such directory")
            }));
        }
        let depth = args.depth.unwrap_or(1).clamp(1, MAX_DEPTH);
        let root = ctx.root.clone();
        blocking(move || {
            let mut entries = Vec::new();
            let walk = ignore::WalkBuilder::new(&dir)
                .max_depth(Some(depth))
                .hidden(false)
                .require_git(false)
                .filter_entry(|e| e.file_name() != ".git")
                .sort_by_file_path(|a, b| a.cmp(b))
                .build();
            let mut truncated = false;
            for e in walk.flatten() {
                if e.depth() == 0 {
                    continue;
                }
                if entries.len() >= MAX_ENTRIES {
                    truncated = true;
                    break;
                }
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                let name = e.file_name().to_string_lossy();
                let indent = "  ".repeat(e.depth() - 1);
                entries.push(format!("{indent}{name}{}", if is_dir { "/" } else { "" }));
            }
            let mut out = format!("{}/\n", display(&root, &dir));
            for e in &entries {
                out.push_str(e);
                out.push('\n');
            }
            if entries.is_empty() {
                out.push_str("(empty)\n");
            }
            if truncated {
                out.push_str(&format!(
                    "[stopped at {MAX_ENTRIES} entries; list a subdirectory or lower depth]\n"
                ));
            }
            Ok(ToolOutput::with_summary(
                out,
                format!(
                    "listed {} ({} entries)",
                    display(&root, &dir),
                    entries.len()
                ),
            ))
        })
        .await
    }
}
