//! `agentls run`: the real binary, a fixture model over HTTP, a fixture workspace; the
//! edit lands on disk, `--json` prints one event per line, the exit code tells.

use std::process::Stdio;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

#[tokio::test]
async fn run_fixes_a_file_on_disk_and_prints_json_events() {
    let server = ModelServer::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(
        ws.path().join("src/lib.rs"),
        "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )
    .unwrap();
    let cfg = ws.path().join("models.toml");
    std::fs::write(
        &cfg,
        format!(
            "[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n",
            server.url()
        ),
    )
    .unwrap();
    server.push_turn(Turn::default().tool_call("c1", "read_file", json!({"path": "src/lib.rs"})));
    server.push_turn(Turn::default().tool_call(
        "c2",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    ));
    server.push_turn(Turn::text("Fixed add."));
    let logs = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentls"))
        .arg("run")
        .arg("--workspace")
        .arg(ws.path())
        .arg("--config")
        .arg(&cfg)
        .arg("--trajectory-dir")
        .arg(logs.path())
        .arg("--json")
        .arg("Fix add")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["type"], "started");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "finished");
    assert_eq!(last["status"]["status"], "done");
    assert_eq!(last["metrics"]["steps"], 3);
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
    assert_eq!(
        std::fs::read_dir(logs.path()).unwrap().count(),
        1,
        "one trajectory file"
    );
}
