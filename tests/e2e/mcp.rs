//! MCP both ways, against code none of us wrote: the Python `mcp` package (installed
//! by `.ci/run`). Its client drives `agentls mcp` (lists the tools, reads, edits, greps
//! and runs a command, and is refused outside the workspace and for a forbidden
//! command: `tests/mcp/client_calls.py`); its MCPServer serves tools to the agent over
//! stdio and HTTP (`tests/mcp/notes_server.py`).

use std::path::Path;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::{Value, json};

use crate::support::{agentls_run, bin, tool_results};

#[test]
fn the_python_mcp_client_uses_the_workspace_tools() {
    if !crate::support::python_module("mcp", "mcp==2.3.0") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/client_calls.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(bin())
        .arg(&ws)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("python3 runs (the MCP test needs it and `pip install mcp`)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("calls and refusals as expected"),
        "{stdout}\n{stderr}"
    );
    assert!(!dir.path().join("outside.txt").exists());
    let calc = std::fs::read_to_string(ws.join("calc.py")).unwrap();
    assert!(calc.contains("return a + b"), "{calc}");
}

/// The model server's requests and the tool results the model saw in the last one.
fn last_tool_results(model: &ModelServer) -> (Vec<String>, Value) {
    let last = model
        .requests()
        .last()
        .map(|r| r.body.clone())
        .unwrap_or_default();
    (tool_results(&last), last)
}

fn notes_server() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/notes_server.py")
}

/// An MCP server none of us wrote (the Python package's MCPServer, over stdio) gives
/// the agent its tools as `notes__…`: an allowed tool runs without asking, a tool not
/// allowed is refused when nobody can be asked, a denied tool is never offered, and a
/// configured server that cannot start costs only its own tools.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_servers_tools_reach_the_model_over_stdio() {
    if !crate::support::python_module("mcp", "mcp==2.3.0") {
        return;
    }
    let model = ModelServer::start().await.unwrap();
    model.push_turn(Turn::default().tool_call("c1", "notes__lookup", json!({"key": "deploy"})));
    model.push_turn(Turn::default().tool_call("c2", "notes__slow", json!({})));
    model.push_turn(Turn::text("Deploys go out on Tuesdays."));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n\n\
             [mcp.servers.notes]\ncommand = \"python3\"\nargs = [{:?}]\n\
             allow = [\"lookup\"]\ndeny = [\"hidden\"]\n\n\
             [mcp.servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
            model.url(),
            notes_server().display().to_string()
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = agentls_run(
        &ws,
        &cfg,
        &["--approve", "never", "--no-final-check", "Deploy day?"],
    )
    .await;
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let first = model.requests()[0].body.clone();
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(offered.contains(&"notes__lookup"), "{offered:?}");
    assert!(offered.contains(&"notes__slow"), "{offered:?}");
    assert!(!offered.contains(&"notes__hidden"), "{offered:?}");
    assert!(offered.contains(&"read_file"), "{offered:?}");
    let (results, _) = last_tool_results(&model);
    assert!(
        results[0].contains("Deploys go out on Tuesdays."),
        "{results:?}"
    );
    assert!(results[1].contains("did not allow"), "{results:?}");
    assert!(
        stderr.contains("broken"),
        "the failed server is not reported: {stderr}"
    );
    eprintln!("stdio MCP run: {took:?}");
}

/// The same server over streamable HTTP (a header from an environment variable): a
/// call that outlives the server's `timeout_secs` fails as a timeout, and the session
/// goes on to the next call.
#[tokio::test(flavor = "multi_thread")]
async fn an_http_mcp_server_is_used_and_a_hung_call_times_out() {
    if !crate::support::python_module("mcp", "mcp==2.3.0") {
        return;
    }
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut server = std::process::Command::new("python3")
        .arg(notes_server())
        .args(["http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 runs (needs `pip install mcp`)");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the MCP server did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let model = ModelServer::start().await.unwrap();
    model.push_turn(Turn::default().tool_call("c1", "web__slow", json!({})));
    model.push_turn(Turn::default().tool_call("c2", "web__lookup", json!({"key": "deploy"})));
    model.push_turn(Turn::text("Tuesdays."));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n\n\
             [mcp.servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
             headers_env = {{ \"X-Token\" = \"AGENTLS_TEST_MCP_TOKEN\" }}\ntimeout_secs = 2\n",
            model.url()
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = crate::support::run_command(&ws, &cfg, &dir.path().join("traj"))
        .args(["--approve", "always", "--no-final-check", "Deploy day?"])
        .env("AGENTLS_TEST_MCP_TOKEN", "secret")
        .output()
        .await
        .unwrap();
    let took = started.elapsed();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let (results, _) = last_tool_results(&model);
    assert!(results[0].contains("within 2 s"), "{results:?}");
    assert!(
        results[1].contains("Deploys go out on Tuesdays."),
        "{results:?}"
    );
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    eprintln!("HTTP MCP run with a 2 s timeout: {took:?}");
}
