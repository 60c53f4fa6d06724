//! The stable prefix of every request: the system prompt for the model's profile and
//! mode, then the static context of the workspace. Built once per session and never
//! changed by the loop, so provider prompt caches hit from the second step on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentls_model::{ModelProfile, PromptVariant};

use crate::config::Mode;

/// Files whose text is given to the model as project rules, in this order.
pub const RULE_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md", ".cursorrules"];

/// Longest rules text kept per file (bytes); the rest is cut with a note.
const MAX_RULES_BYTES: usize = 16 * 1024;
/// Longest `git status` kept (bytes).
const MAX_GIT_BYTES: usize = 4 * 1024;

/// What the model is told about the machine and the workspace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StaticContext {
    /// Operating system and architecture.
    pub os: String,
    /// Workspace root.
    pub root: PathBuf,
    /// `git status --short --branch`, when the root is in a repository.
    pub git_status: Option<String>,
    /// Open and recently edited files (relative to the root where possible).
    pub open_files: Vec<String>,
    /// Project rules: `(file name, text)`.
    pub rules: Vec<(String, String)>,
}

impl StaticContext {
    /// Gathers the context of `root`. Never fails: what cannot be read is left out.
    pub async fn gather(root: &Path, open_files: &[PathBuf]) -> Self {
        let mut rules = Vec::new();
        for name in RULE_FILES {
            if let Some(text) = read_capped(&root.join(name)).await {
                rules.push(((*name).to_owned(), text));
            }
        }
        // .cursor/rules/*.mdc (and .md), sorted for a stable prefix.
        if let Ok(mut dir) = tokio::fs::read_dir(root.join(".cursor").join("rules")).await {
            let mut found = Vec::new();
            while let Ok(Some(entry)) = dir.next_entry().await {
                let p = entry.path();
                if matches!(p.extension().and_then(|e| e.to_str()), Some("mdc" | "md")) {
                    found.push(p);
                }
            }
            found.sort();
            for p in found {
                if let Some(text) = read_capped(&p).await {
                    let name = p.strip_prefix(root).unwrap_or(&p).display().to_string();
                    rules.push((name, text));
                }
            }
        }
        let open_files = open_files
            .iter()
            .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
            .collect();
        Self {
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            root: root.to_path_buf(),
            git_status: git_status(root).await,
            open_files,
            rules,
        }
    }

    /// The context as prompt text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# Environment\n");
        out.push_str(&format!("OS: {}\n", self.os));
        out.push_str(&format!("Workspace root: {}\n", self.root.display()));
        if let Some(git) = &self.git_status {
            out.push_str("\n# git status\n");
            out.push_str(git.trim_end());
            out.push('\n');
        }
        if !self.open_files.is_empty() {
            out.push_str("\n# Open files\n");
            for f in &self.open_files {
                out.push_str(&format!("- {f}\n"));
            }
        }
        for (name, text) in &self.rules {
            out.push_str(&format!("\n# Project rules from {name}\n"));
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

async fn read_capped(path: &Path) -> Option<String> {
    let bytes = tokio::fs::read(path).await.ok()?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > MAX_RULES_BYTES {
        let cut = floor_char_boundary(&text, MAX_RULES_BYTES);
        text.truncate(cut);
        text.push_str("\n[… cut]");
    }
    Some(text)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

async fn git_status(root: &Path) -> Option<String> {
    let run = tokio::process::Command::new("git")
        .args(["status", "--short", "--branch"])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .ok()?
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.len() > MAX_GIT_BYTES {
        let cut = floor_char_boundary(&text, MAX_GIT_BYTES);
        text.truncate(cut);
        text.push_str("\n[… more changes]");
    }
    Some(text)
}

/// The system prompt: instructions for the profile's prompt variant and the mode, then
/// the static context. Deterministic for equal inputs.
pub fn system_prompt(profile: &ModelProfile, mode: Mode, context: &StaticContext) -> String {
    let mut out = String::new();
    out.push_str(match profile.prompt_variant {
        PromptVariant::Compact => COMPACT,
        _ => BASE,
    });
    out.push('\n');
    out.push_str(match mode {
        Mode::Agent => AGENT_MODE,
        Mode::Ask => ASK_MODE,
        Mode::Plan => PLAN_MODE,
    });
    out.push('\n');
    out.push_str(&context.render());
    out
}

const BASE: &str = "You are agentls, a coding agent working inside the user's editor. \
You read, search, edit and run code through tools until the task is done and verified. \
Search before you read; read before you edit; after editing, run the build or the tests \
that cover the change and fix what fails. Tool errors are messages for you: read them and \
correct the call. Paths are relative to the workspace root. Keep answers short; end with \
what you changed and how you verified it.";

const COMPACT: &str = "You are a coding agent. Use the tools to read, search, edit and \
run code. Call one tool at a time when unsure. Paths are relative to the workspace root. \
When done, answer briefly without calling tools.";

const AGENT_MODE: &str = "Mode: agent. You may edit files and run commands.";
const ASK_MODE: &str = "Mode: ask. Read-only: answer the question; do not try to change files.";
const PLAN_MODE: &str = "Mode: plan. Read-only: study the code, then answer with a numbered plan \
(files, changes, how to verify); do not change files.";

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn gathers_rules_in_a_stable_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.").unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "No unwrap.").unwrap();
        std::fs::create_dir_all(dir.path().join(".cursor/rules")).unwrap();
        std::fs::write(dir.path().join(".cursor/rules/b.mdc"), "B rule").unwrap();
        std::fs::write(dir.path().join(".cursor/rules/a.mdc"), "A rule").unwrap();
        let ctx = StaticContext::gather(dir.path(), &[dir.path().join("src/lib.rs")]).await;
        let names: Vec<&str> = ctx.rules.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "AGENTS.md",
                "CLAUDE.md",
                ".cursor/rules/a.mdc",
                ".cursor/rules/b.mdc"
            ]
        );
        assert_eq!(ctx.open_files, ["src/lib.rs"]);
        let prompt = system_prompt(&ModelProfile::default(), Mode::Ask, &ctx);
        assert!(prompt.contains("Mode: ask"));
        assert!(prompt.contains("Use tabs."));
        assert!(prompt.find("Use tabs.") < prompt.find("A rule"));
        // Same inputs, same bytes: the cacheable prefix does not drift.
        assert_eq!(
            prompt,
            system_prompt(&ModelProfile::default(), Mode::Ask, &ctx)
        );
    }
}
