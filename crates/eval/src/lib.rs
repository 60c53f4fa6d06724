//! Measuring the agent and the search: `agentls eval` runs a suite of tasks
//! (`fixtures/tasks`: each a repository, a prompt and a hidden check) through the
//! session host, one fresh copy and sandbox per attempt, and reports pass@1 and pass@k
//! with intervals ([`suite`]); `eval compare`, `merge` and `report` read the result
//! files ([`results`], [`html`]); `agentls replay` re-runs a trajectory's tool calls
//! ([`replay`]); `agentls bench search` measures semantic search on retrieval sets
//! ([`bench_search`]); `agentls bench complete` measures inline completion on the
//! embedded model against llama.cpp's infill path ([`bench_complete`], with the
//! `local` feature).
//!
//! **Boundary:** the binary parses the command line ([`args`]) and sets up logging;
//! everything else about a measurement lives here. Agent changes are decided by what
//! this crate measures, not by one run.

pub mod args;
pub mod bench_complete;
pub mod bench_decode;
pub mod bench_heavy;
pub mod bench_search;
pub mod html;
pub mod replay;
pub mod results;
pub mod solve;
pub mod suite;

pub use suite::run;
