//! `agentls acp` driven by a client none of us wrote: the Python
//! `agent-client-protocol` package (installed by `.ci/run`) runs a whole session
//! against the built binary and the fixture model server: an edit through the
//! editor's buffers with its diff, a permission, an edit planned on a buffer's unsaved
//! text (read through the client) landing with the typing kept, an edit refused
//! because the user typed while it was in flight, a command run in the client's
//! terminal at the user's choice, an edit refused by the user in "ask before edits", a write
//! refused in "read-only", a cancel, and the session loaded by a second agent process
//! (see `tests/acp/client_session.py`).

use std::path::Path;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::{bin, fixture_config};

#[tokio::test(flavor = "multi_thread")]
async fn a_python_acp_client_runs_a_whole_session() {
    if !crate::support::python_module("acp", "agent-client-protocol==0.12.1") {
        return;
    }
    let model = ModelServer::start().await.unwrap();
    session_turns(&model);
    let dir = tempfile::tempdir().unwrap();
    let (ws, cfg) = two_model_workspace(dir.path(), &model.url());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp/client_session.py");
    let out = tokio::process::Command::new("python3")
        .arg(&script)
        .arg(bin())
        .arg(&cfg)
        .arg(&ws)
        .env("AGENTLS_LOG", "info")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect(
            "python3 runs (the ACP client test needs it and `pip install agent-client-protocol`)",
        );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("session loaded and continued"),
        "{stdout}\n{stderr}"
    );
    eprintln!("{}", stdout.trim());
    assert_what_the_model_was_given(&model);
}

/// The fixture model's turns for client_session.py's seven prompts, in order.
fn session_turns(model: &ModelServer) {
    // Prompt 1: the edit, the command the policy asks about, the answer.
    model.push_turn(
        Turn::default()
            .tool_call(
                "c1",
                "str_replace",
                json!({"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
            )
            .usage(900, 0, 20),
    );
    model.push_turn(Turn::default().tool_call(
        "c2",
        "run_command",
        json!({"command": "rm -rf build"}),
    ));
    model.push_turn(Turn::text("Done."));
    // Prompt 2: an edit of a buffer with unsaved typing (it lands there, the typing
    // kept), then an edit the user types into while it is in flight (refused).
    model.push_turn(Turn::default().tool_call("c3a", "read_file", json!({"path": "calc.py"})));
    model.push_turn(Turn::default().tool_call(
        "c3",
        "str_replace",
        json!({"path": "calc.py", "old_string": "def add", "new_string": "def plus"}),
    ));
    model.push_turn(Turn::default().tool_call(
        "c3c",
        "run_command",
        json!({"command": "cat calc.py"}),
    ));
    model.push_turn(Turn::default().tool_call(
        "c3b",
        "str_replace",
        json!({"path": "util.py", "old_string": "return 1", "new_string": "return 2"}),
    ));
    model.push_turn(Turn::text("util.py changed under me; I stopped."));
    // Prompt 3, asking before edits: an edit the user refuses.
    model.push_turn(Turn::default().tool_call(
        "c5",
        "str_replace",
        json!({"path": "calc.py", "old_string": "return a + b", "new_string": "return a * 2"}),
    ));
    model.push_turn(Turn::text("Left as is."));
    // Prompt 4, read-only: a write the mode refuses.
    model.push_turn(Turn::default().tool_call(
        "c6",
        "write_file",
        json!({"path": "notes.txt", "content": "notes\n"}),
    ));
    model.push_turn(Turn::text("I may not write here."));
    // Prompt 5: a command the policy asks about, run in the client's terminal.
    model.push_turn(Turn::default().tool_call(
        "c7",
        "run_command",
        json!({"command": "rm -rf stale && echo cleaned-in-terminal"}),
    ));
    model.push_turn(Turn::text("Cleaned."));
    // Prompt 6: a command long enough to be cancelled.
    model.push_turn(Turn::default().tool_call(
        "c4",
        "run_command",
        json!({"command": "python3 -c 'import time; time.sleep(30)'"}),
    ));
    // Prompt 7, in the session loaded by a second agent process.
    model.push_turn(Turn::text("I remember."));
}

/// The workspace client_session.py works in (files, a build folder, a stale one) and a
/// config with two models on the fixture server, told apart by the model id they send.
fn two_model_workspace(dir: &Path, url: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("build")).unwrap();
    // Two models on the fixture server, told apart by the model id they send.
    let two_models = format!(
        "[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{0}\"\nmodel = \"fixture-a\"\n\
         [models.other]\nwire = \"openai_chat\"\nbase_url = \"{0}\"\nmodel = \"fixture-b\"\n",
        url
    );
    std::fs::write(ws.join("build/out.o"), "x").unwrap();
    std::fs::create_dir_all(ws.join("stale")).unwrap();
    std::fs::write(ws.join("stale/old.log"), "x").unwrap();
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(ws.join("util.py"), "def helper():\n    return 1\n").unwrap();
    let cfg = dir.join("models.toml");
    std::fs::write(&cfg, two_models).unwrap();
    (ws, cfg)
}

/// What the model calls carried: the loaded session's whole conversation, the buffers
/// (not the disk), the models picked, the slash command, the terminal's output.
fn assert_what_the_model_was_given(model: &ModelServer) {
    // The loaded session's model call carried the whole saved conversation.
    let last = model
        .requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    for said in ["Fix add in calc.py", "Done.", "Still there?"] {
        assert!(last.contains(said), "{said:?} missing from {last}");
    }
    // The model read the editor's buffer, not the disk, and so did the command (the
    // sandbox lays the buffers over the workspace).
    let result_of = |id: &str| {
        let msgs = model.requests().last().map(|r| r.body["messages"].clone());
        msgs.and_then(|m| {
            m.as_array()?
                .iter()
                .find(|m| m["tool_call_id"] == id)
                .and_then(|m| m["content"].as_str().map(str::to_owned))
        })
        .unwrap_or_default()
    };
    let read = result_of("c3a");
    assert!(
        read.contains("the user's unsaved line"),
        "read_file gave {read:?}"
    );
    // The first prompt went to the first model; after the pick, the cancelled turn and
    // the loaded session's turn went to the other (the saved session kept the pick).
    let sent: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        sent.first().map(String::as_str),
        Some("fixture-a"),
        "{sent:?}"
    );
    assert_eq!(
        sent.last().map(String::as_str),
        Some("fixture-b"),
        "{sent:?}"
    );
    assert_eq!(
        sent.iter().filter(|m| *m == "fixture-b").count(),
        2,
        "only the last two turns on the other model: {sent:?}"
    );
    // `/explain calc.py` reached the model as the explain task.
    assert!(
        last.contains("Explain the code at the workspace") && last.contains("Focus: calc.py"),
        "the slash command was not expanded: {last}"
    );
    let cleaned = result_of("c7");
    assert!(
        cleaned.contains("ran in the user's terminal") && cleaned.contains("cleaned-in-terminal"),
        "the model was told {cleaned:?}"
    );
    let cat = result_of("c3c");
    assert!(
        cat.contains("def plus(a, b)") && cat.contains("the user's unsaved line"),
        "the command saw {cat:?}"
    );
}

/// The crate's own client side (`Client.v1()`) over the built binary: a session whose
/// turn reads a file and answers; the answer streams back as message chunks.
#[tokio::test(flavor = "multi_thread")]
async fn the_rust_acp_client_gets_the_answer_streamed() {
    use agent_client_protocol::v1::SessionSetup;
    use agent_client_protocol::v1::schema::InitializeRequest;
    use agent_client_protocol::{Client, schema::ProtocolVersion};

    let model = ModelServer::start().await.unwrap();
    model.push_turn(Turn::default().tool_call("c1", "read_file", json!({"path": "calc.py"})));
    model.push_turn(Turn::text("add subtracts: it returns a - b."));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let agent = agentls_acp(dir.path(), &cfg);
    let ws2 = ws.clone();
    let answer = Client
        .v1()
        .name("agentls-e2e")
        .connect_with(agent, async move |cx| {
            let init = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            assert_eq!(
                init.agent_info.as_ref().map(|i| i.name.as_str()),
                Some("agentls")
            );
            cx.build_session(&ws2)
                .block_task()
                .run_until(async |SessionSetup { mut session, .. }| {
                    session.send_prompt("What does add do?")?;
                    session.read_to_string().await
                })
                .await
        })
        .await
        .unwrap();
    assert!(answer.contains("add subtracts"), "{answer:?}");
    // The turn was recorded for `agentls stats`, in the database named.
    let mut runs = Value::Null;
    for _ in 0..50 {
        let out = std::process::Command::new(bin())
            .args(["stats", "--json", "--stats-db"])
            .arg(dir.path().join("stats.sqlite3"))
            .output()
            .unwrap();
        runs = serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)["runs"].clone();
        if runs == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(runs, 1);
    // The model saw the file the tool read.
    let seen = model.requests();
    assert!(
        seen.iter()
            .any(|r| r.body.to_string().contains("return a - b")),
        "the tool's result never reached the model"
    );
}

/// Satisfaction over ACP (`[stats] satisfaction = true`): the second `session/prompt`
/// of a session is judged by the `judge` model against the agent's first answer, and
/// the label stored for the agent's model, without its reason (privacy by default).
#[tokio::test(flavor = "multi_thread")]
async fn a_second_acp_prompt_is_judged() {
    use agent_client_protocol::v1::SessionSetup;
    use agent_client_protocol::v1::schema::InitializeRequest;
    use agent_client_protocol::{Client, schema::ProtocolVersion};

    let model = ModelServer::start().await.unwrap();
    let judge = ModelServer::start().await.unwrap();
    model.push_turn(Turn::text("add returns a + b."));
    model.push_turn(Turn::text("Reverted."));
    judge.push_turn(Turn::text(
        "{\"label\": \"rejects\", \"reason\": \"Wants the change undone.\"}",
    ));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(&format!(
        "[models.judge]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n\
         [stats]\nsatisfaction = true\nsatisfaction_model = \"judge\"\n",
        judge.url()
    ));
    std::fs::write(&cfg, text).unwrap();
    let db = dir.path().join("stats.sqlite3");
    let agent = agentls_acp(dir.path(), &cfg);
    let db2 = db.clone();
    let stats = Client
        .v1()
        .name("agentls-e2e")
        .connect_with(agent, async move |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.build_session(&ws)
                .block_task()
                .run_until(async |SessionSetup { mut session, .. }| {
                    session.send_prompt("What does add do?")?;
                    session.read_to_string().await?;
                    session.send_prompt("No, undo all of that, I'll do it myself.")?;
                    session.read_to_string().await?;
                    // Judged in a task of its own: polled while the agent still runs.
                    let mut stats = Value::Null;
                    for _ in 0..50 {
                        let out = std::process::Command::new(bin())
                            .args(["stats", "--json", "--stats-db"])
                            .arg(&db2)
                            .output()
                            .unwrap();
                        stats = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
                        if stats["satisfaction"][0]["n"] == 1 {
                            break;
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                    Ok(stats)
                })
                .await
        })
        .await
        .unwrap();
    let judged = &stats["satisfaction_messages"][0];
    assert_eq!(
        (&judged["model"], &judged["label"], &judged["reason"]),
        (&json!("fixture"), &json!("rejects"), &Value::Null),
        "{stats}"
    );
    let asked = judge.requests();
    assert_eq!(asked.len(), 1);
    let body = asked[0].body.to_string();
    assert!(body.contains("add returns a + b."), "{body}");
    assert!(body.contains("undo all of that"), "{body}");
}

/// Sends each of `prompts` to a new session in `ws`, one after the other's answer;
/// the answers.
async fn prompt_in_turn(
    agent: agent_client_protocol::AcpAgent,
    ws: &Path,
    prompts: &[&str],
) -> Vec<String> {
    use agent_client_protocol::v1::SessionSetup;
    use agent_client_protocol::v1::schema::InitializeRequest;
    use agent_client_protocol::{Client, schema::ProtocolVersion};

    Client
        .v1()
        .name("agentls-e2e")
        .connect_with(agent, async move |cx| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.build_session(ws)
                .block_task()
                .run_until(async |SessionSetup { mut session, .. }| {
                    let mut answers = Vec::new();
                    for prompt in prompts {
                        session.send_prompt(*prompt)?;
                        answers.push(session.read_to_string().await?);
                    }
                    Ok(answers)
                })
                .await
        })
        .await
        .unwrap()
}

/// `/compact` is the session's compaction op: after two exchanges the agent says what
/// it folded, and the next prompt goes to the model with the summary in place of the
/// first exchange.
#[tokio::test(flavor = "multi_thread")]
async fn acp_compact_folds_the_conversation() {
    let model = ModelServer::start().await.unwrap();
    model.push_turn(Turn::text("add returns a + b."));
    model.push_turn(Turn::text("sub returns a - b."));
    // No summarizer configured: the compaction asks no model.
    model.push_turn(Turn::text("mul returns a * b."));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let cfg = dir.path().join("models.toml");
    fixture_config(&cfg, &model.url());
    let agent = agentls_acp(dir.path(), &cfg);
    let answers = prompt_in_turn(
        agent,
        &ws,
        &["What does add do?", "And sub?", "/compact", "And mul?"],
    )
    .await;
    let said = &answers[2];
    assert!(said.starts_with("Compacted: "), "{said}");
    assert!(!said.contains(" 0 messages folded"), "{said}");
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("And mul?"), "{last}");
    assert!(
        !last.contains("add returns a + b."),
        "the first exchange is folded: {last}"
    );
}

/// Bad input on the wire: a line that is not JSON, a prompt for a session that does
/// not exist. Each gets an error and the agent keeps serving; closing stdin ends it.
#[test]
fn bad_messages_get_errors_and_the_agent_stays_up() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("models.toml");
    std::fs::write(
        &cfg,
        "[models.none]\nwire = \"openai_chat\"\nbase_url = \"http://127.0.0.1:9\"\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(bin())
        .args(["acp", "--config"])
        .arg(&cfg)
        .arg("--sessions-dir")
        .arg(dir.path().join("sessions"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |msg: &str| -> serde_json::Value {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let line = lines.next().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let garbage = ask("this is not json");
    assert!(garbage.get("error").is_some(), "{garbage}");
    let init =
        ask(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#);
    assert_eq!(init["result"]["agentInfo"]["name"], "agentls", "{init}");
    let unknown = ask(
        r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}"#,
    );
    assert!(
        unknown["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("no session nope")),
        "{unknown}"
    );
    let load = ask(
        r#"{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"x","cwd":"/tmp","mcpServers":[]}}"#,
    );
    assert!(
        load["error"]["data"]
            .as_str()
            .is_some_and(|d| d.contains("no saved session x")),
        "{load}"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// `agentls acp` with the config `cfg`, its trajectories, sessions and stats database
/// (`stats.sqlite3`) in `dir`, as the crate's client starts an agent.
fn agentls_acp(dir: &Path, cfg: &Path) -> agent_client_protocol::AcpAgent {
    agent_client_protocol::AcpAgent::from_args([
        bin().display().to_string(),
        "acp".into(),
        "--config".into(),
        cfg.display().to_string(),
        "--trajectory-dir".into(),
        dir.join("traj").display().to_string(),
        "--sessions-dir".into(),
        dir.join("sessions").display().to_string(),
        "--stats-db".into(),
        dir.join("stats.sqlite3").display().to_string(),
    ])
    .unwrap()
}

/// The models directory the embedded model's tests read (`AGENTLS_TEST_MODELS_DIR`,
/// else the user's data directory's `agentls/models`), when it holds the default
/// model's weights; under CI a missing one fails.
#[cfg(feature = "local")]
fn embedded_models_dir(test: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("AGENTLS_TEST_MODELS_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_DATA_HOME")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/share")))
                .map(|d| d.join("agentls/models"))
        })?;
    if dir
        .join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
        .is_file()
    {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: the embedded default model is required in CI (agentls model fetch qwen2.5-coder-0.5b)"
    );
    eprintln!("SKIPPED {test}: no qwen2.5-coder-0.5b in {}", dir.display());
    None
}

/// `agentls acp` built with the embedded model and given no config at all (a home
/// with no config file, no `--config`): `session/new` answers and a prompt runs on the
/// embedded default model (its weights reached through the data directory), not
/// "no model configured".
#[cfg(feature = "local")]
#[test]
fn acp_with_no_config_answers_with_the_embedded_model() {
    use std::io::{BufRead, BufReader, Write};
    let test = "acp_with_no_config_answers_with_the_embedded_model";
    let Some(models) = embedded_models_dir(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let data = dir.path().join("data/agentls");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    std::os::unix::fs::symlink(&models, data.join("models")).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let mut child = std::process::Command::new(bin())
        .arg("acp")
        .arg("--log-file")
        .arg(dir.path().join("agentls.log"))
        .current_dir(&ws)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env_remove("AGENTLS_CONFIG")
        .env("AGENTLS_LOG", "info")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("stderr.log")).unwrap())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let mut send = |msg: Value| {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
    let mut seen: Vec<Value> = Vec::new();
    /// Sees each message while a request waits; may send.
    type OnUpdate<'a> = dyn FnMut(&Value, &mut dyn FnMut(Value)) + 'a;
    // Waits for the response to `id`, answering the agent's requests (permissions:
    // cancelled) and keeping its notifications in `seen`; `on_update` sees each.
    let answer = |id: i64,
                  send: &mut dyn FnMut(Value),
                  seen: &mut Vec<Value>,
                  on_update: &mut OnUpdate|
     -> Value {
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let msg = rx
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to request {id}: {e}; saw {seen:?}"));
            if msg["id"] == id && msg.get("method").is_none() {
                return msg;
            }
            if let (Some(req), Some(_)) = (msg.get("id"), msg.get("method")) {
                send(
                    json!({"jsonrpc": "2.0", "id": req, "result": {"outcome": {"outcome": "cancelled"}}}),
                );
            }
            on_update(&msg, send);
            seen.push(msg);
        }
    };
    let mut nothing = |_: &Value, _: &mut dyn FnMut(Value)| {};
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    let init = answer(1, &mut send, &mut seen, &mut nothing);
    assert_eq!(init["result"]["agentInfo"]["name"], "agentls", "{init}");
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws, "mcpServers": []}}),
    );
    let new = answer(2, &mut send, &mut seen, &mut nothing);
    let Some(session) = new["result"]["sessionId"].as_str().map(str::to_owned) else {
        panic!("session/new failed: {new}");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {
            "sessionId": session,
            "prompt": [{"type": "text", "text": "What does the function add in calc.py return? Answer in one sentence."}]
        }}),
    );
    // The model's first words or tool call prove it runs; the turn is then cancelled
    // (a whole agent turn of the 0.5B model takes minutes on two cores).
    let mut cancelled = false;
    let mut spoke = |m: &Value, send: &mut dyn FnMut(Value)| {
        let kind = &m["params"]["update"]["sessionUpdate"];
        if !cancelled
            && m["method"] == "session/update"
            && (kind == "agent_message_chunk" || kind == "tool_call")
        {
            cancelled = true;
            send(
                json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": m["params"]["sessionId"]}}),
            );
        }
    };
    let done = answer(3, &mut send, &mut seen, &mut spoke);
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(dir.path().join("stderr.log")).unwrap_or_default()
        + &std::fs::read_to_string(dir.path().join("agentls.log")).unwrap_or_default();
    assert!(
        done["result"]["stopReason"].is_string(),
        "the prompt failed: {done}\nstderr:\n{log}"
    );
    assert!(!log.contains("no model configured"), "{log}");
    // The model spoke: a message chunk or a tool call of the agent's turn.
    let spoke = seen.iter().any(|m| {
        let kind = &m["params"]["update"]["sessionUpdate"];
        m["method"] == "session/update" && (kind == "agent_message_chunk" || kind == "tool_call")
    });
    assert!(spoke, "no update from the model: {seen:?}\nstderr:\n{log}");
    assert!(
        log.contains("loading local model"),
        "the embedded model was not loaded:\n{log}"
    );
}
