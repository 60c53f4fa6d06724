//! Output streams out while the command runs, and the capture stays whole.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use agentls_sandbox::{OutputStream, RunRequest};
use common::{limits, run, sandbox, workspace};

#[tokio::test]
async fn chunks_arrive_before_the_command_ends() {
    let ws = workspace(false);
    let sb = sandbox(ws.path());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let start = Instant::now();
    let req = RunRequest::shell("echo first; echo oops >&2; sleep 0.3; echo second")
        .limits(limits(20_000))
        .output(tx);
    let collect = async {
        let mut seen = Vec::new();
        while let Some(c) = rx.recv().await {
            seen.push((start.elapsed(), c));
        }
        seen
    };
    let (out, seen) = tokio::join!(run(&sb, req), collect);
    let ended = start.elapsed();
    assert!(out.success(), "{}", common::text(&out));
    let first = seen
        .iter()
        .find(|(_, c)| c.stream == OutputStream::Stdout)
        .unwrap();
    assert_eq!(first.1.data, b"first\n");
    assert!(
        first.0 + Duration::from_millis(250) < ended,
        "first chunk at {:?}, command ended at {ended:?}",
        first.0
    );
    let stdout: Vec<u8> = seen
        .iter()
        .filter(|(_, c)| c.stream == OutputStream::Stdout)
        .flat_map(|(_, c)| c.data.clone())
        .collect();
    let stderr: Vec<u8> = seen
        .iter()
        .filter(|(_, c)| c.stream == OutputStream::Stderr)
        .flat_map(|(_, c)| c.data.clone())
        .collect();
    assert_eq!(stdout, b"first\nsecond\n");
    assert_eq!(stderr, b"oops\n");
    // The capture is unchanged by streaming.
    assert_eq!(out.stdout.to_text(), "first\nsecond\n");
    assert_eq!(out.stderr.to_text(), "oops\n");
}
