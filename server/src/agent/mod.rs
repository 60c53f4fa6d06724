//! Agent sessions driven from the editor: the standard surface (code actions,
//! `workspace/executeCommand`, `$/progress`, `window/*` messages, approvals through
//! `window/showMessageRequest`) and the `agent/*` extension share one session registry.
//!
//! A request that starts work answers at once: the run goes on in a task of its own,
//! reporting through `$/progress` and `agent/event`, so no request waits on the model
//! (Helix times requests out after 20 s).

mod approver;
mod diagnostics;
mod events;
pub(crate) mod keep_rate;
mod prompts;
mod review;
mod runner;
mod sessions;
mod sink;

pub use diagnostics::ClientDiagnostics;
pub use prompts::{Excerpt, TaskKind, task_prompt};
pub use review::{PendingChange, reject_plan};
pub use runner::{Prompt, compact, create_session, load_saved_sessions, start_run};
pub use sessions::{Entry, Sessions};
