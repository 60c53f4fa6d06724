//! `run_command`: a shell command in the sandbox, seeing the editor's buffers; the files
//! it changes come back through the same validated edit path as the agent's edits.
//! Its output streams to [`crate::ToolContext::progress`] while it runs.

use std::time::Duration;

use agentls_edit::FileOp;
use agentls_model::PathKind;
use agentls_sandbox::{Decision, Limits, RunOutcome, RunRequest, SandboxError, Termination};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::land::{land, plan};
use crate::paths::{display, resolve};
use crate::{CommandChoice, Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

const DEFAULT_TIMEOUT_SECS: u64 = 120;
const MAX_TIMEOUT_SECS: u64 = 1800;
/// Bytes of stdout and of stderr kept for the model, each (head and tail halves).
const OUTPUT_BYTES: usize = 32 * 1024;

/// Runs a command in the sandbox.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunCommand;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunCommandArgs {
    /// The shell command to run in the workspace: for a build or the tests, the project's own command.
    command: String,
    /// Working directory relative to the root; default the root.
    #[serde(default)]
    cwd: Option<String>,
    /// Kill the command after this many seconds; default 120.
    #[schemars(range(min = 1, max = MAX_TIMEOUT_SECS))]
    #[serde(default, alias = "timeout")]
    timeout_secs: Option<u64>,
}

#[async_trait]
impl Tool for RunCommand {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_command",
            description: "Run a shell command (bash -o pipefail -c: a pipeline fails when any part fails) in the workspace, sandboxed: no network, writes only inside the workspace and /tmp, unsaved editor buffers visible as files. Use it to build, run tests, and inspect the system. Returns the exit code and stdout/stderr (long output keeps its head and tail). Files the command changes are applied like your edits and listed. A few commands (pushing, publishing, `rm -rf`) need the user's approval; privilege changes are forbidden.",
            parameters: crate::schema::cached!(RunCommandArgs),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn path_args(&self) -> &'static [(&'static str, PathKind)] {
        &[("cwd", PathKind::Dir)]
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let a: RunCommandArgs = parse_args("run_command", args)?;
        let command = a.command.trim().to_owned();
        if command.is_empty() {
            return Err(ToolError::invalid_arguments("run_command: empty command"));
        }
        let Some(sandbox) = &ctx.sandbox else {
            return Err(ToolError::environment(
                "run_command: commands cannot run in this session (read-only mode)",
            ));
        };
        // The sandbox is what makes a command safe to run unasked: when the kernel
        // lacks one of its layers, whatever no allow rule names is asked about.
        let unnamed = if sandbox.capabilities().is_complete() {
            Decision::Allow
        } else {
            Decision::Ask
        };
        match ctx.policy.check_shell_with_default(&command, unnamed) {
            Decision::Allow => {}
            Decision::Forbid => {
                return Err(ToolError::invalid_arguments(format!(
                    "run_command: `{command}` is forbidden by the command policy; do not retry it, find another way"
                )));
            }
            Decision::Ask => {
                let what = format!("run `{command}`");
                let choice = tokio::select! {
                    c = ctx.approver.approve_command(&what, ctx.terminal.is_some()) => c,
                    () = ctx.cancel.cancelled() => CommandChoice::Refuse,
                };
                match choice {
                    CommandChoice::Sandbox => {}
                    CommandChoice::Terminal => return in_terminal(ctx, &command, a.cwd).await,
                    CommandChoice::Refuse => {
                        return Err(ToolError::aborted(format!(
                            "run_command: `{command}` was refused: it needs approval and the user (or this run's approval policy) did not allow it; do not retry it, do without it or tell the user to run it"
                        )));
                    }
                }
            }
        }
        let mut req = RunRequest::shell(command.clone()).buffers(ctx.dirty_buffers());
        if let Some(cwd) = &a.cwd {
            req = req.cwd(resolve(&ctx.root, cwd)?);
        }
        let secs = a
            .timeout_secs
            .unwrap_or(DEFAULT_TIMEOUT_SECS)
            .clamp(1, MAX_TIMEOUT_SECS);
        req = req.limits(Limits {
            wall_time: Duration::from_secs(secs),
            output_bytes: OUTPUT_BYTES,
            ..Limits::default()
        });
        let outcome = match &ctx.progress {
            Some(progress) => {
                // The sender lives in the request: the forwarder ends when the run does.
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                let (outcome, ()) = tokio::join!(
                    sandbox.run(req.output(tx), &ctx.cancel),
                    crate::forward_output(rx, progress.as_ref())
                );
                outcome
            }
            None => sandbox.run(req, &ctx.cancel).await,
        };
        let outcome = outcome.map_err(|e| match e {
            SandboxError::InvalidRequest(m) => {
                ToolError::invalid_arguments(format!("run_command: {m}"))
            }
            other => ToolError::environment(format!("run_command: {other}")),
        })?;
        let mut out = render(ctx, &outcome);
        match outcome.termination {
            Termination::Cancelled => {
                return Err(ToolError::aborted(format!(
                    "run_command: cancelled; its file changes were discarded\n{out}"
                )));
            }
            Termination::TimedOut => {
                return Err(ToolError::timeout(format!(
                    "run_command: killed after {secs} s (raise timeout_secs or run less); its file changes were discarded\n{out}"
                )));
            }
            Termination::Exited(_) | Termination::Signaled(_) => {}
        }
        let summary = format!(
            "$ {} → {}",
            crate::util::clip(&command, 80),
            status(&outcome)
        );
        let failed = !outcome.success();
        if outcome.changes.changes.is_empty() {
            return Ok(ToolOutput::with_summary(out, summary).failed(failed));
        }
        match land_changes(ctx, &outcome).await {
            Ok(landed) => {
                out.push_str("files changed by the command (applied):\n");
                out.push_str(&landed.content);
                Ok(ToolOutput::with_summary(out, summary).failed(failed))
            }
            Err(e) => Err(ToolError {
                class: e.class,
                message: format!(
                    "{out}the command's file changes were NOT applied: {}",
                    e.message
                ),
            }),
        }
    }
}

/// Runs `command` in the user's own terminal, as the user chose: outside the sandbox,
/// so what it changes lands on disk directly, and the model is told so.
async fn in_terminal(
    ctx: &ToolContext,
    command: &str,
    cwd: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let Some(terminal) = &ctx.terminal else {
        return Err(ToolError::bug("run_command: no terminal to run in"));
    };
    let cwd = match &cwd {
        Some(cwd) => resolve(&ctx.root, cwd)?,
        None => ctx.root.clone(),
    };
    let run = terminal
        .run(command, &cwd, &ctx.cancel)
        .await
        .map_err(|e| ToolError::environment(format!("run_command: the user's terminal: {e}")))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::aborted(format!(
            "run_command: cancelled; `{command}` was killed in the user's terminal"
        )));
    }
    // Shown with the call like a sandboxed command's output (the terminal's own view
    // may be gone once released).
    if let Some(progress) = &ctx.progress
        && !run.output.is_empty()
    {
        progress.output(agentls_sandbox::OutputStream::Stdout, &run.output);
    }
    let status = match (&run.exit_code, &run.signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by {signal}"),
        (None, None) => "ended".to_owned(),
    };
    let mut out = format!(
        "ran in the user's terminal at their choice, outside the sandbox ({status}); files it changed were changed directly, not through your edits\n"
    );
    if run.truncated {
        out.push_str("[the terminal kept only the end of the output]\n");
    }
    out.push_str(&run.output);
    let summary = format!(
        "$ {} → {status} (user's terminal)",
        crate::util::clip(command, 80)
    );
    Ok(ToolOutput::with_summary(out, summary).failed(run.exit_code != Some(0)))
}

/// The command's file changes as a plan, refused file by file where the text changed
/// while the command ran (the user's typing is never overwritten), then landed.
async fn land_changes(ctx: &ToolContext, outcome: &RunOutcome) -> Result<ToolOutput, ToolError> {
    let mut ops = Vec::new();
    for c in &outcome.changes.changes {
        let rel = display(&ctx.root, &c.path);
        let now = ctx
            .store
            .read(&c.path, &ctx.read_limits)
            .ok()
            .map(|s| s.rope.to_string());
        if now != c.old {
            return Err(ToolError::environment(format!(
                "{rel} changed while the command ran; run the command again"
            )));
        }
        match &c.new {
            None => ops.push(FileOp::Delete { path: rel }),
            Some(text) => ops.push(FileOp::Write {
                path: rel,
                content: text.clone(),
            }),
        }
    }
    let plan = plan(ctx, ops).await?;
    land(ctx, "run_command", plan).await
}

fn status(o: &RunOutcome) -> String {
    match o.termination {
        Termination::Exited(c) => format!("exit code {c}"),
        Termination::Signaled(s) => format!("killed by signal {s}"),
        Termination::TimedOut => "timed out".to_owned(),
        Termination::Cancelled => "cancelled".to_owned(),
    }
}

fn render(ctx: &ToolContext, o: &RunOutcome) -> String {
    let mut out = format!("{} ({} ms)\n", status(o), o.duration.as_millis());
    let stdout = o.stdout.to_text();
    let stderr = o.stderr.to_text();
    if !stdout.is_empty() {
        out.push_str("--- stdout ---\n");
        out.push_str(&stdout);
        if !stdout.ends_with('\n') {
            out.push('\n');
        }
    }
    if !stderr.is_empty() {
        out.push_str("--- stderr ---\n");
        out.push_str(&stderr);
        if !stderr.ends_with('\n') {
            out.push('\n');
        }
    }
    if stdout.is_empty() && stderr.is_empty() {
        out.push_str("(no output)\n");
    }
    if let Some(d) = &o.denial {
        out.push_str(&format!("sandbox: {}\n", d.message));
    }
    for w in &o.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    for (p, why) in &o.changes.skipped {
        out.push_str(&format!("not applied: {} ({why})\n", display(&ctx.root, p)));
    }
    for p in &o.changes.written_through {
        out.push_str(&format!("written directly: {}\n", display(&ctx.root, p)));
    }
    out
}
