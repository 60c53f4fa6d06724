//! `agentls eval` over the task suite in fixtures/tasks: the suite checks itself (every
//! check fails untouched and passes with its solution), and a scripted model that
//! solves one task of two scores pass@1 0.50, one JSON line per attempt, with the
//! suite's own files left as they were.

use std::path::Path;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::bin;

fn tasks() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/tasks")
}

#[test]
fn every_task_fails_untouched_and_passes_with_its_solution() {
    let out = std::process::Command::new(bin())
        .args(["eval", "--verify-tasks", "--tasks"])
        .arg(tasks())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 bad"), "{stdout}");
    assert!(!stdout.contains("BAD"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_solves_one_task_of_two_scores_half() {
    let model = ModelServer::start().await.unwrap();
    // Tasks run in name order: js-reverse (given up), then py-add (fixed).
    model.push_turn(Turn::text("I cannot do that."));
    model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
    ));
    model.push_turn(Turn::text("Fixed."));
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    std::fs::write(
        &cfg,
        format!(
            "[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n",
            model.url()
        ),
    )
    .unwrap();
    let jsonl = dir.path().join("out.jsonl");
    let out = tokio::process::Command::new(bin())
        .args(["eval", "--only", "js-reverse,py-add", "--tasks"])
        .arg(tasks())
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(&jsonl)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("FAIL js-reverse #1"), "{stdout}");
    assert!(stdout.contains("PASS py-add #1"), "{stdout}");
    assert!(stdout.contains("pass@1 0.50"), "{stdout}");
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["task"], "js-reverse");
    assert_eq!(lines[0]["passed"], false);
    assert_eq!(lines[1]["task"], "py-add");
    assert_eq!(lines[1]["passed"], true);
    assert_eq!(lines[1]["status"], "done");
    // Each attempt worked on a copy: the suite is untouched.
    let repo = std::fs::read_to_string(tasks().join("py-add/repo/calc.py")).unwrap();
    assert!(repo.contains("return a - b"), "{repo}");
}
