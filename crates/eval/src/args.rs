//! The command line of `agentls eval` and `agentls replay`, declared here beside the
//! code that reads it; the binary's `cli` takes them as they are.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Options of `agentls replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// The workspace to run the calls in.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub workspace: PathBuf,
    /// The trajectory (JSONL).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// Options of `agentls eval`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    /// Compare, merge or report result files instead of running the suite.
    #[command(subcommand)]
    pub command: Option<EvalCommand>,
    /// The directory of tasks (each with task.toml, repo/ and solution/).
    #[arg(long, value_name = "DIR", default_value = "fixtures/tasks")]
    pub tasks: PathBuf,
    /// Only these tasks (comma-separated names).
    #[arg(long, value_name = "NAMES")]
    pub only: Option<String>,
    /// Models from the `[models]` table, or `auto`: each runs every task (repeat the
    /// flag or separate names by commas); the first configured when absent.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub model: Vec<String>,
    /// The config file with `[models]` (default: the user config file).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Attempts per task (pass@k).
    #[arg(long, default_value_t = 1)]
    pub attempts: u32,
    /// Write one JSON line per attempt here.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Without the harness's final check (to measure what it is worth).
    #[arg(long)]
    pub no_final_check: bool,
    /// Each attempt's budget of wall time: the agent stops at its first model call
    /// past it (the check still runs).
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub time_limit: u64,
    /// Each attempt's budget of model calls.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub max_steps: u32,
    /// The pipeline's samples decoded one after another, not together in batches
    /// (to measure what batching is worth).
    #[arg(long)]
    pub one_at_a_time: bool,
    /// The pipeline asks the model for checks from the task's values before its
    /// candidates (off by default: see docs/solve.md).
    #[arg(long)]
    pub task_checks: bool,
    /// Check the suite instead: every check fails on repo/ and passes with solution/.
    #[arg(long)]
    pub verify_tasks: bool,
    /// Attempts run at once (each on its own copy of the repository, in its own
    /// sandbox); results are reported as they finish.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub jobs: usize,
    /// Run one shard of the suite, `I/N` (1-based): the tasks whose place in the sorted
    /// list is I-1 modulo N; `agentls eval merge` joins the shards' `--out` files.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// After the run, write an HTML report of the `--out` file here (needs `--out`):
    /// what `agentls eval report FILE.jsonl --html FILE` writes.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write logs to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

/// `agentls eval compare`, `merge`, `report` and `replay`.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Compare two `--out` files task by task: pass rates, pass@1 with intervals, a
    /// paired sign test (is the difference larger than noise?), time and tokens.
    Compare {
        /// The baseline's results.
        #[arg(value_name = "A.jsonl")]
        a: PathBuf,
        /// The results to judge against it.
        #[arg(value_name = "B.jsonl")]
        b: PathBuf,
        /// Only this model's attempts from each file. Without it, a file of one model is
        /// compared with a file of one model (a model against another), and files of
        /// several models model by model.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Print each comparison as one JSON object per line (with its `model`).
        #[arg(long)]
        json: bool,
    },
    /// Join the `--out` files of a suite's shards into one, each (task, attempt) once,
    /// and print the summary over all of them.
    Merge {
        /// The merged file to write.
        #[arg(value_name = "OUT.jsonl")]
        out: PathBuf,
        /// The shards' files.
        #[arg(value_name = "SHARD.jsonl", required = true)]
        inputs: Vec<PathBuf>,
    },
    /// Summarize `--out` files per model (pass@1 and pass@k with 95% intervals); with
    /// `--html`, also write them as one self-contained HTML page with plots. A line's
    /// model is its `model` field, else its file's name.
    Report {
        /// The results, one or more runs (e.g. one per model).
        #[arg(value_name = "RESULTS.jsonl", required = true)]
        inputs: Vec<PathBuf>,
        /// Write the HTML report here: pass rates with error bars, a task × model table,
        /// wall times, tool errors by class (no scripts, nothing fetched from the web).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Re-run a recorded session's tool calls without the model against a copy of its
    /// starting repository, and report whether each call ends as recorded (for harness
    /// refactors; the same as `agentls replay`). Exits non-zero when any differs.
    Replay(ReplayArgs),
}

/// `I/N` with 1 <= I <= N.
pub fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{s:?}: a shard is I/N with 1 <= I <= N, e.g. 2/4");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i, n))
}
