//! `repo_map`: the workspace's most relevant files and their definitions, ranked.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::resolve;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_TOKENS: usize = 1024;
const MAX_TOKENS: usize = 8192;

/// A ranked outline of the repository.
#[derive(Debug, Clone, Copy, Default)]
pub struct RepoMap;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RepoMapArgs {
    /// Paths relative to the root.
    #[serde(default)]
    focus_files: Vec<String>,
    /// Identifiers of interest.
    #[serde(default)]
    focus_names: Vec<String>,
    /// Size of the map; default 1024.
    #[schemars(range(min = 64, max = 8192))]
    #[serde(default)]
    max_tokens: Option<usize>,
}

#[async_trait]
impl Tool for RepoMap {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "repo_map",
            description: "An outline of the repository's most important files (ranked by how much other code uses them) with their definitions and line numbers. Give files or names you are working on to rank what relates to them first. Good for orientation in an unfamiliar codebase.",
            parameters: crate::schema::cached!(RepoMapArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: RepoMapArgs = parse_args("repo_map", args)?;
        let files = args
            .focus_files
            .iter()
            .map(|f| resolve(&ctx.root, f))
            .collect::<Result<Vec<_>, _>>()?;
        let file_refs: Vec<&std::path::Path> = files.iter().map(|p| p.as_path()).collect();
        let name_refs: Vec<&str> = args.focus_names.iter().map(String::as_str).collect();
        let tokens = args
            .max_tokens
            .unwrap_or(DEFAULT_TOKENS)
            .clamp(64, MAX_TOKENS);
        let index = ctx
            .index
            .read()
            .map_err(|_| ToolError::bug("repo_map: index lock poisoned"))?;
        let map = index.repo_map(&file_refs, &name_refs, tokens);
        let files_shown = map.lines().filter(|l| !l.starts_with(' ')).count();
        let map = if map.is_empty() {
            "the index holds no definitions yet (empty workspace, or not indexed)".to_owned()
        } else {
            map
        };
        Ok(ToolOutput::with_summary(
            map,
            format!("repo map ({files_shown} files)"),
        ))
    }
}
