//! `git` on the host, with nothing from the repository executed. A workspace brings its
//! own `.git/config` (an archive download, a cloned repository): `core.fsmonitor`, a
//! filter driver or a hooks path there would run its command on the host, outside the
//! sandbox, when we merely ask `git status` for the session context.
//!
//! Every git call here goes through [`command`], which overrides each configuration key
//! that names a program, through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/
//! `GIT_CONFIG_VALUE_n`: those beat every configuration file (the repository's, and
//! anything it includes) and, unlike `-c key=value`, take the key and the value apart,
//! so a driver named `a=b` cannot split the override. Driver sections have names the
//! repository chooses (`filter.<name>.clean`), so the keys set in the repository are
//! listed first (`git config --list --name-only`, which executes nothing) and each
//! program-naming one is emptied. If that listing fails, no git command runs.
//!
//! Why not `gix`, which the project's guide prefers: its `status` feature builds in
//! 1 min 18 s on 2 cores (102 CPU-seconds, 123 crates; gix 0.77, default features off),
//! within budget, but its status runs the repository's filter drivers exactly as git
//! does (`gix::filter` spawns `filter.<name>.clean`/`process` from the repository's
//! configuration), so it would need the same overrides, and it does not print git's
//! `--short --branch` format. The git binary with these overrides is tested against
//! each attack (`context::tests::git_status_runs_nothing_from_the_repository`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Keys that name a program git may run, with the value that runs nothing (or only a
/// harmless built-in behaviour), whatever the repository says.
const FIXED: &[(&str, &str)] = &[
    // Runs on every status to list changed files.
    ("core.fsmonitor", "false"),
    // post-index-change, and any hook a later git command would run.
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("pager.status", "false"),
    ("diff.external", ""),
    ("core.sshCommand", ""),
    ("core.gitProxy", ""),
    ("core.askPass", ""),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    // An empty value resets the helper list.
    ("credential.helper", ""),
    // Not executing, but read from a file the repository names.
    ("core.attributesFile", "/dev/null"),
];

/// Whether `key` (as `git config --list --name-only` prints it: section and variable
/// lower-cased, subsection as written) names a program in a section the repository
/// names: filter, diff and merge drivers.
fn runs_a_program(key: &str) -> bool {
    let Some((section, rest)) = key.split_once('.') else {
        return false;
    };
    let Some((_, var)) = rest.rsplit_once('.') else {
        return false;
    };
    match section {
        "filter" => matches!(var, "clean" | "smudge" | "process"),
        "diff" => matches!(var, "textconv" | "command"),
        "merge" => var == "driver",
        _ => false,
    }
}

/// The overrides for the repository at `root`: [`FIXED`], then every driver program set
/// in its configuration emptied (a required filter made optional, so git does not fail
/// for want of it). `None` when the configuration cannot be listed: then git is not run.
pub(crate) async fn overrides(root: &Path) -> Option<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = FIXED
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut list = base(root, &out);
    list.args(["config", "-z", "--list", "--name-only", "--includes"]);
    let listed = run(list).await?;
    for key in listed.stdout.split(|&b| b == 0) {
        let Ok(key) = std::str::from_utf8(key) else {
            // A name git printed that we cannot pass back: refuse rather than guess.
            return None;
        };
        if runs_a_program(key) {
            out.push((key.to_owned(), String::new()));
            if let Some(driver) = key.strip_prefix("filter.").and_then(|r| r.rsplit_once('.')) {
                out.push((format!("filter.{}.required", driver.0), "false".into()));
            }
        }
    }
    Some(out)
}

/// A `git` command in `root` with `overrides` in force, no optional locks (no index
/// writes behind the user's back), no prompts, stdin closed.
fn base(root: &Path, overrides: &[(String, String)]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new("git");
    c.current_dir(root)
        .arg("--no-optional-locks")
        .arg("--no-pager")
        .env("GIT_CONFIG_COUNT", overrides.len().to_string())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (i, (k, v)) in overrides.iter().enumerate() {
        c.env(format!("GIT_CONFIG_KEY_{i}"), k)
            .env(format!("GIT_CONFIG_VALUE_{i}"), v);
    }
    c
}

/// A hardened git command for `root` (see the module doc), or `None` when the
/// repository's configuration cannot be listed.
pub(crate) async fn command(root: &Path) -> Option<tokio::process::Command> {
    let o = overrides(root).await?;
    Some(base(root, &o))
}

/// Runs `c` for at most 5 s; its output when it exits 0.
async fn run(mut c: tokio::process::Command) -> Option<std::process::Output> {
    let out = tokio::time::timeout(Duration::from_secs(5), c.output())
        .await
        .ok()?
        .ok()?;
    out.status.success().then_some(out)
}

/// `git status --short --branch` in `root`, submodules left out (each would be a
/// repository with configuration of its own), or `None` outside a repository.
pub(crate) async fn status(root: &Path) -> Option<String> {
    let mut c = command(root).await?;
    c.args(["status", "--short", "--branch", "--ignore-submodules=all"]);
    let out = run(c).await?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_programs_are_recognised_by_section_and_variable() {
        assert!(runs_a_program("filter.evil.clean"));
        assert!(runs_a_program("filter.a=b.c.process"));
        assert!(runs_a_program("diff.x.textconv"));
        assert!(runs_a_program("merge.x.driver"));
        assert!(!runs_a_program("filter.evil.required"));
        assert!(!runs_a_program("core.filemode"));
        assert!(!runs_a_program("diff.external"));
    }
}
