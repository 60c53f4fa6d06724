//! Real child processes speaking LSP over stdio: a small fake server in Python
//! (`fake_server.py`) that can be told to hang or crash through the text it checks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentls_lspclient::{Checked, Found, LanguageServers, ServerSpec, Severity};

fn fake(root: &Path) -> LanguageServers {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py");
    let python = agentls_lspclient::config::which("python3", std::env::var_os("PATH").as_deref())
        .expect("python3 on PATH runs the fake language server");
    LanguageServers::with(
        root,
        vec![Found {
            spec: ServerSpec {
                name: "fake".into(),
                command: python.display().to_string(),
                args: vec![script.display().to_string()],
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
