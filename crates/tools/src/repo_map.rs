//! `repo_map`: the workspace's most relevant files and their definitions, ranked.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::{display, resolve};
use crate::util::blocking;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_TOKENS: usize = 1024;
/// Files of a `query`'s best hits focused on: a commit touches 1-4 files in the
/// retrieval sets, and `agentls bench search` finds 48-58% of them in the first five
/// files of the hybrid ranking (61-67% in ten), so a few bias the map without flooding it.
const QUERY_FILES: usize = 5;
/// Chunks searched for those files.
const QUERY_HITS: usize = 30;
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
    /// What you are looking for, in words: the files semantic search finds for it are
    /// focused on.
    #[serde(default)]
    query: Option<String>,
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
            description: "An outline of the repository's most important files (ranked by how much other code uses them) with their definitions and line numbers. Give files or names you are working on, or a query in words, to rank what relates to them first. Good for orientation in an unfamiliar codebase.",
            parameters: crate::schema::cached!(RepoMapArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: RepoMapArgs = parse_args("repo_map", args)?;
        let mut files = args
            .focus_files
            .iter()
            .map(|f| resolve(&ctx.root, f))
            .collect::<Result<Vec<_>, _>>()?;
        let query = args
            .query
            .as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_owned);
        let mut found = Vec::new();
        let mut ranked_how = "";
        if let Some(query) = query.clone() {
            let (semantic, index) = (ctx.semantic.clone(), ctx.index.clone());
            // Ranks from what the index holds now; embedding what is pending is left to
            // `semantic_search` and the server's background task.
            let answer =
                blocking(move || Ok(semantic.search(&index, &query, QUERY_HITS, None))).await?;
            // In the model's words: how to install a model is the user's business.
            ranked_how = if answer.vectors {
                "by words and meaning"
            } else {
                "by words"
            };
            found = answer.files(QUERY_FILES);
            files.extend(found.iter().map(|p| p.to_path_buf()));
        }
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
        drop(index);
        let files_shown = map.lines().filter(|l| !l.starts_with(' ')).count();
        let mut out = String::new();
        if let Some(query) = &query {
            // Said first, so the model knows why these files lead and how they were found;
            // the query on one line, its backticks dropped, so it cannot break the header.
            let query = query
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .replace('`', "'");
            if found.is_empty() {
                out.push_str(&format!(
                    "semantic search found no files for `{query}`; the map is not focused by it\n\n"
                ));
            } else {
                let names: Vec<String> = found.iter().map(|p| display(&ctx.root, p)).collect();
                out.push_str(&format!(
                    "focused on the files semantic search found for `{query}` (ranked {ranked_how}): {}\n\n",
                    names.join(", ")
                ));
            }
        }
        if map.is_empty() {
            out.push_str("the index holds no definitions yet (empty workspace, or not indexed)");
        } else {
            out.push_str(&map);
        }
        Ok(ToolOutput::with_summary(
            out,
            format!("repo map ({files_shown} files)"),
        ))
    }
}
