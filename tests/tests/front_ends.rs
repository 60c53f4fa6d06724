//! Front ends reach a session only through its submission queue (issue 61): the
//! language server, ACP, `agentls run`, the demo (all in `server/src`) and `agentls eval`
//! (`crates/eval/src`) submit ops to a `SessionHandle` and render its events.
//!
//! Most of this the compiler holds: the session's cancel token is `agentls-host`'s
//! alone (`pub(crate)`), `Adapters` takes no approver and there is no front-end save
//! mode. What it cannot hold, this scan does, on the front ends' source without its
//! comments:
//! - no `cancel_token(`: the agent `Session`'s tokens, reachable through
//!   `HostedSession::session()`;
//! - no `Approver for`: an approver of a front end's own, asked around the queue;
//! - no use of the host's own `Op` (`agentls_host::Op`), with which a front end would
//!   run a turn on a session it holds (`HostedSession::submit`) instead of queueing
//!   the protocol's ops;
//! - no `host.save(` but where the editor writes the record of a session listed from
//!   the store and not built in this server (no session, no queue: the registry's own
//!   record).

use std::path::{Path, PathBuf};

/// What no front end's code says, and why.
const FORBIDDEN: &[(&str, &str)] = &[
    (
        "cancel_token(",
        "the session's cancel token: submit Op::Interrupt",
    ),
    (
        "Approver for",
        "an approver of the front end's own: answer approval events with Op::Approval",
    ),
    (
        "agentls_host::Op",
        "the host's Op runs a turn on a held session: submit the protocol's ops",
    ),
];

/// `host.save(` is allowed in this file alone (see the module's doc).
const SAVE_ALLOWED_IN: &str = "server/src/agent/sessions.rs";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `source` without `//` comments, and with `use agentls_host::{A, Op, B}` trees
/// written out as `agentls_host::Op` for each name, so a grouped import is seen too.
fn code(source: &str) -> String {
    let mut out = String::new();
    for line in source.lines() {
        let line = match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    let mut expanded = out.clone();
    let mut rest = out.as_str();
    while let Some(at) = rest.find("agentls_host::{") {
        let tree = &rest[at + "agentls_host::{".len()..];
        let end = tree.find('}').unwrap_or(tree.len());
        for name in tree[..end].split(',') {
            expanded.push_str(&format!("\nagentls_host::{}\n", name.trim()));
        }
        rest = &tree[end..];
    }
    expanded
}

/// Each forbidden use in `source` (file `rel`): `rel: pattern (why)`.
fn violations(rel: &str, source: &str) -> Vec<String> {
    let code = code(source);
    let mut found = Vec::new();
    for (pattern, why) in FORBIDDEN {
        for (at, _) in code.match_indices(pattern) {
            let next = code[at + pattern.len()..].chars().next();
            // `agentls_host::Op` but not `agentls_host::OpenSomething`.
            if pattern.ends_with("::Op") && next.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            found.push(format!("{rel}: `{pattern}` ({why})"));
        }
    }
    if rel != SAVE_ALLOWED_IN && code.contains("host.save(") {
        found.push(format!(
            "{rel}: `host.save(` (the host saves a session: hand it the front end's part with Op::Save)"
        ));
    }
    found
}

#[test]
fn front_ends_reach_sessions_only_through_ops() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("server/src"), &mut files);
    rust_files(&root.join("crates/eval/src"), &mut files);
    assert!(
        files.len() > 50,
        "the front ends' source was not found under {}",
        root.display()
    );
    let mut report = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let source = std::fs::read_to_string(&file).unwrap_or_default();
        report.extend(violations(&rel, &source));
    }
    assert!(
        report.is_empty(),
        "front ends reaching around the session's queue:\n{}",
        report.join("\n")
    );
}

/// The scan sees what it should: each kind of reaching around, grouped imports too,
/// and not what comments say.
#[test]
fn the_scan_sees_reaching_around() {
    let bad = "use agentls_host::{Adapters,\n    Op, Spec};\n\
               let t = hosted.session().cancel_token();\n\
               impl agentls_tools::Approver for Mine {}\n\
               state.host.save(&record);\n";
    let found = violations("server/src/x.rs", bad);
    assert_eq!(found.len(), 4, "{found:?}");
    let fine = "// the cancel_token( of old; agentls_host::Op\n\
                use agentls_host::{Adapters, Emitted, SessionHandle};\n\
                let _ = \"http://x\"; handle.submit(Op::Interrupt);\n";
    assert!(violations("server/src/x.rs", fine).is_empty());
    assert!(violations(SAVE_ALLOWED_IN, "host.save(&self.to_saved(root));").is_empty());
}
