//! Measuring the agent and the search: `agentls eval` runs a suite of tasks
//! (`fixtures/tasks`: each a repository, a prompt and a hidden check) through the
//! session host, one fresh copy and sandbox per attempt, and reports pass@1 and pass@k
//! with intervals ([`suite`]); `eval compare`, `merge` and `report` read the result
//! files ([`results`], [`html`]); `agentls replay` re-runs a trajectory's tool calls
//! ([`replay`]). Every `agentls bench` lives here too, so that the library crates carry
//! no measurement code: `bench index` times the index and grep against ctags and
//! ripgrep ([`bench_index`]); `bench search` measures semantic search on retrieval sets
//! ([`bench_search`]); `bench heavy` drives the server over its stdio under heavy files
//! ([`bench_heavy`], whose driver needs the `bench-heavy` feature); with the `local`
//! feature, `bench model` measures the embedded engine against llama.cpp called
//! directly (`bench_model`) and `bench complete` inline completion against llama.cpp's
//! infill path (`bench_complete`, with the reference in `bench_fim`); `bench next-edit`
//! next-edit suggestions over cases mined from public repositories' histories
//! ([`bench_next_edit`]).
//!
//! **Boundary:** the binary parses the command line ([`args`]) and sets up logging;
//! everything else about a measurement lives here. Agent changes are decided by what
//! this crate measures, not by one run.

pub mod args;
pub mod bench_complete;
pub mod bench_decode;
#[cfg(feature = "local")]
pub mod bench_fim;
pub mod bench_heavy;
pub mod bench_index;
#[cfg(feature = "local")]
pub mod bench_model;
pub mod bench_next_edit;
pub mod bench_search;
pub mod html;
pub mod replay;
pub mod results;
pub mod solve;
pub mod suite;

pub use suite::run;
