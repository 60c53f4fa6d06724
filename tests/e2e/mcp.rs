//! `agentls mcp` driven by a client none of us wrote: the Python `mcp` package
//! (installed by `.ci/run`) lists the tools, reads, edits, greps and runs a command,
//! and is refused outside the workspace and for a forbidden command (see
//! `tests/mcp/client_calls.py`).

use std::path::Path;

use crate::support::bin;

#[test]
fn the_python_mcp_client_uses_the_workspace_tools() {
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
    assert!(stdout.contains("calls and refusals as expected"), "{stdout}\n{stderr}");
    assert!(!dir.path().join("outside.txt").exists());
    let calc = std::fs::read_to_string(ws.join("calc.py")).unwrap();
    assert!(calc.contains("return a + b"), "{calc}");
}
