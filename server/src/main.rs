//! The `agentls` binary: the language server and its command-line tools.
//!
//! This crate is the only one (with `protocol`) that knows LSP and JSON-RPC. It stays
//! thin: handlers convert LSP input to library terms (`convert`), call the libraries, and
//! convert the answer back. See DESIGN.md at the workspace's side for the map.

mod acp;
mod agent;
mod cli;
mod client_advice;
mod commands;
mod completion;
mod convert;
mod edit_sink;
mod handlers;
mod indexing;
mod journal;
mod logging;
mod memory;
mod panic_guard;
mod progress;
mod semantic;
mod server;
mod state;
mod transport;

use agentls_host::{config, embedding};
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    memory::fewer_heap_arenas();
    let cli = cli::Cli::parse();
    match run(cli) {
        Ok(code) => code,
        // `agentls doctor | head`: the reader left, which is not our failure.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Not the LSP channel: the server never reaches this with stdout in use.
            eprintln!("agentls: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

fn run(cli: cli::Cli) -> anyhow::Result<ExitCode> {
    // `wire = "local"` models, for the server and every subcommand alike; without the
    // feature they fail with a message saying how to rebuild.
    #[cfg(feature = "local")]
    agentls_local::register();
    match cli.command {
        None => serve(cli.serve),
        Some(cli::Command::Serve(args)) => serve(args),
        Some(cli::Command::Doctor(args)) => {
            let workspace = match args.workspace {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            commands::doctor::run(&workspace, &mut std::io::stdout().lock())?;
            Ok(ExitCode::SUCCESS)
        }
        Some(cli::Command::Bench(args)) => match args.target {
            cli::BenchTarget::Index { corpus } => {
                let corpus = corpus
                    .or_else(agentls_eval::bench_index::default_corpus)
                    .ok_or_else(|| anyhow::anyhow!("no corpus: pass --corpus DIR"))?;
                let report = agentls_eval::bench_index::run(&corpus);
                write!(std::io::stdout().lock(), "{report}")?;
                Ok(ExitCode::SUCCESS)
            }
            cli::BenchTarget::Search {
                sets,
                limit,
                embedder,
                recall_only,
                vectors,
            } => agentls_eval::bench_search::main(sets, limit, &embedder, recall_only, vectors),
            cli::BenchTarget::Heavy(options) => agentls_eval::bench_heavy::main(options),
            cli::BenchTarget::Complete(options) => {
                logging::init(None)?;
                agentls_eval::bench_complete::main(options)
            }
            cli::BenchTarget::Decode(options) => agentls_eval::bench_decode::main(options),
            cli::BenchTarget::NextEdit(options) => {
                logging::init(None)?;
                agentls_eval::bench_next_edit::main(options)
            }
            cli::BenchTarget::Model {
                model,
                path,
                threads,
                flash_attention,
                kv_cache,
            } => commands::model::bench(model, path, threads, flash_attention, kv_cache),
        },
        // The embedding model runs without the `local` feature (agentls-embed, not llama.cpp).
        Some(cli::Command::Model(cli::ModelArgs {
            action: cli::ModelAction::Fetch { name: Some(name) },
        })) if name == embedding::MODEL_NAME => {
            let path = embedding::fetch_cli()?;
            writeln!(std::io::stdout().lock(), "{}", path.display())?;
            Ok(ExitCode::SUCCESS)
        }
        Some(cli::Command::Model(args)) => commands::model::run(args),
        Some(cli::Command::Demo(args)) => commands::model::demo(args),
        Some(cli::Command::ApplyPatch(args)) => commands::edit::run(
            agentls_edit::Format::ApplyPatch,
            &args.root,
            args.input.as_deref(),
            &mut std::io::stdout().lock(),
        ),
        Some(cli::Command::Run(args)) => commands::run::run(args),
        Some(cli::Command::Acp(args)) => acp::run(args),
        Some(cli::Command::Mcp(args)) => commands::mcp::run(args),
        Some(cli::Command::Eval(args)) => {
            logging::init(args.log_file.as_deref())?;
            agentls_eval::run(args)
        }
        Some(cli::Command::Stats(args)) => commands::stats::run(args),
        Some(cli::Command::Replay(args)) => {
            agentls_eval::replay::run(args, &mut std::io::stdout().lock())
        }
        Some(cli::Command::Edit(args)) => commands::edit::run(
            args.format.into(),
            &args.root,
            args.input.as_deref(),
            &mut std::io::stdout().lock(),
        ),
    }
}

fn serve(args: cli::ServeArgs) -> anyhow::Result<ExitCode> {
    logging::init(args.log_file.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(server::serve_stdio());
    tracing::info!("exited");
    // Tokio's stdin reader sits on a blocking thread that a client holding the pipe open
    // would keep alive; do not wait for it.
    runtime.shutdown_background();
    Ok(ExitCode::SUCCESS)
}
