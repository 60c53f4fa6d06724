//! `semantic_search`: code found by what it does, not by its exact words.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::paths::display;
use crate::util::blocking;
use crate::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_K: usize = 10;
const MAX_K: usize = 50;

/// Longest a call spends embedding what is pending before it searches.
const EMBED_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);
/// Chunks per embedding call.
const EMBED_BATCH: usize = 64;
/// Chunks per call of a better model waiting to take over (about 50 ms each for the
/// whole MiniLM on two cores).
const SUCCESSOR_BATCH: usize = 16;

/// Lines of each hit shown.
const SNIPPET_LINES: usize = 6;

/// Finds code by meaning.
#[derive(Debug, Clone, Copy, Default)]
pub struct SemanticSearch;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SemanticSearchArgs {
    /// What the code does, in words.
    query: String,
    /// Only files whose path relative to the root matches this glob.
    #[serde(default)]
    path: Option<String>,
    /// How many results; default 10.
    #[schemars(range(min = 1, max = 50))]
    #[serde(default)]
    k: Option<usize>,
}

#[async_trait]
impl Tool for SemanticSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "semantic_search",
            description: "Find code by what it does when you do not know its names: a question or description in plain words. Ranks functions, classes and other pieces of the workspace by matching words in identifiers and comments and, when an embedding model is installed, by meaning. Returns `path:lines name` with the first lines of each. For an exact name or text, `symbols` and `grep` are faster and complete.",
            parameters: crate::schema::cached!(SemanticSearchArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        false
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: SemanticSearchArgs = parse_args("semantic_search", args)?;
        let query = args.query.trim().to_owned();
        if query.is_empty() {
            return Err(ToolError::invalid_arguments("semantic_search: empty query"));
        }
        let k = args.k.unwrap_or(DEFAULT_K).clamp(1, MAX_K);
        let filter = match &args.path {
            Some(glob) => Some(
                agentls_semantic::PathGlob::new(&ctx.root, glob).map_err(|e| {
                    ToolError::invalid_arguments(format!("semantic_search: bad glob `{glob}`: {e}"))
                })?,
            ),
            None => None,
        };
        let semantic = ctx.semantic.clone();
        let index = ctx.index.clone();
        let root = ctx.root.clone();
        blocking(move || {
            let accept = |p: &std::path::Path| filter.as_ref().is_none_or(|g| g.matches(p));
            // What is not embedded yet gets a vector now, within a bound: a headless
            // session has no background task doing it, and the server's first build
            // gets a hand.
            semantic.sync(&index);
            let started = std::time::Instant::now();
            let embedded = semantic.embed_some(EMBED_BUDGET, EMBED_BATCH);
            // New vectors are kept for the next session or start, where a store is set
            // (headless sessions and the server alike; each save is whole on its own).
            if embedded > 0
                && let Some(Err(e)) = semantic.persist()
            {
                tracing::warn!("storing semantic vectors: {e}");
            }
            // A better model waiting to take over is moved on, in what is left of the
            // bound, once the first has every chunk: its vectors are kept as it goes.
            // Not in the server, whose own task moves it below the editor's priority.
            let left = EMBED_BUDGET.saturating_sub(started.elapsed());
            let stats = semantic.stats();
            let succession = if stats.embedded >= stats.chunks
                && !left.is_zero()
                && semantic.successor_moved_by_searches()
            {
                semantic.embed_successor_some(left, SUCCESSOR_BATCH)
            } else {
                agentls_semantic::Succession::default()
            };
            // Taken over: the store is the better model's now.
            for stored in [
                succession.took_over.then(|| semantic.persist()).flatten(),
                semantic.persist_successor(),
            ] {
                if let Some(Err(e)) = stored {
                    tracing::warn!("storing semantic vectors: {e}");
                }
            }
            let answer = semantic.search(&index, &query, k, Some(&accept));
            let (hits, stats, how) = (&answer.hits, answer.stats, answer.ranking());
            let mut out = format!(
                "{} results for `{query}` among {} chunks of {} files, ranked {how}\n",
                hits.len(),
                stats.chunks,
                stats.files
            );
            for h in hits {
                let c = &h.chunk;
                let name = match (&c.symbol, c.kind) {
                    (Some(s), Some(kind)) => format!(" {s} ({})", kind.as_str()),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "\n{}:{}-{}{name}\n",
                    display(&root, &c.path),
                    c.start_line + 1,
                    c.end_line + 1
                ));
                let lines: Vec<&str> = c.text.lines().collect();
                for l in lines.iter().take(SNIPPET_LINES) {
                    out.push_str("    ");
                    out.push_str(l);
                    out.push('\n');
                }
                if lines.len() > SNIPPET_LINES {
                    out.push_str(&format!(
                        "    [{} more lines]\n",
                        lines.len() - SNIPPET_LINES
                    ));
                }
            }
            if hits.is_empty() {
                out.push_str("nothing matched; try other words, `grep` or `find_files`\n");
            }
            let summary = format!("semantic_search {query}: {} results", hits.len());
            Ok(ToolOutput::with_summary(out, summary))
        })
        .await
    }
}
