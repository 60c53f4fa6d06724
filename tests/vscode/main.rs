//! The VS Code extension in a real VS Code: code-server runs the packaged extension
//! (editor-clients/vscode/dist/agentls.vsix) against this binary and the fixture model
//! server, and Chromium drives the workbench (editor-clients/vscode/e2e/run.mjs): the chat
//! panel, review, the lightbulb, semantic search, ghost text (inline completion) and
//! next-edit suggestions.
//!
//! The Node script asks for scripted model turns over its stdout (`@@ctl {...}` lines)
//! and gets answers on its stdin, so the wire format is the fixture server's, as users
//! run it. Needs node, code-server (`e2e/install-code-server.sh`), chromium and the built
//! .vsix (`npm run package`): without them it prints SKIPPED, and fails under CI.
//!
//! Its own test binary, so that cargo runs it alone: a browser, code-server and the
//! extension host share two cores badly with the e2e tests that run in parallel.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

const LIB_RS: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n/// Doubles.\npub fn double(x: i32) -> i32 {\n    x\n}\n\n\n\npub fn one() -> i32 {\n    2\n}\n";

fn missing(ext: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let ok = |cmd: &str, arg: &str| {
        Command::new(cmd)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ok("node", "--version") {
        out.push("node".to_owned());
    }
    if !Path::new("/usr/bin/chromium").exists() {
        out.push("chromium (apt-get install chromium)".to_owned());
    }
    if !ext
        .join(".e2e/code-server/node_modules/.bin/code-server")
        .exists()
    {
        out.push("code-server (editor-clients/vscode/e2e/install-code-server.sh)".to_owned());
    }
    if !ext.join("dist/agentls.vsix").exists() {
        out.push("the extension (npm run package in editor-clients/vscode)".to_owned());
    }
    if !ext.join("node_modules/playwright-core").exists() {
        out.push("npm ci in editor-clients/vscode".to_owned());
    }
    out
}

fn turn(v: &Value) -> Turn {
    serde_json::from_value::<Turn>(v.clone()).unwrap_or_else(|e| panic!("bad turn {v}: {e}"))
}

/// The answer to one control message of the script: turns for the agent's model
/// (`push`) or the completion model (`push_completion`, `clear_completion`), or the
/// models the agent's requests named (`requests`).
fn control(msg: &Value, model: &ModelServer, fim: &ModelServer) -> Value {
    if let Some(turns) = msg["push"].as_array() {
        for t in turns {
            model.push_turn(turn(t));
        }
        json!({ "remaining": model.remaining_turns() })
    } else if let Some(turns) = msg["push_completion"].as_array() {
        for t in turns {
            fim.push_turn(turn(t));
        }
        json!({ "remaining": fim.remaining_turns() })
    } else if msg["clear_completion"].as_bool() == Some(true) {
        json!({ "cleared": fim.clear_turns() })
    } else if msg["requests"].as_bool() == Some(true) {
        let models: Vec<Value> = model
            .requests()
            .iter()
            .map(|r| r.body["model"].clone())
            .collect();
        json!({ "models": models })
    } else {
        panic!("unknown control message {msg}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn vscode_extension_in_code_server() {
    let ext = Path::new(env!("CARGO_MANIFEST_DIR")).join("../editor-clients/vscode");
    let ext = ext.canonicalize().unwrap();
    let missing = missing(&ext);
    if !missing.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the VS Code end-to-end test needs: {}",
            missing.join(", ")
        );
        println!(
            "SKIPPED: the VS Code end-to-end test needs {}",
            missing.join(", ")
        );
        return;
    }
    let model = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), LIB_RS).unwrap();
    // For the semantic search step.
    std::fs::write(
        root.join("src/upload.rs"),
        "/// Tries again when the server drops a file.\npub fn retry_failed_upload(attempts: u32) -> u32 {\n    attempts\n}\n",
    )
    .unwrap();
    // For the ghost text step.
    std::fs::write(root.join("src/complete.rs"), "// Ghost text lands here.\n").unwrap();
    // For the next-edit step.
    std::fs::write(
        root.join("src/rename.rs"),
        "fn main() {\n    let count = 1;\n    let double = count * 2;\n    let _ = count + double;\n}\n",
    )
    .unwrap();
    let config = dir.path().join("config.toml");
    let url = model.url();
    // Completions come from a fixture of their own (its `/completions`), so that what the
    // editor asks while the other steps type takes none of their scripted turns.
    let fim = ModelServer::start().await.unwrap();
    let fim_url = fim.url();
    std::fs::write(
        &config,
        format!(
            "[agent]\nmodel = \"fast\"\n\n[completion]\nmodel = \"fim\"\n\n[models.fim]\nwire = \"openai_chat\"\nmodel = \"fixture-fim\"\nbase_url = \"{fim_url}\"\n\n[models.fast]\nwire = \"openai_chat\"\nmodel = \"fixture-fast\"\nbase_url = \"{url}\"\n\n[models.strong]\nwire = \"openai_chat\"\nmodel = \"fixture-strong\"\nbase_url = \"{url}\"\n"
        ),
    )
    .unwrap();
    let out_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/vscode-e2e");
    std::fs::create_dir_all(&out_dir).unwrap();

    let mut child = Command::new("node")
        .arg(ext.join("e2e/run.mjs"))
        .env("AGENTLS_BIN", env!("CARGO_BIN_EXE_agentls"))
        .env("AGENTLS_CONFIG", &config)
        .env("AGENTLS_EMBEDDER", "none")
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("E2E_WORKSPACE", &root)
        .env("E2E_HOME", dir.path().join("code"))
        .env("E2E_OUT", &out_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The script's stderr goes on to ours as it comes, and its tail into the failure
    // message, so a CI log that shows only the panic still shows why.
    let stderr_tail = Arc::new(Mutex::new(String::new()));
    let mut stderr = child.stderr.take().unwrap();
    let tail = Arc::clone(&stderr_tail);
    let stderr_pump = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 {
                break;
            }
            let chunk = String::from_utf8_lossy(&buf[..n]);
            eprint!("{chunk}");
            let mut t = tail.lock().unwrap();
            t.push_str(&chunk);
            if t.len() > 6000 {
                let cut = t.len() - 6000;
                let cut = (cut..t.len()).find(|&i| t.is_char_boundary(i)).unwrap_or(0);
                t.drain(..cut);
            }
        }
    });
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut passed = Vec::new();
    for line in stdout.lines() {
        let line = line.unwrap();
        let Some(ctl) = line.strip_prefix("@@ctl ") else {
            println!("{line}");
            if let Some(step) = line.strip_prefix("PASS ") {
                passed.push(step.to_owned());
            }
            continue;
        };
        let msg: Value = serde_json::from_str(ctl).unwrap();
        let answer = control(&msg, &model, &fim);
        writeln!(stdin, "{answer}").unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    stderr_pump.join().unwrap();
    let tail = stderr_tail.lock().unwrap().clone();
    assert!(
        status.success(),
        "the VS Code scenario failed ({status}); passed: {passed:?}\n--- its stderr (tail):\n{tail}"
    );
    for step in [
        "panel",
        "prompt",
        "review",
        "cancel",
        "model switch",
        "resume",
        "approval",
        "lightbulb",
        "search",
        "ghost text",
        "ghost text word",
        "next edit",
    ] {
        assert!(
            passed.iter().any(|p| p == step),
            "step `{step}` did not pass: {passed:?}"
        );
    }
}
