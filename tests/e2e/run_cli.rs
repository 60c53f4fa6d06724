//! `agentls run`: the real binary, a fixture model over HTTP, a fixture workspace; the
//! edit lands on disk, `--json` prints one event per line, the exit code tells.

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::{agentls_run, agentls_run_logged, fixture_config, tool_results};

/// The file the first test's run fixes, and its replay starts from.
const BROKEN_ADD: &str = "fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n";

#[tokio::test]
async fn run_fixes_a_file_on_disk_and_prints_json_events() {
    let server = ModelServer::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(ws.path().join("src/lib.rs"), BROKEN_ADD).unwrap();
    let cfg = ws.path().join("models.toml");
    fixture_config(&cfg, &server.url());
    server.push_turn(Turn::default().tool_call("c1", "read_file", json!({"path": "src/lib.rs"})));
    server.push_turn(Turn::default().tool_call(
        "c2",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a - b", "new_string": "a + b"}),
    ));
    server.push_turn(Turn::text("Fixed add."));
    let logs = tempfile::tempdir().unwrap();
    let out = agentls_run_logged(ws.path(), &cfg, logs.path(), &["--json", "Fix add"]).await;
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
    // The protocol's own events (as `agent/event` carries them), then the CLI's summary.
    assert_eq!(events[0]["type"], "status");
    assert_eq!(events[0]["status"], "running");
    let n = events.len();
    let finished = &events[n - 2];
    assert_eq!(finished["type"], "finished");
    assert_eq!(finished["status"], "done");
    assert_eq!(finished["message"], "Fixed add.");
    assert_eq!(finished["steps"], 3);
    let summary = &events[n - 1];
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["outcome"]["status"], "done");
    assert_eq!(summary["metrics"]["steps"], 3);
    assert_eq!(summary["metrics"]["calls_by_tool"]["str_replace"], 1);
    // What the edits landed, said beside the model's own answer.
    assert_eq!(
        summary["changed"],
        json!([{"status": "M", "path": "src/lib.rs"}]),
        "{summary}"
    );
    assert!(
        std::fs::read_to_string(ws.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
    let trajectories = std::fs::read_dir(logs.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_file())
        .count();
    assert_eq!(trajectories, 1, "one trajectory file");

    // The trajectory replays without the model: from the starting repository every
    // call ends as recorded and the edit lands again; from the edited one the edit
    // cannot land, which the replay reports and exits non-zero for.
    let trajectory = std::fs::read_dir(logs.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_file())
        .unwrap();
    let start = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(start.path().join("src")).unwrap();
    std::fs::write(start.path().join("src/lib.rs"), BROKEN_ADD).unwrap();
    let replay = |ws: &std::path::Path| {
        std::process::Command::new(crate::support::bin())
            .args(["eval", "replay", "--workspace"])
            .arg(ws)
            .arg(&trajectory)
            .env("AGENTLS_EMBEDDER", "none")
            .output()
            .unwrap()
    };
    let same = replay(start.path());
    let stdout = String::from_utf8_lossy(&same.stdout);
    assert!(same.status.success(), "{stdout}");
    assert!(stdout.contains("2 calls, 0 differ"), "{stdout}");
    assert!(
        std::fs::read_to_string(start.path().join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
    let changed = replay(ws.path());
    let stdout = String::from_utf8_lossy(&changed.stdout);
    assert!(!changed.status.success(), "{stdout}");
    assert!(stdout.contains("2 calls, 1 differ"), "{stdout}");
}

/// A workspace with a script the default policy does not know (so it asks), a config
/// pointing at `server`, plus `extra` config lines.
fn approval_workspace(
    server: &ModelServer,
    extra: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("check.sh"), "echo ran-check\n").unwrap();
    let cfg = ws.path().join("models.toml");
    std::fs::write(
        &cfg,
        format!(
            "{extra}\n[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n",
            server.url()
        ),
    )
    .unwrap();
    (ws, cfg)
}

/// A command the default policy asks about (it deletes wholesale) that also runs the
/// workspace's check script. Everything else runs unasked in the full sandbox.
const ASKED: &str = "rm -rf build-cache && sh check.sh";

#[tokio::test]
async fn approve_always_runs_asked_commands_streams_them_and_keeps_forbidden_ones_out() {
    let server = ModelServer::start().await.unwrap();
    let (ws, cfg) = approval_workspace(&server, "");
    server.push_turn(Turn::default().tool_call("c1", "run_command", json!({"command": ASKED})));
    server.push_turn(Turn::default().tool_call(
        "c2",
        "run_command",
        json!({"command": "sudo true"}),
    ));
    server.push_turn(Turn::text("Checked."));
    let out = agentls_run(
        ws.path(),
        &cfg,
        &["--approve", "always", "--json", "Run the check"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let reqs = server.requests();
    let results = tool_results(&reqs[2].body);
    assert!(
        results[0].contains("exit code 0") && results[0].contains("ran-check"),
        "{results:?}"
    );
    assert!(
        results[1].contains("forbidden"),
        "sudo stays forbidden: {results:?}"
    );

    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started = events
        .iter()
        .find(|e| e["type"] == "toolStarted" && e["id"] == "c1")
        .unwrap();
    assert_eq!(started["arguments"]["command"], ASKED);
    let output: String = events
        .iter()
        .filter(|e| e["type"] == "toolOutput" && e["id"] == "c1")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(output, "ran-check\n");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert!(last["metrics"].get("refused").is_none(), "{last}");
}

#[tokio::test]
async fn approve_never_refuses_tells_the_model_and_lists_the_command() {
    let server = ModelServer::start().await.unwrap();
    // The config says always; the flag wins.
    let (ws, cfg) = approval_workspace(&server, "[run]\napprove = \"always\"\n");
    server.push_turn(Turn::default().tool_call("c1", "run_command", json!({"command": ASKED})));
    server.push_turn(Turn::text("Could not run the check."));
    let out = agentls_run(ws.path(), &cfg, &["--approve", "never", "Run the check"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let results = tool_results(&server.requests()[1].body);
    assert!(
        results[0].contains("UserAborted")
            && results[0].contains(&format!("`{ASKED}` was refused")),
        "{results:?}"
    );
    assert!(!results[0].contains("ran-check"), "{results:?}");
    assert!(
        stdout.contains(&format!("refused (not approved): run `{ASKED}`")),
        "the summary lists it: {stdout}"
    );
}

#[tokio::test]
async fn approve_from_the_config_file_when_no_flag() {
    let server = ModelServer::start().await.unwrap();
    let (ws, cfg) = approval_workspace(&server, "[run]\napprove = \"always\"\n");
    server.push_turn(Turn::default().tool_call("c1", "run_command", json!({"command": ASKED})));
    server.push_turn(Turn::text("Checked."));
    let out = agentls_run(ws.path(), &cfg, &["Run the check"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&server.requests()[1].body);
    assert!(results[0].contains("ran-check"), "{results:?}");
    // Plain lines: the command, its output indented under it, then its result.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("  $ {ASKED}\n    │ ran-check\n  ✓ run_command")),
        "{stdout}"
    );
    // And stdin not being a terminal means `never` when nothing is configured.
    let server = ModelServer::start().await.unwrap();
    let (ws, cfg) = approval_workspace(&server, "");
    server.push_turn(Turn::default().tool_call("c1", "run_command", json!({"command": ASKED})));
    server.push_turn(Turn::text("Could not."));
    let out = agentls_run(ws.path(), &cfg, &["Run the check"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&server.requests()[1].body);
    assert!(results[0].contains("was refused"), "{results:?}");
}

#[tokio::test]
async fn model_auto_routes_each_call_through_the_configured_router() {
    let fast = ModelServer::start().await.unwrap();
    let strong = ModelServer::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    let cfg = ws.path().join("models.toml");
    std::fs::write(
        &cfg,
        format!(
            "[models.quick]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n\n[models.smart]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n\n[router]\nfast = \"quick\"\nstrong = \"smart\"\n",
            fast.url(),
            strong.url()
        ),
    )
    .unwrap();
    let missing = json!({"path": "nope.rs"});
    fast.push_turn(Turn::default().tool_call("c1", "read_file", missing.clone()));
    fast.push_turn(Turn::default().tool_call("c2", "read_file", missing));
    strong.push_turn(Turn::text("There is no such file."));
    let out = agentls_run(
        ws.path(),
        &cfg,
        &["--model", "auto", "--json", "Run the check"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let routes: Vec<String> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "routed")
        .map(|e| e["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(routes, ["quick", "quick", "smart"]);
    assert_eq!((fast.requests().len(), strong.requests().len()), (2, 1));
}

/// A `wire = "local"` model in a build without the embedded engine (the default, and
/// CI's): a clear message saying how to rebuild, exit code 1, nothing run.
#[cfg(not(feature = "local"))]
#[tokio::test]
async fn a_local_model_without_the_engine_says_how_to_rebuild() {
    let ws = tempfile::tempdir().unwrap();
    let cfg = ws.path().join("models.toml");
    std::fs::write(
        &cfg,
        "[models.local]\nwire = \"local\"\nmodel = \"qwen2.5-coder-0.5b\"\n",
    )
    .unwrap();
    let out = agentls_run(ws.path(), &cfg, &["--model", "local", "Run the check"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "agentls: model: UnexpectedEnvironment: model local: this agentls was built without \
         the embedded model; rebuild with `--features local` (needs cmake and libclang)\n"
    );
}

/// Keys that do not fit the wire are refused before anything runs, naming the model.
#[tokio::test]
async fn a_local_model_with_a_base_url_is_a_config_error() {
    let ws = tempfile::tempdir().unwrap();
    let cfg = ws.path().join("models.toml");
    std::fs::write(
        &cfg,
        "[models.local]\nwire = \"local\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let out = agentls_run(ws.path(), &cfg, &["--model", "local", "Run the check"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "model local: base_url does not apply to wire = \"local\" (the model runs inside agentls)"
        ),
        "{stderr}"
    );
}

/// Headless runs crawl the workspace before the first step (issue 17): `symbols` and
/// `repo_map` answer with the workspace's own definitions.
#[tokio::test]
async fn headless_symbols_and_repo_map_see_the_workspace() {
    let server = ModelServer::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(
        ws.path().join("src/lib.rs"),
        "pub struct Ledger;\n\npub fn settle_accounts(l: &Ledger) -> u32 {\n    0\n}\n",
    )
    .unwrap();
    std::fs::write(
        ws.path().join("src/main.rs"),
        "fn main() {\n    let _ = settle_accounts(&Ledger);\n}\n",
    )
    .unwrap();
    let cfg = ws.path().join("models.toml");
    fixture_config(&cfg, &server.url());
    server.push_turn(
        Turn::default()
            .tool_call("c1", "symbols", json!({"name": "settle_accounts"}))
            .tool_call("c2", "repo_map", json!({})),
    );
    server.push_turn(Turn::text("Looked."));
    let out = agentls_run(ws.path(), &cfg, &["--mode", "ask", "Run the check"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("src/lib.rs:3") && results[0].contains("settle_accounts"),
        "symbols finds the definition: {results:?}"
    );
    assert!(
        results[0].contains("src/main.rs:2"),
        "and the use: {results:?}"
    );
    assert!(
        results[1].contains("src/lib.rs")
            && results[1].contains("Ledger")
            && results[1].contains("settle_accounts"),
        "repo_map lists the workspace's definitions: {results:?}"
    );
}

/// `agentls run --resume ID` goes on from the saved conversation: the model sees the
/// first run's task and answer, and the session keeps its id.
#[tokio::test]
async fn a_run_resumes_from_its_saved_session() {
    let server = ModelServer::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "alpha\n").unwrap();
    let cfg = ws.path().join("models.toml");
    fixture_config(&cfg, &server.url());
    let sessions = tempfile::tempdir().unwrap();
    let dir = sessions.path().to_str().unwrap();
    server.push_turn(Turn::text("The word is alpha."));
    let first = agentls_run(
        ws.path(),
        &cfg,
        &[
            "--sessions-dir",
            dir,
            "Which word is in notes.txt? (first task)",
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    // A run that edited nothing says so, in its own words rather than the model's.
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(
        stdout.contains("\nno file changed by the agent's edits\n"),
        "{stdout}"
    );
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("session: "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session id in {stderr}"))
        .to_owned();
    assert!(
        sessions.path().join(format!("{id}.json")).exists(),
        "saved under {dir}"
    );

    server.push_turn(Turn::text("Still alpha."));
    let second = agentls_run(
        ws.path(),
        &cfg,
        &[
            "--sessions-dir",
            dir,
            "--resume",
            &id,
            "And now? (second task)",
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("session: {id} ")),
        "same id: {stderr}"
    );
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("(first task)"), "the first task: {body}");
    assert!(
        body.contains("The word is alpha."),
        "the first answer: {body}"
    );
    assert!(body.contains("(second task)"), "the new task: {body}");

    let missing = agentls_run(
        ws.path(),
        &cfg,
        &["--sessions-dir", dir, "--resume", "no-such-session", "go"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(stderr.contains("no-such-session"), "names the id: {stderr}");
}

/// Every run is recorded in the stats database, and `agentls stats` sums the runs up:
/// tool calls, tokens from the model's usage, times to first token and first edit.
#[tokio::test]
async fn runs_are_recorded_and_agentls_stats_sums_them_up() {
    let server = ModelServer::start().await.unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let cfg = ws.path().join("models.toml");
    fixture_config(&cfg, &server.url());
    let db = ws.path().join("stats.sqlite3");
    let db_arg = db.to_str().unwrap();
    // Run 1: an edit, then the answer; run 2: a read that fails, then the answer.
    server.push_turn(
        Turn::default()
            .tool_call(
                "c1",
                "str_replace",
                json!({"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
            )
            .usage(900, 100, 20),
    );
    server.push_turn(Turn::text("Fixed.").usage(1000, 800, 10));
    let out = agentls_run(
        ws.path(),
        &cfg,
        &["--no-final-check", "--stats-db", db_arg, "Fix add"],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.push_turn(Turn::default().tool_call("c2", "read_file", json!({"path": "nope.py"})));
    server.push_turn(Turn::text("No such file."));
    let out = agentls_run(ws.path(), &cfg, &["--stats-db", db_arg, "Read nope.py"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = std::process::Command::new(crate::support::bin())
        .args(["stats", "--json", "--stats-db", db_arg])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["runs"], 2, "{v}");
    // One failed read is no trend: nothing to alert about.
    assert_eq!(v["alerts"], json!([]), "{v}");
    let m = &v["models"][0];
    assert_eq!(m["runs"], 2);
    assert_eq!(m["done_rate"], 1.0);
    assert_eq!(m["input_tokens"], 1900);
    assert_eq!(m["output_tokens"], 30);
    assert_eq!(m["edits_landed"], 1);
    assert!(
        m["first_token_ms_p50"].as_f64().is_some_and(|t| t > 0.0),
        "{m}"
    );
    assert!(m["first_edit_ms_p50"].as_f64().is_some(), "{m}");
    let tool = |name: &str| {
        m["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {m}"))
    };
    assert_eq!(tool("str_replace")["calls"], 1);
    assert_eq!(tool("read_file")["error_rate"], 1.0);
    // The tables, and a filter that matches nothing.
    let out = std::process::Command::new(crate::support::bin())
        .args(["stats", "--stats-db", db_arg])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 run(s) · 100% done") && text.contains("read_file"),
        "{text}"
    );
    let out = std::process::Command::new(crate::support::bin())
        .args(["stats", "--model", "other", "--stats-db", db_arg])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("no runs recorded"));
}
