//! How agentls talks to language models: one provider-neutral request, streamed
//! answers over the three wire formats that matter, retries, profiles, token
//! accounting, and the `auto` router.
//!
//! A [`ChatRequest`] goes to a [`Provider`] (in practice an [`HttpProvider`] speaking
//! OpenAI chat completions, the OpenAI Responses API, or Anthropic Messages), which
//! answers with an [`EventStream`] of [`StreamEvent`]s: text deltas, tool calls (start,
//! argument deltas, end, each with the provider's id), [`Usage`], and a [`StopReason`].
//! [`collect`] folds a stream into a [`Response`]. [`ModelsConfig`] reads
//! `[models.NAME]` tables and builds providers; [`ModelProfile`] says what a model
//! can do and costs; [`Router`] picks a model for `auto`; [`lenient`] reads tool calls
//! that small models write as text.
//!
//! Code completion goes through a [`Completer`] ([`complete`]: the fill-in-the-middle
//! request, the [`StopRules`] every backend applies): the embedded engine's
//! ([`local::completer`]) or an [`HttpCompleter`] on an OpenAI-compatible
//! `/completions` endpoint ([`completions`]); [`ModelsConfig::completer`] picks one.
//!
//! `wire = "local"` models run in process on the embedded engine (crate
//! `agentls-local`), which depends on this crate: the binary hands its constructor in
//! once with [`local::register`], and [`ModelsConfig::provider`] calls it. Without
//! the registration (a build without the `local` feature) a local model is a clear
//! UnexpectedEnvironment error.
//!
//! **Invariants.**
//! - Every failure is a [`ModelError`] classified as ProviderError, Timeout,
//!   UserAborted (or InvalidArguments / UnexpectedEnvironment for configuration), with
//!   the provider's message kept.
//! - A call is retried (backoff, jitter, `Retry-After`) only while nothing has been
//!   delivered to the consumer: no event is ever seen twice.
//! - Cancelling the token or dropping the stream stops the HTTP request.
//! - API keys come from the environment or the user's config only and never reach a
//!   log line: [`Secret`] prints as `[redacted]`, header values are marked sensitive,
//!   and provider messages that echo a key are redacted.
//! - No LSP types here, and nothing of the agent: the request types are the whole
//!   interface. No inference engine either: only the [`local`] hook.
//!
//! A call, end to end, against the fixture model server that all tests use:
//!
//! ```
//! use agentls_model::{CancellationToken, ChatRequest, ClientOptions, HttpProvider, ModelProfile};
//! use agentls_model::{Provider, ProviderSpec, StopReason, WireFormat, collect};
//! use agentls_testkit::model_server::{ModelServer, Turn};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let server = ModelServer::start().await.unwrap();
//! server.push_turn(Turn::text("Hi there!").usage(12, 0, 3));
//! let spec = ProviderSpec {
//!     name: "local".into(),
//!     wire: WireFormat::OpenaiChat,
//!     base_url: server.url(),
//!     model_id: "qwen2.5-coder:7b".into(),
//!     key: None,
//!     profile: ModelProfile::builtin("qwen2.5-coder:7b"),
//! };
//! let provider = HttpProvider::new(spec, ClientOptions::default()).unwrap();
//! let request = ChatRequest::new(Some("You are terse.".into()), "Say hi");
//! let answer = collect(provider.stream(&request, CancellationToken::new())).await.unwrap();
//! assert_eq!((answer.text.as_str(), answer.stop), ("Hi there!", StopReason::EndTurn));
//! assert_eq!((answer.usage.input, answer.usage.output), (12, 3));
//! # });
//! ```
//!
//! Profiles, the text-call parser and the router need no network:
//!
//! ```
//! use agentls_model::{ModelProfile, lenient, Router, RouterConfig, RouterMode, RouteInput, Phase};
//!
//! // Profiles: apply_patch for models trained on it, str_replace for the rest.
//! let p = ModelProfile::builtin("gpt-4.1");
//! assert_eq!(p.edit_format, agentls_model::EditFormat::ApplyPatch);
//!
//! // A small model wrote its call as text.
//! let found = lenient::parse_tool_calls(
//!     "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}</tool_call>",
//!     &["read_file"],
//! );
//! assert_eq!(found.calls[0].name, "read_file");
//!
//! // The router says which model and why.
//! let config = RouterConfig { fast: "small".into(), strong: "big".into(), mode: RouterMode::Auto, threshold: 4 };
//! let route = Router::new(config, 32_000).route(&RouteInput::new(Phase::Plan));
//! assert_eq!(route.model, "small");
//! assert_eq!(route.reasons, ["+3 planning", "score 3 vs threshold 4"]);
//! ```

pub mod client;
pub mod complete;
pub mod completions;
pub mod config;
pub mod error;
pub mod event;
pub mod lenient;
pub mod local;
pub mod next_edit;
pub mod paths;
pub mod profile;
pub mod response;
pub mod retry;
pub mod router;
pub mod secret;
pub mod sse;
pub mod types;
pub mod usage;
mod wire;

pub use client::{
    ClientOptions, DecodeStats, EventStream, HttpProvider, ManyEvent, ManyStream, Provider,
    ProviderSpec, ScoreFuture, SequenceEnds,
};
pub use complete::{Completer, ContextChunk, FimAnswer, FimFuture, FimRequest, FimStop, StopRules};
pub use completions::{CompleterSpec, HttpCompleter};
pub use config::{ModelConfig, ModelsConfig};
pub use error::{ErrorClass, ModelError};
pub use event::{RUNAWAY_STOP, StopReason, StreamEvent};
pub use local::{LocalModelSpec, LocalSource};
pub use paths::{EditArgs, PathCheck, PathConstraint, PathKind};
pub use profile::{EditFormat, ModelProfile, ProfileOverrides, PromptVariant, Solver, WireFormat};
pub use response::{Accumulator, Response, collect, collect_many};
pub use retry::RetryPolicy;
pub use router::{Phase, Route, RouteInput, Router, RouterConfig, RouterMode, Tier};
pub use secret::Secret;
pub use tokio_util::sync::CancellationToken;
pub use types::{ChatRequest, Message, Part, Role, Sampling, ToolCall, ToolDef, ToolResult};
pub use usage::{Price, Usage};
pub use wire::decode_sse_body;
