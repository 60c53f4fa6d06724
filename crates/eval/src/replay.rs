//! `agentls replay FILE`: re-runs a trajectory's tool calls against a workspace and
//! reports, call by call, whether each ended as recorded.

use std::io::Write;
use std::process::ExitCode;

use agentls_agent::ToolSet;

use crate::args::ReplayArgs;

/// Replays `args.file` in `args.workspace`; fails when any call ended differently.
pub fn run(args: ReplayArgs, out: &mut dyn Write) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let root = args.workspace.canonicalize()?;
    let replayed = runtime.block_on(async {
        let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
        let ctx = agentls_tools::ToolContext::on_disk(&root);
        agentls_agent::replay::replay(&args.file, &tools, &ctx).await
    })?;
    let mut differ = 0;
    for (i, r) in replayed.iter().enumerate() {
        let show = |c: &Option<String>| c.clone().unwrap_or_else(|| "ok".into());
        let mark = if r.matches() { "=" } else { "≠" };
        if !r.matches() {
            differ += 1;
        }
        writeln!(
            out,
            "{:>3} {} {}: recorded {}, now {}",
            i + 1,
            mark,
            r.name,
            show(&r.recorded),
            show(&r.now)
        )?;
    }
    writeln!(out, "{} calls, {} differ", replayed.len(), differ)?;
    runtime.shutdown_background();
    Ok(if differ == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
