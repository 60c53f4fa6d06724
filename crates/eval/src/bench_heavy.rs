//! `agentls bench heavy`: the server under heavy files, measured over the real binary
//! (this executable, started as a language server) on stdio.
//!
//! - Latency: `workspace/symbol` p50/p95 while a large Python buffer (10 MB by default)
//!   is re-parsed after each one-line `didChange`, against the same queries with the
//!   buffer open and no parse running; prints both and the ratio (goal: within 2x).
//! - Memory: resident memory of a fresh server, after opening N documents (2,000 of
//!   100 KB by default), right after closing them all, and some seconds later; without
//!   an embedding model and with the static one (when fetched); prints fresh against
//!   after-close (goal: within 50 MiB), and with a model the semantic index's chunks
//!   and vectors at each step.
//!
//! Documents live under a temporary workspace and are not on disk: closed, they are
//! gone (a closed buffer reverts to its disk file, here none).
//!
//! The driver speaks LSP through the test kit's client, so it is built only with the
//! `bench-heavy` feature (the server's of the same name): the shipped binary links no
//! test kit. Without it, `agentls bench heavy` says how to build it:
//! `cargo run --release -p agentls-server --features bench-heavy -- bench heavy`.

use std::process::ExitCode;

#[cfg(feature = "bench-heavy")]
mod drive;
mod options;

pub use options::Options;

/// Runs the benchmark and prints its report on stdout; without the `bench-heavy`
/// feature, an error saying how to build an `agentls` that has it.
pub fn main(options: Options) -> anyhow::Result<ExitCode> {
    #[cfg(feature = "bench-heavy")]
    return drive::main(options);
    #[cfg(not(feature = "bench-heavy"))]
    {
        let _ = options;
        anyhow::bail!(
            "this agentls was built without `agentls bench heavy`; build it with `cargo build --release -p agentls-server --features bench-heavy`"
        )
    }
}
