//! `agentls doctor`: what this machine offers, in plain text for a person.

use std::io::Write;
use std::path::Path;

use crate::config;

/// Writes the report to `out`.
pub fn run(workspace: &Path, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "agentls {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(
        out,
        "os: {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )?;
    writeln!(
        out,
        "cores: {}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    )?;
    writeln!(out)?;
    writeln!(out, "configuration (lowest to highest precedence):")?;
    let user = config::user_config_path();
    let ws = workspace.join(config::WORKSPACE_FILE);
    let found = |p: &Path| if p.is_file() { "found" } else { "not found" };
    match &user {
        Some(p) => writeln!(out, "  user file       {} ({})", p.display(), found(p))?,
        None => writeln!(
            out,
            "  user file       (no config directory on this system)"
        )?,
    }
    writeln!(out, "  workspace file  {} ({})", ws.display(), found(&ws))?;
    writeln!(
        out,
        "  then the client's initializationOptions and didChangeConfiguration"
    )?;
    let merged = config::load_files(Some(workspace));
    for problem in &merged.problems {
        writeln!(out, "  problem: {problem}")?;
    }
    let toml = toml::to_string_pretty(&merged.config).unwrap_or_else(|e| format!("# {e}\n"));
    writeln!(out, "merged configuration:")?;
    for line in toml.lines() {
        writeln!(out, "  {line}")?;
    }
    writeln!(out)?;
    writeln!(out, "features:")?;
    writeln!(out, "  lsp server over stdio            available")?;
    writeln!(out, "  text sync (utf-8/16/32)          available")?;
    writeln!(out, "  agentls/viewFileText             available")?;
    writeln!(out, "  edit engine (apply-patch, edit)  available")?;
    writeln!(out)?;
    writeln!(
        out,
        "editor settings for exact agent edits (without them, edits wait for a quiet buffer and are checked and repaired after they land):"
    )?;
    for (editor, setting) in crate::client_advice::SETTINGS {
        writeln!(out, "  {editor:<8} {setting}")?;
    }
    writeln!(out)?;
    writeln!(out, "sandbox (for the agent's commands):")?;
    for line in agentls_sandbox::probe().to_string().lines() {
        writeln!(out, "  {line}")?;
    }
    writeln!(out, "sandbox limits (defaults):")?;
    for line in agentls_sandbox::Limits::default().describe() {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}
