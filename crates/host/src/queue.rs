//! A session on a submission queue, in codex-rs's shape: [`HostedSession::spawn`] moves
//! the session into a task of its own, which takes [`Submission`]s (the protocol's
//! [`Op`]s: a prompt, an interrupt, an approval's answer, a change of model or mode,
//! a compaction, the front end's part of the saved record) and sends back one stream
//! of [`Emitted`] items: the turn's events, approval requests among them, and the end
//! of each turn. While a turn runs the task still reads the queue: an interrupt
//! cancels the turn, an approval answers the request waiting for it, a save is written
//! at once, and anything else waits for the turn to end. The front end holds a
//! [`SessionHandle`], never the session: it cancels nothing, answers no approver and
//! saves no record itself (the session's cancel token is this crate's alone).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agentls_agent::Event;
use agentls_protocol::agent::Mode as WireMode;
use agentls_protocol::agent::ops::{Op, Submission};
use tokio::sync::mpsc;

use crate::host::{HostedSession, Turn};

/// What a session's task sends back.
#[derive(Debug)]
pub enum Emitted {
    /// An event of the turn that submission `sub` started (an approval request among
    /// them, answered with [`Op::Approval`]).
    Event {
        /// The submission.
        sub: String,
        /// The event.
        event: Event,
    },
    /// The turn of submission `sub` ended: its outcome, record and alerts.
    TurnEnded {
        /// The submission.
        sub: String,
        /// How it went.
        turn: Box<Turn>,
    },
    /// Op `sub` (not a prompt) was carried out: a model or mode set, a compaction
    /// done (its `compacted` event came before), a save written.
    Done {
        /// The submission.
        sub: String,
    },
    /// Submission `sub` could not be carried out (an unknown model, say).
    Refused {
        /// The submission.
        sub: String,
        /// Why.
        error: String,
    },
}

/// The front end's side of a spawned session.
#[derive(Debug)]
pub struct SessionHandle {
    id: String,
    submitter: Submitter,
    task: tokio::task::JoinHandle<HostedSession>,
}

/// What submits to a session's queue; cheap to clone, for a task of the front end's
/// own (a Ctrl-C handler, a question to the user).
#[derive(Debug, Clone)]
pub struct Submitter {
    tx: mpsc::UnboundedSender<Submission>,
    next: Arc<AtomicU64>,
}

impl Submitter {
    /// Queues `op`; returns the submission's id, which the events it causes carry.
    /// After the session's task ended the op is dropped.
    pub fn submit(&self, op: Op) -> String {
        let id = format!("{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let _ = self.tx.send(Submission { id: id.clone(), op });
        id
    }
}

impl SessionHandle {
    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Queues `op` (see [`Submitter::submit`]).
    pub fn submit(&self, op: Op) -> String {
        self.submitter.submit(op)
    }

    /// A submitter of this session's, for another task.
    pub fn submitter(&self) -> Submitter {
        self.submitter.clone()
    }

    /// Closes the queue (once every submitter is gone) and waits for the task to finish
    /// what it was given; the session back (for its transcript, say). `None` if the
    /// task panicked.
    pub async fn close(self) -> Option<HostedSession> {
        drop(self.submitter);
        self.task.await.ok()
    }
}

impl SessionHandle {
    /// Submits a prompt on `text` and reads `events` (this session's stream) until its
    /// turn ends: `on` sees every event, and each approval request is answered with
    /// what `approve(id, what)` says as an approval op, or, when it says `None`, by the
    /// front end itself later (a question to the user on a task of its own, which
    /// submits the answer through a [`Submitter`]).
    pub async fn prompt_to_end(
        &self,
        events: &mut mpsc::UnboundedReceiver<Emitted>,
        text: String,
        mut on: impl FnMut(&Event),
        mut approve: impl FnMut(&str, &str) -> Option<bool>,
    ) -> Result<Turn, String> {
        let sub = self.submit(Op::Prompt {
            text,
            user_text: None,
        });
        loop {
            match events.recv().await {
                Some(Emitted::Event { event, .. }) => {
                    if let Event::Approval {
                        id: Some(id),
                        what,
                        granted: None,
                        ..
                    } = &event
                        && let Some(approved) = approve(id, what)
                    {
                        self.submit(Op::Approval {
                            id: id.clone(),
                            approved,
                            in_terminal: false,
                        });
                    }
                    on(&event);
                }
                Some(Emitted::TurnEnded { sub: s, turn }) if s == sub => return Ok(*turn),
                Some(Emitted::TurnEnded { .. } | Emitted::Done { .. }) => {}
                Some(Emitted::Refused { sub: s, error }) if s == sub => return Err(error),
                Some(Emitted::Refused { .. }) => {}
                None => return Err("internal: the session ended without an outcome".to_owned()),
            }
        }
    }
}

/// The agent's mode for the protocol's.
fn mode(m: WireMode) -> agentls_agent::Mode {
    match m {
        WireMode::Agent => agentls_agent::Mode::Agent,
        WireMode::Ask => agentls_agent::Mode::Ask,
        WireMode::Plan => agentls_agent::Mode::Plan,
    }
}

impl HostedSession {
    /// Moves the session into a task of its own that carries out the submissions of the
    /// returned handle, and the stream of what it emits. Needs a tokio runtime.
    pub fn spawn(self) -> (SessionHandle, mpsc::UnboundedReceiver<Emitted>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (out, events) = mpsc::unbounded_channel();
        let id = self.id().to_owned();
        let task = tokio::spawn(drive(self, rx, out));
        let handle = SessionHandle {
            id,
            submitter: Submitter {
                tx,
                next: Arc::new(AtomicU64::new(0)),
            },
            task,
        };
        (handle, events)
    }

    /// Carries out an op that is not a prompt, between turns.
    async fn between_turns(&mut self, sub: Submission, out: &mpsc::UnboundedSender<Emitted>) {
        let id = sub.id;
        let done = match sub.op {
            Op::Prompt { .. } => Ok(()),
            // Nothing runs: nothing to stop, nobody waits for an answer.
            Op::Interrupt | Op::Approval { .. } => return,
            Op::OverrideTurnContext { model, mode: m } => {
                if let Some(m) = m {
                    let _ = self.submit(crate::Op::SetMode(mode(m)), |_| {}).await;
                }
                match model {
                    Some(name) => self
                        .submit(crate::Op::SetModel(name), |_| {})
                        .await
                        .map(|_| ()),
                    None => Ok(()),
                }
            }
            Op::Compact => {
                let (to, sub) = (out.clone(), id.clone());
                self.compact(move |event| {
                    let _ = to.send(Emitted::Event {
                        sub: sub.clone(),
                        event: event.clone(),
                    });
                })
                .await;
                Ok(())
            }
            Op::Save { title, front_end } => {
                save(&self.saving, self.host(), self.saves(), title, front_end);
                Ok(())
            }
        };
        let _ = out.send(match done {
            Ok(()) => Emitted::Done { sub: id },
            Err(error) => Emitted::Refused { sub: id, error },
        });
    }
}

/// Writes the front end's part of the record with the conversation as last kept.
fn save(
    saving: &crate::saving::Saving,
    host: &crate::Host,
    saves: bool,
    title: Option<String>,
    front_end: serde_json::Value,
) {
    if let Some(record) = saving.answer(title, front_end)
        && saves
    {
        host.save(&record);
    }
}

/// The session's task: one submission at a time, and while a turn runs, interrupts,
/// approvals and saves at once.
async fn drive(
    mut session: HostedSession,
    mut rx: mpsc::UnboundedReceiver<Submission>,
    out: mpsc::UnboundedSender<Emitted>,
) -> HostedSession {
    let mut waiting: VecDeque<Submission> = VecDeque::new();
    loop {
        let sub = match waiting.pop_front() {
            Some(sub) => sub,
            None => match rx.recv().await {
                Some(sub) => sub,
                None => break,
            },
        };
        let Op::Prompt { text, user_text } = sub.op else {
            session.between_turns(sub, &out).await;
            continue;
        };
        let cancel = session.fresh_cancel_token();
        let approvals = session.approvals.clone();
        let (saving, host, saves) = (
            session.saving.clone(),
            session.host().clone(),
            session.saves(),
        );
        {
            let (out, sub) = (out.clone(), sub.id.clone());
            approvals.send_to(Box::new(move |event| {
                out.send(Emitted::Event {
                    sub: sub.clone(),
                    event,
                })
                .is_ok()
            }));
        }
        let render = {
            let (out, sub) = (out.clone(), sub.id.clone());
            move |event: &Event| {
                let _ = out.send(Emitted::Event {
                    sub: sub.clone(),
                    event: event.clone(),
                });
            }
        };
        let turn = session.submit(crate::Op::Prompt { text, user_text }, render);
        tokio::pin!(turn);
        let mut open = true;
        let turn = loop {
            tokio::select! {
                turn = &mut turn => break turn,
                next = rx.recv(), if open => match next {
                    Some(Submission { op: Op::Interrupt, .. }) => cancel.cancel(),
                    Some(Submission { op: Op::Approval { id, approved, in_terminal }, .. }) => {
                        approvals.answer(&id, approved, in_terminal);
                    }
                    Some(Submission { id, op: Op::Save { title, front_end } }) => {
                        save(&saving, &host, saves, title, front_end);
                        let _ = out.send(Emitted::Done { sub: id });
                    }
                    Some(later) => waiting.push_back(later),
                    // The handle is gone: the turn finishes, then the task.
                    None => open = false,
                },
            }
        };
        approvals.stop_sending();
        let _ = match turn {
            Ok(Some(turn)) => out.send(Emitted::TurnEnded {
                sub: sub.id,
                turn: Box::new(turn),
            }),
            Ok(None) => out.send(Emitted::Refused {
                sub: sub.id,
                error: "internal: the turn ended without an outcome".to_owned(),
            }),
            Err(error) => out.send(Emitted::Refused { sub: sub.id, error }),
        };
    }
    session
}
