//! Approval requests answered through the submission queue ([`crate::queue`]): the
//! session's approver asks, the front end answers with an approval op. Below the
//! host and the queue, which both hold it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agentls_agent::Event;
use agentls_tools::CommandChoice;
use async_trait::async_trait;
use tokio::sync::oneshot;

/// Where approval events go while a turn runs: true when sent.
pub(crate) type Send = Box<dyn Fn(Event) -> bool + std::marker::Send + Sync>;

/// Approval requests waiting for their approval op, shared by the session's approver
/// and its task. Until the session is spawned nobody can answer, and every request is
/// refused.
#[derive(Default)]
pub(crate) struct Approvals {
    pending: Mutex<HashMap<String, oneshot::Sender<CommandChoice>>>,
    /// Where requests go while a turn runs.
    out: Mutex<Option<Send>>,
    next: AtomicU64,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Approvals {
    /// Requests go to `out` from now on (a turn begins).
    pub(crate) fn send_to(&self, out: Send) {
        *lock(&self.out) = Some(out);
    }

    /// Nobody to ask any more (the turn ended).
    pub(crate) fn stop_sending(&self) {
        *lock(&self.out) = None;
    }

    fn emit(&self, event: Event) -> bool {
        lock(&self.out).as_ref().is_some_and(|out| out(event))
    }

    /// The front end's answer to request `id`: allowed or not, and where a command
    /// runs (the user's terminal only where the request offered it).
    pub(crate) fn answer(&self, id: &str, approved: bool, in_terminal: bool) {
        let choice = match (approved, in_terminal) {
            (false, _) => CommandChoice::Refuse,
            (true, false) => CommandChoice::Sandbox,
            (true, true) => CommandChoice::Terminal,
        };
        match lock(&self.pending).remove(id) {
            Some(waiting) => {
                let _ = waiting.send(choice);
            }
            None => tracing::debug!(id, "an answer to no approval request waiting"),
        }
    }
}

/// The approver of a session whose front end answers through the queue.
#[derive(Debug)]
pub(crate) struct OpApprover(pub(crate) Arc<Approvals>);

impl OpApprover {
    /// Asks through the queue; `terminal`: the user may pick their own terminal.
    async fn ask(&self, what: &str, terminal: bool) -> CommandChoice {
        let approvals = &self.0;
        let id = format!(
            "approval-{}",
            approvals.next.fetch_add(1, Ordering::Relaxed) + 1
        );
        let (tx, rx) = oneshot::channel();
        lock(&approvals.pending).insert(id.clone(), tx);
        let asked = approvals.emit(Event::Approval {
            id: Some(id.clone()),
            what: what.to_owned(),
            granted: None,
            in_terminal: terminal,
        });
        if !asked {
            lock(&approvals.pending).remove(&id);
            tracing::info!("refused approval for {what}: nobody to ask");
            return CommandChoice::Refuse;
        }
        // A dropped request (the session ended) is a no.
        let mut choice = rx.await.unwrap_or(CommandChoice::Refuse);
        if choice == CommandChoice::Terminal && !terminal {
            choice = CommandChoice::Sandbox;
        }
        approvals.emit(Event::Approval {
            id: Some(id),
            what: what.to_owned(),
            granted: Some(choice != CommandChoice::Refuse),
            in_terminal: choice == CommandChoice::Terminal,
        });
        choice
    }
}

#[async_trait]
impl agentls_tools::Approver for OpApprover {
    async fn approve(&self, what: &str) -> bool {
        self.ask(what, false).await != CommandChoice::Refuse
    }

    async fn approve_command(&self, what: &str, terminal: bool) -> CommandChoice {
        self.ask(what, terminal).await
    }
}
