//! Real child processes speaking LSP over stdio: a small fake server in Python
//! (`fake_server.py`) that can be told to hang or crash through the text it checks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentls_lspclient::{Checked, Found, LanguageServers, ServerSpec, Severity};

fn fake(root: &Path) -> LanguageServers {
    fake_with(root, &[])
}

/// The fake server with its flags (`--pull`, `--loading-ms N`).
fn fake_with(root: &Path, flags: &[&str]) -> LanguageServers {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py");
    let python = agentls_lspclient::config::which("python3", std::env::var_os("PATH").as_deref())
        .expect("python3 on PATH runs the fake language server");
    LanguageServers::with(
        root,
        vec![Found {
            spec: ServerSpec {
                name: "fake".into(),
                command: python.display().to_string(),
                args: std::iter::once(script.display().to_string())
                    .chain(flags.iter().map(|f| (*f).to_owned()))
                    .collect(),
                filetypes: vec!["fk".into()],
                language_id: "fake".into(),
            },
            program: python,
        }],
    )
}

const WAIT: Duration = Duration::from_secs(10);

fn errors(c: &Checked) -> Vec<u32> {
    match c {
        Checked::Problems { problems, .. } => problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .map(|p| p.line)
            .collect(),
        other => panic!("no diagnostics: {other:?}"),
    }
}

#[tokio::test]
async fn diagnostics_follow_each_text_sent() {
    let ws = tempfile::tempdir().unwrap();
    let servers = fake(ws.path());
    let file = ws.path().join("a.fk");
    assert_eq!(errors(&servers.check(&file, "ok\nBAD\n", WAIT).await), [2]);
    assert_eq!(
        errors(&servers.check(&file, "ok\nok\n", WAIT).await),
        Vec::<u32>::new()
    );
    assert_eq!(
        servers.check(&ws.path().join("a.txt"), "BAD", WAIT).await,
        Checked::NoServer
    );
    let children = servers.children().await;
    assert_eq!(children.len(), 1);
    assert!(children[0].2.is_some_and(|kib| kib > 0), "{children:?}");
}

/// A server that offers pull diagnostics is asked for them: every text gets its answer,
/// also when it would publish nothing new (this one never publishes at all).
#[tokio::test]
async fn pull_diagnostics_answer_every_text_even_when_nothing_changed() {
    let ws = tempfile::tempdir().unwrap();
    let servers = fake_with(ws.path(), &["--pull"]);
    let file = ws.path().join("a.fk");
    assert_eq!(errors(&servers.check(&file, "ok\nBAD\n", WAIT).await), [2]);
    assert!(errors(&servers.check(&file, "ok\n", WAIT).await).is_empty());
    // Same diagnostics as the text before: still an answer, not a timeout.
    assert!(errors(&servers.check(&file, "ok\nok\n", WAIT).await).is_empty());
    // A hung answer still costs only the bound.
    let wait = Duration::from_millis(300);
    let got = servers.check(&file, "HANG", wait).await;
    assert!(matches!(got, Checked::Unavailable { .. }), "{got:?}");
}

/// While the server says it is loading the workspace, its diagnostics are not taken:
/// a short wait says so; a check after it settled gets the answer.
#[tokio::test]
async fn a_server_still_loading_is_not_believed_until_it_settles() {
    let ws = tempfile::tempdir().unwrap();
    let servers = fake_with(ws.path(), &["--pull", "--loading-ms", "1500"]);
    let file = ws.path().join("a.fk");
    let early = servers
        .check(&file, "BAD\n", Duration::from_millis(400))
        .await;
    assert!(
        matches!(&early, Checked::Unavailable { why, .. } if why.contains("still loading the workspace")),
        "{early:?}"
    );
    // The bound covers the rest of the loading, then the answer comes.
    assert_eq!(errors(&servers.check(&file, "BAD\n", WAIT).await), [1]);
}

/// A server that says it is broken (rust-analyzer when the workspace did not load) is
/// not taken at its word that there are no errors.
#[tokio::test]
async fn a_server_reporting_itself_broken_gives_no_all_clear() {
    let ws = tempfile::tempdir().unwrap();
    let servers = fake_with(ws.path(), &["--pull", "--unhealthy"]);
    let got = servers.check(&ws.path().join("a.fk"), "ok\n", WAIT).await;
    assert!(
        matches!(&got, Checked::Unavailable { why, .. }
            if why.contains("Failed to load workspaces.") && why.contains("cannot be trusted")),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_silent_server_costs_the_bounded_wait_only() {
    let ws = tempfile::tempdir().unwrap();
    let servers = fake(ws.path());
    let file = ws.path().join("a.fk");
    // Started first, so the wait below measures the check alone.
    errors(&servers.check(&file, "ok", WAIT).await);
    let wait = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let got = servers.check(&file, "HANG", wait).await;
    let took = started.elapsed();
    assert!(matches!(got, Checked::Unavailable { .. }), "{got:?}");
    assert!(took >= wait, "{took:?}");
    // Back to normal for the next text.
    assert_eq!(errors(&servers.check(&file, "BAD", WAIT).await), [1]);
}

#[tokio::test]
async fn a_crashed_server_restarts_once_then_is_left_alone() {
    let ws = tempfile::tempdir().unwrap();
    let servers = fake(ws.path());
    let file = ws.path().join("a.fk");
    let first_pid = {
        errors(&servers.check(&file, "ok", WAIT).await);
        servers.children().await[0].1
    };
    let crashed = servers.check(&file, "CRASH", WAIT).await;
    assert!(
        matches!(crashed, Checked::Unavailable { .. }),
        "{crashed:?}"
    );
    // Restarted, the file opened again in the new child.
    assert_eq!(errors(&servers.check(&file, "BAD", WAIT).await), [1]);
    assert_ne!(servers.children().await[0].1, first_pid);
    let _ = servers.check(&file, "CRASH", WAIT).await;
    let given_up = servers.check(&file, "BAD", WAIT).await;
    assert!(
        matches!(&given_up, Checked::Unavailable { why, .. } if why.contains("not running")),
        "{given_up:?}"
    );
}

#[tokio::test]
async fn children_die_with_their_owner() {
    let ws = tempfile::tempdir().unwrap();
    let servers = fake(ws.path());
    errors(&servers.check(&ws.path().join("a.fk"), "ok", WAIT).await);
    let pid = servers.children().await[0].1.unwrap();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(servers);
    // The kill is immediate; reaping by init may take a moment, so poll /proc briefly.
    let mut gone = false;
    for _ in 0..100 {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if state.is_empty() || state.contains(") Z ") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "pid {pid} still running");
}
