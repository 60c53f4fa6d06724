//! `agentls eval`: the agent on a suite of tasks, each checked by its own command.
//!
//! A task is a directory: `task.toml` (`prompt`, `check`, optional `timeout_secs`),
//! `repo/` (the files the agent starts from), `solution/` (files that, laid over
//! `repo/`, make the check pass) and optionally `hidden/` (tests or scripts the agent
//! never sees, laid over the workspace just before the check runs). Every attempt runs
//! on a fresh copy of `repo/`, through the same headless session as `agentls run`; the
//! check then runs in the sandbox (the agent's edits are untrusted code). One JSON line
//! per attempt, then pass@1 with a 95% interval and pass@k. `--verify-tasks` checks the
//! suite itself: each check must fail on `repo/` and pass with `solution/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use agentls_agent::Status;
use agentls_host::{Adapters, Host, HostOptions, Spec, Turn};
use agentls_protocol::agent::ops::Op;
use agentls_sandbox::{RunRequest, Sandbox, SandboxConfig};
use anyhow::Context;
use serde::Deserialize;
use serde_json::json;

use crate::args::{EvalArgs, EvalCommand};
use crate::results::{Attempt, by_task, overhead, summary};

/// `task.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    /// What the agent is asked.
    prompt: String,
    /// A shell command run in the workspace afterwards; exit 0 means solved.
    check: String,
    /// Longest the check may run.
    #[serde(default = "default_check_secs")]
    timeout_secs: u64,
}

fn default_check_secs() -> u64 {
    120
}

struct Task {
    name: String,
    dir: PathBuf,
    file: TaskFile,
}

/// Runs `agentls eval`.
pub fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        Some(EvalCommand::Compare { a, b, model, json }) => {
            return crate::results::compare(a, b, model.as_deref(), *json);
        }
        Some(EvalCommand::Merge { out, inputs }) => return crate::results::merge(out, inputs),
        Some(EvalCommand::Report { inputs, html }) => {
            return crate::html::report(inputs, html.as_deref());
        }
        Some(EvalCommand::Replay(replay)) => {
            return crate::replay::run(replay.clone(), &mut std::io::stdout().lock());
        }
        None => {}
    }
    if let Some(html) = &args.html {
        anyhow::ensure!(
            !args.verify_tasks,
            "--html reports the attempts of a run; --verify-tasks makes none"
        );
        anyhow::ensure!(
            args.out.is_some(),
            "--html {} needs --out FILE.jsonl: the report is drawn from the attempts written there \
             (or run `agentls eval report FILE.jsonl --html {}` on an earlier run's --out)",
            html.display(),
            html.display()
        );
    }
    let mut tasks = load_tasks(&args.tasks, args.only.as_deref())?;
    anyhow::ensure!(!tasks.is_empty(), "no task under {}", args.tasks.display());
    if let Some((i, n)) = args.shard {
        tasks = shard(tasks, i, n);
        anyhow::ensure!(!tasks.is_empty(), "shard {i}/{n} holds no task");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        if args.verify_tasks {
            verify_tasks(&tasks).await
        } else {
            evaluate(&args, &tasks).await
        }
    });
    runtime.shutdown_background();
    result
}

fn load_tasks(dir: &Path, only: Option<&str>) -> anyhow::Result<Vec<Task>> {
    let wanted: Option<Vec<&str>> = only.map(|o| o.split(',').map(str::trim).collect());
    let mut tasks = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading tasks in {}", dir.display()))?;
    for entry in entries {
        let dir = entry?.path();
        let toml_path = dir.join("task.toml");
        if !toml_path.is_file() {
            continue;
        }
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if wanted.as_ref().is_some_and(|w| !w.contains(&name.as_str())) {
            continue;
        }
        let text = std::fs::read_to_string(&toml_path)?;
        let file: TaskFile =
            toml::from_str(&text).with_context(|| format!("{}", toml_path.display()))?;
        anyhow::ensure!(
            dir.join("repo").is_dir(),
            "{}: no repo/ directory",
            dir.display()
        );
        tasks.push(Task { name, dir, file });
    }
    tasks.sort_by(|a, b| a.name.cmp(&b.name));
    let missing: Vec<&str> = wanted
        .iter()
        .flatten()
        .filter(|w| !w.is_empty() && !tasks.iter().any(|t| t.name == **w))
        .copied()
        .collect();
    anyhow::ensure!(
        missing.is_empty(),
        "no task named {} under {}",
        missing.join(", "),
        dir.display()
    );
    Ok(tasks)
}

/// The tasks of shard `i` of `n` (1-based): those at places `i-1`, `i-1+n`, … of the
/// list sorted by name, so shards are disjoint and together the whole suite.
fn shard(mut tasks: Vec<Task>, i: usize, n: usize) -> Vec<Task> {
    tasks.sort_by(|a, b| a.name.cmp(&b.name));
    tasks
        .into_iter()
        .enumerate()
        .filter(|(k, _)| k % n == i - 1)
        .map(|(_, t)| t)
        .collect()
}

/// Copies `from` into `to` (files and directories; links are not followed). What is
/// in `to` may be the agent's work: a link planted where a file or directory is copied
/// is replaced, never written through, so nothing lands outside `to`.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(to).is_ok_and(|m| !m.is_dir()) {
        std::fs::remove_file(to)?;
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            match std::fs::symlink_metadata(&target) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&target)?,
                Ok(_) => std::fs::remove_file(&target)?,
                Err(_) => {}
            }
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Runs the task's check in the sandbox over `ws`: solved or not, and its output.
/// The task's `hidden/` files (tests the agent never saw) are laid over `ws` first.
async fn check(task: &Task, ws: &Path) -> anyhow::Result<(bool, String)> {
    let hidden = task.dir.join("hidden");
    if hidden.is_dir() {
        copy_tree(&hidden, ws).context("copying the hidden check in")?;
    }
    let sandbox = Sandbox::new(SandboxConfig::new(ws)).context("the sandbox")?;
    let limits = agentls_sandbox::Limits {
        wall_time: Duration::from_secs(task.file.timeout_secs),
        ..agentls_sandbox::Limits::default()
    };
    let out = sandbox
        .run(
            RunRequest::shell(&task.file.check).limits(limits),
            &agentls_model::CancellationToken::new(),
        )
        .await
        .context("running the check")?;
    let text = format!("{}{}", out.stdout.to_text(), out.stderr.to_text());
    Ok((out.success(), text))
}

async fn verify_tasks(tasks: &[Task]) -> anyhow::Result<ExitCode> {
    let mut bad = 0;
    let mut stdout = std::io::stdout().lock();
    for task in tasks {
        let scratch = tempfile::tempdir()?;
        let ws = scratch.path().join("ws");
        copy_tree(&task.dir.join("repo"), &ws)?;
        let (untouched, _) = check(task, &ws).await?;
        let solution = task.dir.join("solution");
        let solved = if solution.is_dir() {
            copy_tree(&solution, &ws)?;
            check(task, &ws).await?.0
        } else {
            false
        };
        let ok = !untouched && solved;
        if !ok {
            bad += 1;
        }
        writeln!(
            stdout,
            "{} {}: check on repo/ {}, with solution/ {}",
            if ok { "ok  " } else { "BAD " },
            task.name,
            if untouched {
                "passes (it must fail)"
            } else {
                "fails"
            },
            if solved {
                "passes"
            } else {
                "fails (it must pass)"
            },
        )?;
    }
    writeln!(stdout, "{} task(s), {bad} bad", tasks.len())?;
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn evaluate(args: &EvalArgs, tasks: &[Task]) -> anyhow::Result<ExitCode> {
    use futures::StreamExt;
    let config = agentls_host::config::load_for_cli(args.config.as_deref(), None, json!(null))?;
    let models = config.models().map_err(anyhow::Error::msg)?;
    // Loaded once (the static vectors: 47 MB), shared by every attempt.
    let embedder = agentls_host::embedding::for_server(config.semantic.embedder.as_deref());
    // Attempts are measurements, not a user's work: neither recorded nor saved.
    let host = Host::new(
        config,
        HostOptions {
            embedders: embedder.map(|now| agentls_host::embedding::Tiers { now, later: None }),
            ..HostOptions::unrecorded("eval")
        },
    );
    let attempts = args.attempts.max(1);
    // The names the sessions resolve: `--model`, else the first configured.
    let model_names: Vec<Option<String>> = if args.model.is_empty() {
        vec![models.models.keys().next().cloned()]
    } else {
        args.model.iter().cloned().map(Some).collect()
    };
    let mut out_file = match &args.out {
        Some(p) => {
            Some(std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?)
        }
        None => None,
    };
    let plan: Vec<(&Task, Option<&str>, u32)> = tasks
        .iter()
        .flat_map(|task| {
            model_names
                .iter()
                .flat_map(move |m| (1..=attempts).map(move |attempt| (task, m.as_deref(), attempt)))
        })
        .collect();
    let several = model_names.len() > 1;
    // On a terminal, a bar on stderr: attempts done, passed, elapsed and left.
    let bar = progress_bar(plan.len(), "attempts · {msg}");
    bar.set_message("0 passed");
    let runs = plan
        .iter()
        .map(|&(task, model, attempt)| run_attempt(args, task, attempt, &host, model));
    // Each attempt has its own copy and sandbox: up to `--jobs` run at once, each
    // reported as it finishes.
    let mut finished = futures::stream::iter(runs).buffer_unordered(args.jobs.max(1));
    let mut done: Vec<Attempt> = Vec::new();
    while let Some(result) = finished.next().await {
        let (attempt, line, status) = result?;
        if let Some(f) = out_file.as_mut() {
            writeln!(f, "{line}")?;
        }
        let which = match (&attempt.model, several) {
            (Some(m), true) => format!(" [{m}]"),
            _ => String::new(),
        };
        let solved = match (&attempt.strategy, &attempt.solve_timings) {
            (Some(s), Some(t)) => format!(
                " ({s}: {} candidate(s), {}; drafts {} of {} kept)",
                attempt.candidates.unwrap_or_default(),
                t.phrase(),
                attempt.accepted.unwrap_or_default(),
                attempt.drafted.unwrap_or_default()
            ),
            _ => String::new(),
        };
        let printed = format!(
            "{} {} #{}{which}: {status}, {} ms{solved}",
            if attempt.passed { "PASS" } else { "FAIL" },
            attempt.task,
            attempt.attempt,
            attempt.agent_ms.unwrap_or_default()
        );
        bar.suspend(|| writeln!(std::io::stdout().lock(), "{printed}"))?;
        done.push(attempt);
        bar.inc(1);
        bar.set_message(format!(
            "{} passed",
            done.iter().filter(|a| a.passed).count()
        ));
    }
    bar.finish_and_clear();
    let mut stdout = std::io::stdout().lock();
    if several {
        for name in model_names.iter().flatten() {
            let mine: Vec<Attempt> = done
                .iter()
                .filter(|a| a.model.as_deref() == Some(name.as_str()))
                .cloned()
                .collect();
            writeln!(stdout, "{name}: {}", summary(&by_task(&mine)))?;
        }
    } else {
        writeln!(stdout, "{}", summary(&by_task(&done)))?;
    }
    write!(stdout, "{}", crate::solve::table(&done))?;
    if let Some(o) = overhead(&done) {
        writeln!(stdout, "{o}")?;
    }
    if let (Some(html), Some(out)) = (&args.html, &args.out) {
        drop(out_file);
        // From the file, as `agentls eval report` reads it: one report, one reader.
        crate::html::write(std::slice::from_ref(out), html)?;
        writeln!(stdout, "report in {}", html.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One attempt at `task` on a fresh copy of its repository: the attempt, its JSON
/// line, and the session's status.
async fn run_attempt(
    args: &EvalArgs,
    task: &Task,
    attempt: u32,
    host: &Host,
    model_name: Option<&str>,
) -> anyhow::Result<(Attempt, serde_json::Value, String)> {
    let scratch = tempfile::tempdir()?;
    let ws = scratch.path().join("ws");
    let start = Instant::now();
    copy_tree(&task.dir.join("repo"), &ws)?;
    let setup_ms = ms(start.elapsed());
    // Trajectories are kept beside the results (`R.jsonl` → `R.trajectories/`); without
    // `--out` they go with the scratch copy.
    let trajectory_dir = match &args.out {
        Some(out) => out.with_extension("trajectories"),
        None => scratch.path().join("trajectories"),
    };
    let t0 = Instant::now();
    // The budget's wall time is checked before each model call; a call that runs on
    // (a small model generating without end) is cancelled when the time is up, less
    // the time to wind down.
    // The pipeline's samples: a seed per attempt, its report for coverage.
    let (solve_config, solve_tap) =
        crate::solve::config(attempt, !args.one_at_a_time, args.task_checks);
    let spec = Spec {
        workspace: ws.clone(),
        model: model_name.map(str::to_owned),
        max_steps: Some(args.max_steps),
        max_wall: Some(Duration::from_secs(args.time_limit)),
        final_check: Some(!args.no_final_check),
        solve: Some(solve_config),
        trajectory_dir: Some(trajectory_dir),
        ..Spec::default()
    };
    let limit = stop_after(Duration::from_secs(args.time_limit));
    let turn = attempt_turn(host, spec, task.file.prompt.clone(), limit).await;
    let agent_ms = ms(t0.elapsed());
    let (status, metrics, trajectory, record) = match turn {
        Ok(t) => (
            match &t.outcome.status {
                Status::Cancelled => "time limit".to_owned(),
                other => status_name(other),
            },
            Some(t.outcome.metrics),
            t.outcome.trajectory,
            Some(t.record),
        ),
        Err(e) => (format!("error: {e}"), None, None, None),
    };
    let harness_ms = metrics.as_ref().map(|m| m.harness_ms());
    let t1 = Instant::now();
    let (passed, check_output) = check(task, &ws).await?;
    let check_ms = ms(t1.elapsed());
    let solved = crate::solve::taken(&solve_tap);
    let covered = crate::solve::covered(
        solved.as_ref(),
        passed,
        &task.dir.join("repo"),
        copy_tree,
        |ws| async move { Ok(check(task, &ws).await?.0) },
    )
    .await?;
    let r = record.as_ref();
    let tool_calls = r.map(|r| r.calls.values().map(|&n| u64::from(n)).sum::<u64>());
    let line = json!({
        "task": task.name,
        "attempt": attempt,
        "model": model_name,
        "passed": passed,
        "status": status,
        "wall_ms": ms(start.elapsed()),
        "setup_ms": setup_ms,
        "agent_ms": agent_ms,
        "check_ms": check_ms,
        "harness_ms": harness_ms,
        "first_token_ms": r.and_then(|r| r.first_token_ms),
        "first_edit_ms": r.and_then(|r| r.first_edit_ms),
        "steps": r.map(|r| r.steps),
        "failed_steps": r.map(|r| r.failed_steps),
        "input_tokens": r.map(|r| r.input_tokens),
        "cached_input_tokens": r.map(|r| r.cached_input_tokens),
        "output_tokens": r.map(|r| r.output_tokens),
        "cost_usd": r.and_then(|r| r.cost_usd),
        "tool_calls": tool_calls,
        "calls_by_tool": r.map(|r| &r.calls),
        "errors_by_tool": r.map(|r| &r.tool_errors),
        "errors_by_class": r.map(|r| &r.errors),
        "trajectory": args.out.as_ref().and(trajectory),
        "check_tail": tail(&check_output, 400),
        "covered": covered,
        "strategy": solved.as_ref().map(|r| r.strategy.as_str()).filter(|s| !s.is_empty()),
        "solve_timings": solved.as_ref().map(|r| &r.timings),
        "candidates": solved.as_ref().map(|r| r.candidates.len()),
        "drafted": solved.as_ref().map(|r| r.drafted),
        "accepted": solved.as_ref().map(|r| r.accepted),
    });
    // What the summary, compare and report read, read from the line itself.
    let done =
        Attempt::deserialize(&line).context("an attempt line that does not read back as one")?;
    Ok((done, line, status))
}

/// One attempt's turn, driven through the session's queue alone: the task as a
/// prompt, an interrupt once `limit` (counted from before the session opens) runs out,
/// and a refusal for every approval request: nothing the policy asks about runs
/// unattended.
async fn attempt_turn(
    host: &Host,
    spec: Spec,
    prompt: String,
    limit: Duration,
) -> Result<Turn, String> {
    let deadline = tokio::time::Instant::now() + limit;
    let (handle, mut events) = host.open(spec, Adapters::default()).await?.spawn();
    let timer = {
        let submitter = handle.submitter();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            submitter.submit(Op::Interrupt);
        })
    };
    let turn = handle
        .prompt_to_end(&mut events, prompt, |_| {}, |_, _| Some(false))
        .await;
    timer.abort();
    turn
}

/// When an attempt's stop fires: a wind-down reserve (a fiftieth of the limit, at most
/// two seconds) before the limit itself, so that what still runs after the cancel (the
/// engine's current batch, a sandboxed test being killed and cleared away, the
/// trajectory being written) ends within the limit.
fn stop_after(limit: Duration) -> Duration {
    limit - (limit / 50).min(Duration::from_secs(2))
}

/// Milliseconds, to a tenth.
fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

fn status_name(status: &Status) -> String {
    match status {
        Status::Done { .. } => "done".to_owned(),
        other => format!("{other:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or_default()
            .to_lowercase(),
    }
}

fn tail(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars[chars.len().saturating_sub(max)..].iter().collect()
}

/// A bar on stderr (drawn only on a terminal) for `len` steps: `{bar} {pos}/{len} `,
/// then `what`, then the time spent and left.
pub fn progress_bar(len: usize, what: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{bar:30}} {{pos}}/{{len}} {what} · {{elapsed}} (~{{eta}} left)"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_leaves_time_to_wind_down_within_the_limit() {
        let secs = |s: f64| Duration::from_secs_f64(s);
        assert_eq!(stop_after(secs(300.0)), secs(298.0));
        assert_eq!(stop_after(secs(120.0)), secs(118.0));
        assert_eq!(stop_after(secs(2.0)), secs(1.96));
        assert_eq!(stop_after(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn shards_are_disjoint_and_cover_the_suite() {
        let task = |name: &str| Task {
            name: name.to_owned(),
            dir: PathBuf::new(),
            file: TaskFile {
                prompt: String::new(),
                check: String::new(),
                timeout_secs: 1,
            },
        };
        let names = |ts: Vec<Task>| ts.into_iter().map(|t| t.name).collect::<Vec<_>>();
        let all = || ["e", "a", "d", "b", "c"].map(task).into();
        assert_eq!(names(shard(all(), 1, 2)), ["a", "c", "e"]);
        assert_eq!(names(shard(all(), 2, 2)), ["b", "d"]);
        assert_eq!(names(shard(all(), 3, 3)), ["c"]);
        assert_eq!(names(shard(all(), 1, 1)).len(), 5);
    }
}
