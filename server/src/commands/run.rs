//! `agentls run`: one agent session, headless, to completion. Edits land on disk;
//! progress goes to stdout as plain lines (a live status line on a terminal) or, with
//! `--json`, as one JSON event per line. The session runs on its submission queue
//! (`agentls_host::SessionHandle`): the task is a prompt op, Ctrl-C an interrupt op,
//! and each approval request (a command the policy marks `ask`) is answered with an
//! approval op as `--approve` (or `[run] approve`) says: refused, asked on the
//! terminal, or allowed; the summary lists what was refused.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agentls_agent::render_event;
use agentls_agent::{Event, Status};
use agentls_host::config::{self, Approve};
use agentls_host::{Adapters, Host, HostOptions, Spec, Submitter};
use agentls_protocol::agent::ops::Op;

use crate::cli::RunArgs;

/// Runs the session described by `args`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init(args.log_file.as_deref())?;
    // `--resume ID`: the saved conversation, in its own workspace unless told otherwise;
    // the store is found before the workspace (and its `agentls.toml`) is known.
    let flags = command_line(&args);
    let saved = match &args.resume {
        Some(id) => {
            let config = config::load_for_cli(args.config.as_deref(), None, flags.clone())?;
            Some(Host::new(config, HostOptions::default()).load(id)?)
        }
        None => None,
    };
    let workspace = match (&args.workspace, &saved) {
        (Some(dir), _) => dir.clone(),
        (None, Some(s)) => s.cwd.clone(),
        (None, None) => PathBuf::from("."),
    };
    let config = config::load_for_cli(args.config.as_deref(), Some(&workspace), flags)?;
    let approve = config.run.approve.unwrap_or_else(|| {
        if std::io::stdin().is_terminal() {
            Approve::Ask
        } else {
            Approve::Never
        }
    });
    let mode = args.mode.parse().map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let json = args.json;
    let live = !json && std::io::stdout().is_terminal();
    let options = HostOptions::interactive("run", &config);
    let host = Host::new(config, options);
    let spec = Spec {
        workspace: workspace.clone(),
        mode,
        resume: saved,
        final_check: args.no_final_check.then_some(false),
        trajectory_dir: args.trajectory_dir.clone(),
        user_mcp: true,
        ..Spec::default()
    };
    let task = args.task.join(" ");
    let (outcome, id) = runtime.block_on(async move {
        let mut printer = Printer {
            json,
            live,
            tool: String::new(),
            model: String::new(),
        };
        // No approver of ours: requests come as events, answers go as ops.
        let session = host
            .open(spec, Adapters::default())
            .await
            .map_err(anyhow::Error::msg)?;
        let root = session.root().to_owned();
        let (handle, mut events) = session.spawn();
        printer.begin(handle.id());
        let ctrl_c = handle.submitter();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                ctrl_c.submit(Op::Interrupt);
            }
        });
        let asking = Arc::new(tokio::sync::Mutex::new(()));
        let approvals = handle.submitter();
        let print = |event: &Event| {
            // Plain lines leave approvals out: the question is on the terminal, and
            // the summary lists what was refused.
            if printer.json || !matches!(event, Event::Approval { .. }) {
                printer.print(event);
            }
        };
        let turn = handle
            .prompt_to_end(&mut events, task, print, |id, what| {
                answer(approve, &approvals, id, what, &asking)
            })
            .await
            .map_err(anyhow::Error::msg)?;
        printer.end(handle.id(), &turn.outcome, &root);
        let id = handle.id().to_owned();
        anyhow::Ok((turn.outcome, id))
    })?;
    if let Some(path) = &outcome.trajectory {
        eprintln!("trajectory: {}", path.display());
    }
    eprintln!("session: {id} (go on with `agentls run --resume {id} TASK`)");
    runtime.shutdown_background();
    Ok(match outcome.status {
        Status::Done { .. } => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// The flags that are settings, as the loader's last layer.
fn command_line(args: &RunArgs) -> serde_json::Value {
    let mut flags = config::session_flags(
        args.model.as_deref(),
        args.sessions_dir.as_deref(),
        args.stats_db.as_deref(),
    );
    flags["run"] = serde_json::json!({
        "approve": args.approve.map(|a| match a {
            crate::cli::Approve::Never => "never",
            crate::cli::Approve::Ask => "ask",
            crate::cli::Approve::Always => "always",
        }),
    });
    flags
}

/// Prints events: JSON lines, plain lines, or a live status line on a terminal.
struct Printer {
    json: bool,
    live: bool,
    /// The tool whose output the status line shows.
    tool: String,
    /// The model the router chose last: only a change is worth a line.
    model: String,
}

impl Printer {
    /// The session's id, for people (JSON lines are the protocol's events only, until
    /// the summary).
    fn begin(&self, id: &str) {
        if !self.json {
            let _ = writeln!(std::io::stdout().lock(), "session {id}");
        }
    }

    /// The run's totals: the files its edits changed and the metrics line, or with
    /// `--json` a last line `{"type": "summary", "session", "outcome", "changed",
    /// "metrics"}` (the events themselves are `agent/event`'s, which carry neither).
    /// What changed is what the edits landed, whatever the model's answer says.
    fn end(&self, id: &str, outcome: &agentls_agent::HeadlessOutcome, root: &Path) {
        let line = if self.json {
            let changed: Vec<serde_json::Value> = outcome
                .changed
                .iter()
                .map(|(p, c)| {
                    serde_json::json!({
                        "status": c,
                        "path": p.strip_prefix(root).unwrap_or(p),
                    })
                })
                .collect();
            serde_json::json!({
                "type": "summary",
                "session": id,
                "outcome": outcome.status,
                "changed": changed,
                "metrics": outcome.metrics,
            })
            .to_string()
        } else {
            format!(
                "{}\n{}",
                outcome.changed_line(root),
                outcome.metrics.render()
            )
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn print(&mut self, ev: &Event) {
        if let Event::Routed { model, .. } = ev
            && !self.json
        {
            if *model == self.model {
                return;
            }
            self.model.clone_from(model);
        }
        let mut out = std::io::stdout().lock();
        // A closed stdout (a pipe to `head`) must not stop the session.
        let _ = if self.json {
            serde_json::to_string(ev)
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(out, "{line}"))
        } else if self.live {
            match ev {
                Event::Step { step } => write!(out, "\r\x1b[Kstep {step}…"),
                Event::ToolStarted { name, .. } => {
                    self.tool.clone_from(name);
                    write!(out, "\r\x1b[K{name}…")
                }
                Event::ToolOutput { text, .. } => {
                    match text.lines().rev().find(|l| !l.trim().is_empty()) {
                        Some(last) => {
                            let last: String = last.trim_end().chars().take(100).collect();
                            write!(out, "\r\x1b[K{}: {last}", self.tool)
                        }
                        None => Ok(()),
                    }
                }
                _ => match render_event(ev) {
                    Some(line) => writeln!(out, "\r\x1b[K{line}"),
                    None => Ok(()),
                },
            }
        } else {
            match render_event(ev) {
                Some(line) => writeln!(out, "{line}"),
                None => Ok(()),
            }
        };
        let _ = out.flush();
    }
}

/// The answer to the approval request `id` as `approve` says: at once, or `None` after
/// starting the question on the terminal (on stderr, one line from stdin; only `y` or
/// `yes` allows; one question at a time), on a task of its own that submits the answer
/// as an approval op, so that the events (and a Ctrl-C) go on meanwhile.
fn answer(
    approve: Approve,
    to: &Submitter,
    id: &str,
    what: &str,
    asking: &Arc<tokio::sync::Mutex<()>>,
) -> Option<bool> {
    match approve {
        Approve::Never => Some(false),
        Approve::Always => Some(true),
        Approve::Ask => {
            let (to, id, what) = (to.clone(), id.to_owned(), what.to_owned());
            let asking = asking.clone();
            tokio::spawn(async move {
                let _one = asking.lock().await;
                let approved = tokio::task::spawn_blocking(move || {
                    ask(
                        &what,
                        &mut std::io::stdin().lock(),
                        &mut std::io::stderr().lock(),
                    )
                })
                .await
                .unwrap_or(false);
                to.submit(Op::Approval {
                    id,
                    approved,
                    in_terminal: false,
                });
            });
            None
        }
    }
}

/// Asks whether to allow `what` (a verb phrase: "run `cmd`") on `output` and reads the
/// answer from `input`: only `y` or `yes` allows; anything else, or nothing, refuses.
fn ask(what: &str, input: &mut impl BufRead, output: &mut impl Write) -> bool {
    let thing = what.strip_prefix("run ").unwrap_or(what);
    let _ = write!(output, "\nAllow {thing}? [y/N] ");
    let _ = output.flush();
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(_) => matches!(line.trim().to_lowercase().as_str(), "y" | "yes"),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::ask;

    #[test]
    fn only_yes_allows() {
        for (typed, allowed) in [
            ("y\n", true),
            ("YES\n", true),
            (" yes \n", true),
            ("\n", false),
            ("n\n", false),
            ("yep\n", false),
            ("", false),
        ] {
            let mut out = Vec::new();
            let got = ask("run `sh deploy.sh`", &mut typed.as_bytes(), &mut out);
            assert_eq!(got, allowed, "{typed:?}");
            assert_eq!(
                String::from_utf8(out).unwrap(),
                "\nAllow `sh deploy.sh`? [y/N] "
            );
        }
    }
}
