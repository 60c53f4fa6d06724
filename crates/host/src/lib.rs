//! The session host: one core for every front end.
//!
//! The language server, `agentls run`, `agentls eval`, the demo and `agentls acp` each
//! open sessions through a [`Host`]: it holds the one configuration ([`config::load`]:
//! defaults, the user file, the workspace file, the command line; the server adds the
//! editor's settings), resolves models ([`models`]), builds the session
//! ([`agentls_agent::build_session`] on the front end's [`Adapters`]), records each
//! turn in the stats database ([`stats`]), judges the user's follow-ups
//! ([`satisfaction`]), saves and resumes sessions, and connects the configured MCP
//! servers ([`mcp`]). A front end supplies only its sinks (edits, client files,
//! terminal, its own tool context), sends [`Op`]s and renders the one event stream it
//! gets back (`agent/event`'s types). [`HostedSession::spawn`] puts the session on a
//! submission queue of the protocol's ops (prompt, interrupt, an approval's answer,
//! model and mode, compaction, the front end's part of the saved record): the front
//! end holds a [`SessionHandle`], approval requests come to it as events, and the
//! session's cancel token is this crate's alone.
//!
//! **Architecture invariant:** no front end builds `HeadlessOptions` or a
//! `RunRecorder` itself; what a session is, how it is recorded and saved, lives here.
//! The host knows nothing of LSP, ACP or terminals.
//!
//! ```no_run
//! # async fn demo() -> Result<(), String> {
//! use agentls_host::{Adapters, Host, HostOptions, Spec, config};
//! let config = config::load(&config::LoadOptions::default()).config;
//! let host = Host::new(config, HostOptions { front_end: "run", ..Default::default() });
//! let spec = Spec { workspace: ".".into(), ..Default::default() };
//! let (handle, mut events) = host.open(spec, Adapters::default()).await?.spawn();
//! let print = |event: &agentls_agent::Event| eprintln!("{event:?}");
//! // Every command the policy asks about is refused: nobody to ask here.
//! let refuse = |_id: &str, _what: &str| Some(false);
//! let turn = handle
//!     .prompt_to_end(&mut events, "Fix the failing test".into(), print, refuse)
//!     .await?;
//! # let _ = turn;
//! # Ok(()) }
//! ```

mod approvals;
pub mod config;
pub mod embedding;
mod host;
pub mod mcp;
pub mod models;
mod queue;
pub mod satisfaction;
mod saving;
pub mod stats;

pub use host::{Adapters, Host, HostError, HostOptions, HostedSession, Op, Spec, Turn};
pub use queue::{Emitted, SessionHandle, Submitter};
