//! `agentls eval` on a suite of three tasks built here, with the fixture model: one the
//! agent solves, one it gives up on, and one whose hidden check would pass only if the
//! agent had seen the check's files. That one must fail: `hidden/` reaches the
//! workspace after the agent's run, never during it.

use std::path::Path;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::{bin, fixture_config, tool_results};

/// What `hidden/secret.txt` holds; the `peek` task is solved by writing it to
/// `answer.txt`, which only an agent that saw the hidden files could do.
const SECRET: &str = "hidden-7f3a";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The suite: `add` (a wrong operator), `done` (a file must say "done"), `peek` (the
/// hidden secret must be in answer.txt). Each with a solution, so `--verify-tasks` can
/// show each check fails untouched and passes when solved.
fn suite(root: &Path) {
    let add = root.join("add");
    write(
        &add.join("task.toml"),
        "prompt = \"calc.add returns the wrong result. Fix it.\"\n\
         check = \"python3 -c 'import calc; assert calc.add(2, 3) == 5'\"\n",
    );
    write(
        &add.join("repo/calc.py"),
        "def add(a, b):\n    return a - b\n",
    );
    write(
        &add.join("solution/calc.py"),
        "def add(a, b):\n    return a + b\n",
    );

    let done = root.join("done");
    write(
        &done.join("task.toml"),
        "prompt = \"Mark the job done in status.txt.\"\n\
         check = \"grep -qx done status.txt\"\n",
    );
    write(&done.join("repo/status.txt"), "pending\n");
    write(&done.join("solution/status.txt"), "done\n");

    let peek = root.join("peek");
    write(
        &peek.join("task.toml"),
        "prompt = \"Write the secret into answer.txt.\"\n\
         check = \"test -s answer.txt && grep -qxF \\\"$(cat secret.txt)\\\" answer.txt\"\n",
    );
    write(&peek.join("repo/answer.txt"), "?\n");
    write(&peek.join("hidden/secret.txt"), &format!("{SECRET}\n"));
    write(&peek.join("solution/answer.txt"), &format!("{SECRET}\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hidden_check_is_not_seen_by_the_agent_and_scores_one_of_three() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    suite(&tasks);

    // The suite is sound: every check fails untouched and passes with its solution,
    // so the peek task's check does pass for an answer holding the secret.
    let out = std::process::Command::new(bin())
        .args(["eval", "--verify-tasks", "--tasks"])
        .arg(&tasks)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("3 task(s), 0 bad"), "{stdout}");

    let model = ModelServer::start().await.unwrap();
    // Tasks run in name order: add (fixed), done (given up), peek (looks for the
    // hidden files and copies what it finds).
    model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
    ));
    model.push_turn(Turn::text("Fixed."));
    model.push_turn(Turn::text("I cannot do that."));
    model.push_turn(Turn::default().tool_call("c2", "find_files", json!({"pattern": "*"})));
    model.push_turn(Turn::default().tool_call(
        "c3",
        "run_command",
        json!({"command": "cat secret.txt ../hidden/secret.txt > answer.txt; cat answer.txt"}),
    ));
    model.push_turn(Turn::text("Done."));
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let jsonl = dir.path().join("out.jsonl");
    let stdout = crate::support::agentls_ok([
        "eval".as_ref(),
        "--no-final-check".as_ref(),
        "--tasks".as_ref(),
        tasks.as_os_str(),
        "--config".as_ref(),
        cfg.as_os_str(),
        "--out".as_ref(),
        jsonl.as_os_str(),
    ])
    .await;
    assert!(stdout.contains("PASS add #1"), "{stdout}");
    assert!(stdout.contains("FAIL done #1"), "{stdout}");
    assert!(stdout.contains("FAIL peek #1"), "{stdout}");
    assert!(stdout.contains("pass@1 0.33"), "{stdout}");
    assert_eq!(model.remaining_turns(), 0);

    // What the agent saw in the peek task: the workspace without the hidden file, and
    // a command that found no secret anywhere.
    let seen: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| tool_results(&r.body))
        .collect();
    let listing = seen
        .iter()
        .find(|t| t.contains("answer.txt") && !t.contains("exit"))
        .unwrap_or_else(|| panic!("no find_files result: {seen:?}"));
    assert!(!listing.contains("secret.txt"), "{listing}");
    assert!(
        seen.iter().all(|t| !t.contains(SECRET)),
        "the agent saw the secret: {seen:?}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let peek = lines.iter().find(|l| l["task"] == "peek").unwrap();
    assert_eq!(peek["passed"], false, "{peek}");
    // The hidden file is still only in the suite, never copied into repo/.
    assert!(!tasks.join("peek/repo/secret.txt").exists());
}
