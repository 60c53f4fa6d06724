//! The orchestrator: a [`Session`] runs the agent loop (build the request → stream the
//! model → run the tool calls → append the results → repeat) until the model stops
//! calling tools, the [`Budget`] runs out, the user cancels, or the provider fails.
//!
//! Main types: [`Session`] (the loop and its transcript), [`SessionConfig`] ([`Mode`],
//! [`Budget`], [`CompactionConfig`]), [`ToolSet`] (the tools offered, by name),
//! [`StaticContext`] and [`system_prompt`] (the stable prompt prefix), [`Event`]
//! (progress out through a channel: steps, text, tool calls with their arguments, a
//! command's output while it runs, the plan, provider errors), [`Metrics`],
//! [`Trajectory`] (JSONL log), [`build_session`] (the one session builder, which the
//! session host calls for every front end) and [`render_event`] (an event as a line).
//!
//! **Invariants.**
//! - Every tool call gets exactly one result: an unknown tool, broken JSON, a refused
//!   mutation in a read-only mode, a timeout, a cancel or a panicking tool all become a
//!   classified error result, never a crash and never a missing result.
//! - Read-only calls of a turn run in parallel; mutating calls run one at a time, in
//!   the order the model made them (one fair read/write lock per session).
//! - Nothing is lost: a provider failure or a cancel ends the run with a [`Status`] but
//!   keeps the transcript, and [`Session::resume`] goes on from there.
//! - The system prompt and tool list are fixed for a model, so the prefix of every
//!   request is byte-identical and provider prompt caches hit.
//! - Compaction never drops the user's own messages, nor splits a call from its result.
//! - `auto` ([`Session::with_router`]) asks the router before every model call; a
//!   change of model is a hand-over like [`Session::switch_model`] (own tools and
//!   system prompt, a takeover note, calls to tools it lacks rendered as text), and
//!   every route is in the trajectory and an [`Event::Routed`].
//! - No LSP here: the server drives sessions and turns events into its protocol.
//!
//! ```
//! use std::sync::Arc;
//! use agentls_agent::{Session, SessionConfig, StaticContext, Status, ToolSet};
//! use agentls_tools::ToolContext;
//! use agentls_model::{ClientOptions, HttpProvider, ModelProfile, ProviderSpec, WireFormat};
//! use agentls_testkit::model_server::{ModelServer, Turn};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let server = ModelServer::start().await.unwrap();
//! server.push_turn(Turn::text("Nothing to do.").usage(100, 0, 4));
//! let spec = ProviderSpec {
//!     name: "fixture".into(), wire: WireFormat::OpenaiChat, base_url: server.url(),
//!     model_id: "m".into(), key: None, profile: ModelProfile::default(),
//! };
//! let provider = Arc::new(HttpProvider::new(spec, ClientOptions::default()).unwrap());
//! let dir = tempfile::tempdir().unwrap();
//! let ctx = ToolContext::on_disk(dir.path());
//! let context = StaticContext::gather(dir.path(), &[]).await;
//! let mut session = Session::new(provider, ToolSet::default(), ctx, SessionConfig::default(), context);
//! let status = session.run("Is there anything to do?").await;
//! assert_eq!(status, Status::Done { answer: "Nothing to do.".into() });
//! assert_eq!(session.metrics().steps, 1);
//! # });
//! ```

pub mod build;
pub mod compaction;
pub mod config;
pub mod context;
mod dispatch;
pub mod event;
pub mod final_check;
pub(crate) mod git;
pub mod metrics;
pub mod render;
pub mod repeats;
pub mod replay;
pub mod saved;
mod session;
pub mod solve;
pub mod status;
mod subagent;
pub mod toolset;
pub mod trajectory;
pub mod verify;
pub mod workspace;
pub mod workspace_paths;

pub use agentls_tools::{AllowAll, DenyAll};
pub use build::{
    BuildHooks, BuiltSession, HeadlessError, HeadlessOptions, HeadlessOutcome, WrapEdits,
    build_session,
};
pub use compaction::{Artifacts, ReadArtifact};
pub use config::{Budget, CompactionConfig, Mode, SessionConfig};
pub use context::{StaticContext, system_prompt};
pub use dispatch::CallOutcome;
pub use event::{Event, EventSender, PlanItem, SessionStatus};
pub use metrics::Metrics;
pub use render::render_event;
pub use saved::{Pruned, Retention, SavedSession, SessionStore, StoreError};
pub use session::{Session, new_session_id};
pub use status::Status;
pub use subagent::Subagents;
pub use toolset::ToolSet;
pub use trajectory::Trajectory;
pub use verify::{LspChecker, VerifyConfig};
pub use workspace::{adopt_unnamed_vectors, workspace_context};
