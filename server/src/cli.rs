//! Command-line interface: `agentls [serve]`, `agentls doctor`, …

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use agentls_eval::args::{EvalArgs, ReplayArgs};

/// A language server that gives any LSP editor a coding agent.
///
/// With no subcommand, agentls serves LSP over stdio, which is what editors run.
#[derive(Debug, Parser)]
#[command(name = "agentls", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Options of `serve`, accepted without the subcommand too (editors run `agentls`
    /// or `agentls --stdio`).
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Language Server Protocol over stdio (the default).
    Serve(ServeArgs),
    /// Print what this machine offers: version, configuration found and merged, features.
    Doctor(DoctorArgs),
    /// Run a benchmark and print it beside its reference, measured in the same run.
    Bench(BenchArgs),
    /// Apply an `apply_patch` patch (`*** Begin Patch` … `*** End Patch`) to files on
    /// disk, through the agent's edit engine. Nothing is written if any hunk fails.
    ApplyPatch(ApplyPatchArgs),
    /// Apply an edit in another format (search/replace blocks, str_replace JSON, …) to
    /// files on disk, through the agent's edit engine. Nothing is written on failure.
    Edit(EditArgs),
    /// Run one agent session on a task, headless, to completion: edits land on disk,
    /// progress and a final summary with metrics are printed.
    Run(RunArgs),
    /// Serve the Agent Client Protocol (ACP, v1) over stdio: the agent for editors that
    /// speak it (Zed, JetBrains IDEs, CodeCompanion, agent-shell, …).
    Acp(AcpArgs),
    /// Serve the workspace's tools (read, grep, symbols, repo map, validated edits, the
    /// sandboxed command runner) to other agents over MCP on stdio.
    Mcp(McpArgs),
    /// Run the agent on a suite of tasks (`fixtures/tasks`), check each, print pass@1 and
    /// pass@k; `--verify-tasks` checks the suite itself.
    Eval(EvalArgs),
    /// What the agent's runs measured (times, tokens, tool calls and errors, edits), per
    /// model, from the stats database every run is recorded in.
    Stats(StatsArgs),
    /// The embedded local model: fetch one, list them (needs the `local` feature; the
    /// embedding model `all-minilm-l6-v2` does not).
    Model(ModelArgs),
    /// Offline demo: fetch the default local model if absent and let it finish a
    /// small task in a copy of a sample workspace (needs the `local` feature).
    Demo(DemoArgs),
    /// Re-run a trajectory's tool calls against a workspace (edits land on disk) and
    /// report whether each call ended as recorded.
    Replay(ReplayArgs),
}

/// Options of `agentls model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: ModelAction,
}

/// `agentls model` actions.
#[derive(Debug, Subcommand)]
pub enum ModelAction {
    /// Download a model of the catalog into the data directory (checks size and sha256);
    /// `all-minilm-l6-v2` is semantic search's embedding model (any build).
    Fetch {
        /// Catalog name, e.g. `smollm2-135m`; the default model when absent.
        name: Option<String>,
    },
    /// The catalog, and which models are on disk.
    List,
}

/// Options of `agentls demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Catalog model to run; the demo's default when absent.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// A GGUF file to run instead of a catalog model.
    #[arg(long, value_name = "FILE")]
    pub path: Option<PathBuf>,
    /// Keep the workspace copy here instead of a temporary directory.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The seed of the pipeline's sampled candidates (the first is greedy).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// Options of `agentls stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Only runs since then: `24h`, `7d`, `30m` ago, or a date `2026-11-01` (UTC).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only this model's runs.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// The stats database (default: `[stats] path`, else the user data directory's
    /// `agentls/stats.sqlite3`).
    #[arg(long, value_name = "FILE")]
    pub stats_db: Option<PathBuf>,
    /// The config file to read `[stats]` from (default: the user config file).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Options of `agentls run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Record the run in this stats database (default: `[stats]`, else the user data
    /// directory's `agentls/stats.sqlite3`).
    #[arg(long, value_name = "FILE")]
    pub stats_db: Option<PathBuf>,
    /// The workspace the agent works in: the current directory, or with `--resume` the
    /// saved session's.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A model from the `[models]` table, or `auto`; the first configured when absent.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// `agent` (edit and run), `ask` (read-only) or `plan` (read-only, answer a plan).
    #[arg(long, default_value = "agent")]
    pub mode: String,
    /// Print events as JSON lines.
    #[arg(long)]
    pub json: bool,
    /// Do not run the project's check (its detected test command) when the model ends
    /// after edits it did not check.
    #[arg(long)]
    pub no_final_check: bool,
    /// Read `[models]` from this TOML file instead of the user config file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write the trajectory here instead of the user data directory.
    #[arg(long, value_name = "DIR")]
    pub trajectory_dir: Option<PathBuf>,
    /// Write logs to this file instead of stderr (level from `AGENTLS_LOG`).
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
    /// Commands the policy marks `ask`: `never` refuses them, `ask` prompts on the
    /// terminal, `always` allows them (forbidden commands stay forbidden). Default:
    /// `[run] approve` of the config file, else `ask` when stdin is a terminal, else
    /// `never`.
    #[arg(long, value_name = "never|ask|always")]
    pub approve: Option<Approve>,
    /// Go on from a saved session (its id is printed at the end of every run): its
    /// conversation, in its workspace unless `--workspace` is given.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Save sessions here instead of the user data directory.
    #[arg(long, value_name = "DIR")]
    pub sessions_dir: Option<PathBuf>,
    /// The task.
    #[arg(required = true, value_name = "TASK")]
    pub task: Vec<String>,
}

/// Options of `agentls mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The workspace the tools work in.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    /// Serve only the tools that change nothing (no edits, no commands).
    #[arg(long)]
    pub read_only: bool,
    /// Read the configuration (language servers, policy) from this TOML file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write logs to this file instead of stderr (level from `AGENTLS_LOG`).
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
}

/// Options of `agentls acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// A model from the `[models]` table, or `auto`; the first configured when absent.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Read `[models]` from this TOML file instead of the user config file.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Do not run the project's check when the model ends after edits it did not check.
    #[arg(long)]
    pub no_final_check: bool,
    /// Write trajectories here instead of the user data directory.
    #[arg(long, value_name = "DIR")]
    pub trajectory_dir: Option<PathBuf>,
    /// Save sessions here (for `session/load`) instead of the user data directory.
    #[arg(long, value_name = "DIR")]
    pub sessions_dir: Option<PathBuf>,
    /// Record runs in this stats database (default: `[stats]`, else the user data
    /// directory's `agentls/stats.sqlite3`).
    #[arg(long, value_name = "FILE")]
    pub stats_db: Option<PathBuf>,
    /// Write logs to this file instead of stderr (level from `AGENTLS_LOG`).
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,
}

/// How a headless run answers approvals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approve {
    /// Refuse.
    Never,
    /// Ask on the terminal (stderr, one line from stdin).
    Ask,
    /// Allow.
    Always,
}

/// Options of `agentls bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// What to measure.
    #[command(subcommand)]
    pub target: BenchTarget,
}

/// Benchmarks `agentls bench` runs.
#[derive(Debug, Subcommand)]
pub enum BenchTarget {
    /// The symbol index (cold crawl vs `ctags -R`, re-index after one edit) and workspace
    /// grep (vs `rg`) on one corpus, in one run.
    #[command(visible_alias = "grep")]
    Index {
        /// The tree to index; the cargo registry sources by default.
        #[arg(long, value_name = "DIR")]
        corpus: Option<PathBuf>,
    },
    /// Semantic search on a retrieval set from a real project's history (commit
    /// subject → changed files): recall@5/@10 and MRR of grep-only, BM25 alone, lexical
    /// (BM25 with the index's signals), vector and hybrid rankings side by side, and the
    /// hybrid's gain over the best without vectors; first build, query latency, one edit,
    /// size.
    Search {
        /// Retrieval set directories (`set.toml` + `pairs.jsonl`); every set under
        /// `fixtures/retrieval` when none is given.
        #[arg(value_name = "SET")]
        sets: Vec<PathBuf>,
        /// Only the first N pairs of each set.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Vectors from: `static` (distilled, default), `full` (the whole model), `none`.
        #[arg(long, default_value = "static")]
        embedder: String,
        /// The rankings' table alone, without the speed measurements (about 45 s a set
        /// instead of 5 minutes with static vectors): for tuning the ranking.
        #[arg(long)]
        recall_only: bool,
        /// Keep each set's vectors in DIR (one file per set and model): a later run with
        /// the same model reads them instead of embedding again, and an interrupted one
        /// goes on where it stopped. For tuning the ranking on the whole model's vectors
        /// (half an hour of embedding a set).
        #[arg(long, value_name = "DIR")]
        vectors: Option<PathBuf>,
    },
    /// The server under heavy files, over its own stdio: `workspace/symbol` p95 while a
    /// large buffer is re-parsed after each change (vs none parsing), and resident memory
    /// fresh, with N documents open and after closing them (without and with the
    /// embedding model). See docs/benchmarks-heavy.md.
    Heavy(agentls_eval::bench_heavy::Options),
    /// Inline completion (fill-in-the-middle) on the embedded model over a held set
    /// of cases cut from registry packages' code: exact and first-line match, time to
    /// the first and last token, against llama.cpp's own infill path in the same run
    /// (needs `local`). See docs/benchmarks.md.
    Complete(agentls_eval::bench_complete::Options),
    /// Next-edit suggestions over cases mined from public repositories' commits (a
    /// manifest of offsets and digests; the texts from their git mirrors, `--repos`):
    /// exact and overlapping matches, suggestions where none is expected, latency, for
    /// the predictions without a model and the embedded model (`--model`, needs
    /// `local`). See docs/benchmarks.md.
    NextEdit(agentls_eval::bench_next_edit::Options),
    /// Batched sampling on the embedded model: generation tok/s with 1, 2, 4, 8
    /// sequences in one batch, against llama.cpp's own batched decoding of the same
    /// widths in the same run (needs `local`). See docs/benchmarks.md.
    Decode(agentls_eval::bench_decode::Options),
    /// The embedded model (prompt and generation tok/s vs llama.cpp called directly,
    /// prefix cache, speculative decoding, time to first token; needs `local`).
    Model {
        /// Catalog model; `smollm2-135m` when neither this nor --path is given.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// A GGUF file instead.
        #[arg(long, value_name = "FILE")]
        path: Option<PathBuf>,
        /// CPU threads; all cores when absent.
        #[arg(long)]
        threads: Option<usize>,
        /// Ours and the first reference with llama.cpp's flash-attention kernel.
        #[arg(long)]
        flash_attention: bool,
        /// Ours and the first reference with this KV cache: f16, q8_0 or q4_0 (keys;
        /// values too with --flash-attention).
        #[arg(long, value_name = "TYPE", default_value = "f16")]
        kv_cache: agentls_model::local::KvCache,
    },
}

/// Options of `agentls apply-patch`.
#[derive(Debug, Args)]
pub struct ApplyPatchArgs {
    /// Paths in the patch are relative to this directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// The patch; `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
}

/// Options of `agentls edit`.
#[derive(Debug, Args)]
pub struct EditArgs {
    /// The edit's format.
    #[arg(long, value_enum)]
    pub format: EditFormat,
    /// Paths in the edit are relative to this directory.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// The edit; `-` or nothing reads stdin.
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
}

/// Edit formats `agentls edit` reads.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum EditFormat {
    /// `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks, each after its file's path.
    SearchReplace,
    /// JSON `{"path", "old_string", "new_string", "replace_all"?}`.
    StrReplace,
    /// JSON `{"path", "content"}`: create or overwrite a whole file.
    WholeFile,
    /// JSON `{"path", "line", "text"}`: insert after 1-based line `line` (0 = top).
    Insert,
    /// The `*** Begin Patch` format (as `agentls apply-patch`).
    ApplyPatch,
}

impl From<EditFormat> for agentls_edit::Format {
    fn from(f: EditFormat) -> Self {
        match f {
            EditFormat::SearchReplace => Self::SearchReplace,
            EditFormat::StrReplace => Self::StrReplace,
            EditFormat::WholeFile => Self::WholeFile,
            EditFormat::Insert => Self::Insert,
            EditFormat::ApplyPatch => Self::ApplyPatch,
        }
    }
}

/// Options of `agentls serve`.
#[derive(Debug, Args, Clone, Default)]
pub struct ServeArgs {
    /// Speak LSP over stdin/stdout (the only transport; accepted because clients pass it).
    #[arg(long)]
    pub stdio: bool,

    /// Write logs to this file instead of stderr. The level comes from `AGENTLS_LOG`
    /// (a tracing filter such as `info` or `agentls=debug`; default `info`).
    #[arg(long, value_name = "PATH", env = "AGENTLS_LOG_FILE")]
    pub log_file: Option<PathBuf>,
}

/// Options of `agentls doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The workspace whose `agentls.toml` to read; the current directory by default.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_eval::args::{EvalCommand, parse_shard};

    fn eval(args: &[&str]) -> Result<EvalArgs, clap::Error> {
        let cli = Cli::try_parse_from(["agentls", "eval"].iter().chain(args))?;
        match cli.command {
            Some(Command::Eval(e)) => Ok(e),
            other => panic!("not eval: {other:?}"),
        }
    }

    #[test]
    fn eval_shard_is_i_of_n_with_i_from_1_to_n() {
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert_eq!(parse_shard("1/1"), Ok((1, 1)));
        assert_eq!(parse_shard(" 3 / 3 "), Ok((3, 3)));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", "1/2/3", "-1/2", ""] {
            let e = parse_shard(bad).unwrap_err();
            assert!(e.contains("a shard is I/N"), "{bad}: {e}");
        }
        let e = eval(&["--shard", "5/4"]).unwrap_err().to_string();
        assert!(e.contains("--shard") && e.contains("e.g. 2/4"), "{e}");
    }

    #[test]
    fn eval_takes_flags_or_a_subcommand_not_both() {
        let e = eval(&["--tasks", "t", "--jobs", "2", "--shard", "1/2"]).unwrap();
        assert!(e.command.is_none());
        assert_eq!((e.jobs, e.shard), (2, Some((1, 2))));
        let e = eval(&["compare", "a.jsonl", "b.jsonl", "--json"]).unwrap();
        assert!(matches!(
            e.command,
            Some(EvalCommand::Compare { json: true, .. })
        ));
        let e = eval(&["merge", "out.jsonl", "x.jsonl", "y.jsonl"]).unwrap();
        assert!(matches!(&e.command, Some(EvalCommand::Merge { inputs, .. }) if inputs.len() == 2));
        assert!(
            eval(&["merge", "out.jsonl"]).is_err(),
            "merge needs an input"
        );
        assert!(eval(&["--jobs", "2", "compare", "a", "b"]).is_err());
        let e = eval(&["report", "a.jsonl", "b.jsonl", "--html", "r.html"]).unwrap();
        assert!(matches!(&e.command,
            Some(EvalCommand::Report { inputs, html: Some(h) }) if inputs.len() == 2 && h.ends_with("r.html")));
        assert!(
            eval(&["report", "--html", "r.html"]).is_err(),
            "report needs a file"
        );
        let e = eval(&["replay", "--workspace", "ws", "t.jsonl"]).unwrap();
        assert!(matches!(&e.command,
            Some(EvalCommand::Replay(r)) if r.file.ends_with("t.jsonl") && r.workspace.ends_with("ws")));
        let e = eval(&["--out", "o.jsonl", "--html", "r.html"]).unwrap();
        assert!(e.command.is_none() && e.html.is_some());
        assert!(e.model.is_empty(), "the first configured");
        let e = eval(&["--model", "a,b", "--model", "c"]).unwrap();
        assert_eq!(e.model, ["a", "b", "c"]);
        assert_eq!((e.time_limit, e.max_steps), (600, 50));
        let e = eval(&["--time-limit", "90", "--max-steps", "8"]).unwrap();
        assert_eq!((e.time_limit, e.max_steps), (90, 8));
    }

    #[test]
    fn bench_search_takes_recall_only_and_a_vectors_dir() {
        let search = |args: &[&str]| {
            let cli = Cli::try_parse_from(["agentls", "bench", "search"].iter().chain(args))
                .map_err(|e| e.to_string())?;
            match cli.command {
                Some(Command::Bench(BenchArgs {
                    target:
                        BenchTarget::Search {
                            sets,
                            recall_only,
                            vectors,
                            ..
                        },
                })) => Ok((sets, recall_only, vectors)),
                other => Err(format!("not bench search: {other:?}")),
            }
        };
        assert_eq!(search(&["s"]), Ok((vec![PathBuf::from("s")], false, None)));
        assert_eq!(search(&["--recall-only"]), Ok((vec![], true, None)));
        assert_eq!(
            search(&["--vectors", "v"]),
            Ok((vec![], false, Some(PathBuf::from("v"))))
        );
        assert!(search(&["--recall-only=no"]).is_err());
    }
}
