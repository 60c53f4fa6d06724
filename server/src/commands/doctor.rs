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
    // What only the model layer checks: each model's keys against its wire, the
    // router's and the summarizer's names.
    if let Err(e) = merged.config.models() {
        writeln!(out, "  problem: {e}")?;
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
    #[cfg(feature = "local")]
    writeln!(
        out,
        "  inline completion, local model   {}",
        agentls_local::configured::default_completion_plan()
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "editor settings for exact agent edits (without them, edits wait for a quiet buffer and are checked and repaired after they land):"
    )?;
    for (editor, setting) in crate::client_advice::SETTINGS {
        writeln!(out, "  {editor:<8} {setting}")?;
    }
    writeln!(out)?;
    completion(&merged.config, out)?;
    writeln!(out)?;
    language_servers(workspace, &merged.config, out)?;
    writeln!(out)?;
    mcp_servers(&merged.config, out)?;
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

/// Code completion: on or off, which model answers and how, what bounds its cost.
fn completion(config: &config::Config, out: &mut dyn Write) -> std::io::Result<()> {
    let c = &config.completion;
    writeln!(
        out,
        "code completion (textDocument/inlineCompletion, docs/completion.md):"
    )?;
    let languages: Vec<String> = c
        .languages
        .iter()
        .map(|(l, on)| format!("{l} {}", if *on { "on" } else { "off" }))
        .collect();
    let state = if c.enabled { "on" } else { "off" };
    if languages.is_empty() {
        writeln!(out, "  {state}")?;
    } else {
        writeln!(out, "  {state}; {}", languages.join(", "))?;
    }
    let engine = if agentls_model::local::is_registered() {
        "the embedded engine (in this build)"
    } else {
        "the embedded engine, NOT in this build (rebuild with --features local): completion answers nothing"
    };
    let how = match &c.model {
        None => format!("{} (default), {engine}", c.model_name()),
        Some(name) => match config.models().map(|m| m.models.get(name).cloned()) {
            Ok(Some(m)) if m.wire.is_http() => format!(
                "{name}: {}/completions (OpenAI-compatible, with suffix)",
                m.base_url.unwrap_or_default().trim_end_matches('/')
            ),
            Ok(Some(_)) => format!("{name}: {engine}"),
            Ok(None) => format!("{name}: NOT configured in [models]: completion answers nothing"),
            Err(e) => format!("{name}: [models] is invalid: {e}"),
        },
    };
    writeln!(out, "  model            {how}")?;
    writeln!(
        out,
        "  cost             a typed request waits {} ms; the next one answers it with nothing, \
         without a model call; at most one completion at a time; up to {} tokens, {} lines",
        c.debounce_ms, c.max_tokens, c.max_lines
    )?;
    writeln!(
        out,
        "  helix items      {}",
        if c.completion_items { "on" } else { "off" }
    )
}

/// The configured MCP servers, each connected once: its tools, or why it failed.
fn mcp_servers(config: &config::Config, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "MCP servers ([mcp.servers], tools offered as NAME__tool):"
    )?;
    let mcp = &config.mcp;
    if mcp.servers.is_empty() {
        return writeln!(out, "  none configured");
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return writeln!(out, "  cannot check: {e}"),
    };
    let (connected, failed) = runtime.block_on(agentls_mcp::connect_all(mcp));
    for server in &connected {
        let names: Vec<&str> = server.tools.iter().map(|t| t.spec().name).collect();
        writeln!(
            out,
            "  {:<16} {} tool(s): {}",
            server.name,
            names.len(),
            names.join(", ")
        )?;
    }
    for (name, why) in &failed {
        writeln!(out, "  {name:<16} FAILED: {why}")?;
    }
    for (name, spec) in &mcp.servers {
        if !spec.enabled {
            writeln!(out, "  {name:<16} disabled")?;
        }
    }
    drop(connected);
    runtime.shutdown_background();
    Ok(())
}

/// The workspace's language servers: which were found (file types present, program on
/// `PATH`, `[language_servers]`), each started once to measure its start and memory.
fn language_servers(
    workspace: &Path,
    config: &config::Config,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "language servers (verify on edit and the diagnostics tool; started by the first agent session):"
    )?;
    let verify = config.verify();
    if !verify.enabled {
        return writeln!(out, "  off ([verify] enabled = false)");
    }
    let Some(checker) = agentls_agent::LspChecker::detect(workspace, &verify) else {
        return writeln!(
            out,
            "  none found for this workspace's file types on PATH (pyright-langserver or pylsp, gopls, typescript-language-server, clangd; rust-analyzer when [language_servers.rust-analyzer] enabled = true)"
        );
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return writeln!(out, "  problem: {e}"),
    };
    let servers = checker.servers().clone();
    let (found, started, children) = runtime.block_on(async {
        let found = servers.found().await;
        let started = servers.start_all().await;
        let children = servers.children().await;
        (found, started, children)
    });
    for f in &found {
        let name = &f.spec.name;
        let start = match started.iter().find(|(n, _)| n == name).map(|(_, r)| r) {
            Some(Ok(took)) => format!("started in {took:.1?}"),
            Some(Err(e)) => format!("did not start: {e}"),
            None => "not started".to_owned(),
        };
        let memory = children
            .iter()
            .find(|(n, _, _)| n == name)
            .and_then(|(_, _, kib)| *kib)
            .map(|kib| format!(", {:.1} MiB resident", kib as f64 / 1024.0))
            .unwrap_or_default();
        writeln!(
            out,
            "  {name:<28} {} (.{}): {start}{memory}",
            f.program.display(),
            f.spec.filetypes.join(" ."),
        )?;
    }
    writeln!(
        out,
        "  wait for diagnostics after an edit: {} ms",
        verify.wait_ms
    )?;
    Ok(())
}
