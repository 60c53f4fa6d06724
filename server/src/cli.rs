//! Command-line interface: `agentls [serve]`, `agentls doctor`, …

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A language server that gives any LSP editor a coding agent.
///
/// With no subcommand, agentls serves LSP over stdio, which is what editors run.
#[derive(Debug, Parser)]
#[command(name = "agentls", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Options of `serve`, accepted without the subcommand too (editors run `agentls`
    /// or `agentls --stdio`).
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Language Server Protocol over stdio (the default).
    Serve(ServeArgs),
    /// Print what this machine offers: version, configuration found and merged, features.
    Doctor(DoctorArgs),
}

/// Options of `agentls serve`.
#[derive(Debug, Args, Clone, Default)]
pub struct ServeArgs {
    /// Speak LSP over stdin/stdout (the only transport; accepted because clients pass it).
    #[arg(long)]
    pub stdio: bool,

    /// Write logs to this file instead of stderr. The level comes from `AGENTLS_LOG`
    /// (a tracing filter such as `info` or `agentls=debug`; default `info`).
    #[arg(long, value_name = "PATH", env = "AGENTLS_LOG_FILE")]
    pub log_file: Option<PathBuf>,
}

/// Options of `agentls doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The workspace whose `agentls.toml` to read; the current directory by default.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}
