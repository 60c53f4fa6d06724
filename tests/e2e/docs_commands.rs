//! Every `agentls …` command the README and `docs/` show in a shell block names a real
//! subcommand, and every `--flag` it passes is one that subcommand takes: each is
//! checked against the built binary's own `--help`, so a renamed flag or command fails
//! here rather than in a reader's terminal.

use std::path::Path;
use std::process::Command;

use crate::support::bin;

/// A command as `agentls …`, if `text` runs agentls: `agentls …`, a path ending in
/// `/agentls`, or `cargo run … -- …`.
fn as_agentls(text: &str) -> Option<String> {
    let text = text.trim().trim_start_matches("$ ");
    if text.starts_with("agentls ") {
        return Some(text.to_owned());
    }
    if let Some(rest) = text.split_once("/agentls ").map(|(_, r)| r) {
        return Some(format!("agentls {rest}"));
    }
    if text.contains("cargo run") && !text.contains(" --example ") {
        return text.split_once(" -- ").map(|(_, r)| format!("agentls {r}"));
    }
    None
}

/// The agentls command lines of `file`: in its shell blocks (continuation lines
/// joined) and in its inline code spans.
fn commands_in(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut found = Vec::new();
    let mut in_block = false;
    let mut in_shell = false;
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(fence) = trimmed.strip_prefix("```") {
            in_shell = !in_block && matches!(fence, "sh" | "bash" | "shell" | "console");
            in_block = !in_block;
            continue;
        }
        if in_shell {
            let joined = format!("{pending}{trimmed}");
            match joined.strip_suffix('\\') {
                Some(head) => pending = head.to_owned(),
                None => {
                    pending.clear();
                    found.extend(as_agentls(&joined));
                }
            }
        } else if !in_block {
            // Inline spans: `agentls …` between backticks.
            found.extend(line.split('`').skip(1).step_by(2).filter_map(as_agentls));
        }
    }
    found
}

/// The subcommand path of a command line (`eval compare`), and the flags it passes.
fn parse(command: &str) -> (Vec<String>, Vec<String>) {
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let path = words
        .iter()
        .take_while(|w| {
            w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-')
        })
        .map(|w| (*w).to_owned())
        .collect();
    let flags = command
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_owned)
        .collect();
    (path, flags)
}

/// `agentls PATH --help`, or why not.
fn help(path: &[String]) -> Result<String, String> {
    let out = Command::new(bin())
        .args(path)
        .arg("--help")
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn every_documented_command_and_flag_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in &files {
        for command in commands_in(file) {
            let (mut path, flags) = parse(&command);
            // A trailing word may be an argument (`model fetch NAME` in lower case):
            // drop words the binary does not know as a subcommand.
            let mut page = help(&path);
            while page.is_err() && !path.is_empty() {
                path.pop();
                page = help(&path);
            }
            let name = file.strip_prefix(&root).unwrap_or(file).display();
            match page {
                Err(e) => wrong.push(format!("{name}: `{command}`: {e}")),
                Ok(page) => {
                    for flag in flags {
                        if !page.contains(&flag) {
                            wrong.push(format!(
                                "{name}: `{command}`: `agentls {} --help` has no {flag}",
                                path.join(" ")
                            ));
                        }
                    }
                }
            }
            checked += 1;
        }
    }
    eprintln!("{checked} documented commands checked");
    assert!(
        checked >= 30,
        "only {checked} commands found: the scan is broken"
    );
    assert!(
        wrong.is_empty(),
        "documented commands that do not run:\n{}",
        wrong.join("\n")
    );
}
