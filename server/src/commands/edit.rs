//! `agentls apply-patch` and `agentls edit`: the edit engine on files on disk, for
//! conformance testing and scripts. Exactly the engine the agent uses; on failure nothing
//! is written and the reason goes to stderr. Syntax errors an edit introduces (tree-sitter,
//! for the index's languages) are reported after the summary; the edit still lands.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use agentls_edit::Format;
use agentls_tools::TreeSitterCheck;
use anyhow::Context;

/// Reads the edit from `input` (`-` or absent: stdin), applies it under `root`, prints the
/// summary to `out`. Returns failure with the engine's message on any refusal.
pub fn run(
    format: Format,
    root: &Path,
    input: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let text = match input {
        None => read_stdin()?,
        Some(p) if p == Path::new("-") => read_stdin()?,
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?
        }
    };
    let summary = agentls_edit::apply_to_dir(root, format, &text, Some(&TreeSitterCheck))?;
    write!(out, "{summary}")?;
    Ok(ExitCode::SUCCESS)
}

fn read_stdin() -> anyhow::Result<String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the edit from stdin")?;
    Ok(text)
}
