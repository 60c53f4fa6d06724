//! Helpers shared by the end-to-end tests.

use std::path::Path;

use agentls_testkit::lsp::LspClient;
use serde_json::{Value, json};

/// The binary under test.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_agentls"))
}

/// Starts the server with debug logging (so any stray stdout write would break framing)
/// and extra environment variables.
pub fn start(envs: &[(&str, &str)]) -> LspClient {
    let mut all = vec![
        ("AGENTLS_LOG", "debug"),
        ("AGENTLS_CONFIG", "/nonexistent/agentls.toml"),
        // Words only: a server never loads an embedding model found on the machine.
        ("AGENTLS_EMBEDDER", "none"),
    ];
    all.extend_from_slice(envs);
    LspClient::start(bin(), &[], &all).unwrap()
}

/// Starts and initializes a server offering `encodings` (`None`: the client says nothing).
pub fn start_initialized(encodings: Option<&[&str]>) -> (LspClient, Value) {
    let mut client = start(&[]);
    let caps = match encodings {
        Some(e) => json!({ "general": { "positionEncodings": e } }),
        None => json!({}),
    };
    let result = client.initialize(caps, json!({})).unwrap();
    (client, result)
}

/// `textDocument/didOpen`.
pub fn open(client: &mut LspClient, uri: &str, version: i32, text: &str) {
    let doc = json!({ "uri": uri, "languageId": "rust", "version": version, "text": text });
    client
        .notify("textDocument/didOpen", json!({ "textDocument": doc }))
        .unwrap();
}

/// `textDocument/didChange` with the given content changes.
pub fn change(client: &mut LspClient, uri: &str, version: i32, changes: Value) {
    let params = json!({
        "textDocument": { "uri": uri, "version": version },
        "contentChanges": changes
    });
    client.notify("textDocument/didChange", params).unwrap();
}

/// `agentls/viewFileText`: `(text, version, inSync)`.
pub fn view(client: &mut LspClient, uri: &str) -> (String, i64, bool) {
    let r = client
        .request_ok(
            "agentls/viewFileText",
            json!({ "textDocument": { "uri": uri } }),
        )
        .unwrap();
    (
        r["text"].as_str().unwrap().to_owned(),
        r["version"].as_i64().unwrap(),
        r["inSync"].as_bool().unwrap(),
    )
}

/// A workspace for agent tests: `<tmp>/ws/src/lib.rs` holding `text`, and
/// `<tmp>/config.toml` naming the fixture model at `model_url` as `fixture`. Returns
/// the temporary directory (keep it alive), the workspace root and the config file.
pub fn agent_workspace(
    model_url: &str,
    text: &str,
) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), text).unwrap();
    let config = dir.path().join("config.toml");
    fixture_config(&config, model_url);
    (dir, root, config)
}

/// Writes a config file at `path` naming the fixture model server at `model_url` as
/// the model `fixture` (OpenAI chat wire).
pub fn fixture_config(path: &Path, model_url: &str) {
    std::fs::write(
        path,
        format!("[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{model_url}\"\n"),
    )
    .unwrap();
}

/// The resident memory of process `pid`, in KiB (`VmRSS` in `/proc/<pid>/status`).
pub fn rss_kib(pid: u32) -> u64 {
    proc_status(pid, "VmRSS:")
}

/// A number from `/proc/<pid>/status` (the first word after `field`).
pub fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// Waits for a notification with `method` whose `params.message` holds `needle`,
/// skipping the others with that method.
pub fn wait_message(client: &mut LspClient, method: &str, needle: &str) -> String {
    loop {
        let n = client.wait_notification(method).unwrap();
        let message = n["params"]["message"].as_str().unwrap_or_default();
        if message.contains(needle) {
            return message.to_owned();
        }
    }
}

/// Text of the `tool` messages of a chat request the fixture model received.
pub fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// `agentls ARGS…` with stdin closed: its stdout, once it has exited with success (its
/// stdout and stderr shown when it did not).
pub async fn agentls_ok<S: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = S>) -> String {
    let out = tokio::process::Command::new(bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `agentls run --workspace WS --config CFG --trajectory-dir <tmp> ARGS...` (the task is
/// the last of `args`), stdin closed, as a script or CI runs it.
pub async fn agentls_run(ws: &Path, cfg: &Path, args: &[&str]) -> std::process::Output {
    let logs = tempfile::tempdir().unwrap();
    agentls_run_logged(ws, cfg, logs.path(), args).await
}

/// [`agentls_run`] with the trajectories written to `logs`.
pub async fn agentls_run_logged(
    ws: &Path,
    cfg: &Path,
    logs: &Path,
    args: &[&str],
) -> std::process::Output {
    run_command(ws, cfg, logs)
        // Saved sessions stay with the test, never in the user's data directory.
        .env("XDG_DATA_HOME", logs.join("data"))
        // Words only, whether or not this machine fetched the embedding model.
        .env("AGENTLS_EMBEDDER", "none")
        .args(args)
        .output()
        .await
        .unwrap()
}

/// `agentls run --workspace WS --config CFG --trajectory-dir LOGS` with stdin closed,
/// for the caller's own arguments and environment.
pub fn run_command(ws: &Path, cfg: &Path, logs: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.arg("run")
        .arg("--workspace")
        .arg(ws)
        .arg("--config")
        .arg(cfg)
        .arg("--trajectory-dir")
        .arg(logs)
        .stdin(std::process::Stdio::null());
    cmd
}

/// Whether `python3` can import `module` (a package `.ci/run` installs with pip). In
/// CI a missing one fails here; elsewhere the caller prints SKIPPED and returns, so
/// the README's test command passes on a machine without it.
pub fn python_module(module: &str, package: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with `{module}` is required in CI (pip install {package})"
        );
        eprintln!("SKIPPED: python3 cannot import {module} (pip install {package})");
    }
    ok
}

/// Runs `tests/e2e/nvim/SCRIPT` in a headless Neovim against the built binary, as the
/// plugin scenarios do: the workspace `ws` and the config file in `AGENTLS_CONFIG`,
/// the plugin's folder in `PLUGIN`, words-only search, Neovim's data, state and cache
/// under `dir`, plus `env`. The script writes `key=value` lines to `$OUT`; those are
/// returned. Panics when Neovim runs past `secs` or writes nothing.
pub async fn run_nvim_script(
    script: &str,
    dir: &Path,
    ws: &Path,
    config: &Path,
    env: &[(&str, &std::ffi::OsStr)],
    secs: u64,
) -> std::collections::HashMap<String, String> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join("out.txt");
    let mut command = tokio::process::Command::new("nvim");
    command
        .args(["--headless", "--clean", "-u", "NONE", "-c"])
        .arg(format!(
            "luafile {}",
            here.join("../tests/e2e/nvim").join(script).display()
        ))
        .env("WS", ws)
        .env("OUT", &out)
        .env("PLUGIN", here.join("../editor-clients/neovim"))
        .env("AGENTLS_BIN", bin())
        .env("AGENTLS_CONFIG", config)
        .env("AGENTLS_EMBEDDER", "none")
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(secs),
        child.wait_with_output(),
    )
    .await
    .unwrap_or_else(|_| panic!("nvim did not finish in {secs} s"))
    .unwrap();
    let results = std::fs::read_to_string(&out)
        .unwrap_or_else(|e| {
            panic!(
                "nvim wrote no results ({e}); stderr: {}",
                String::from_utf8_lossy(&output.stderr)
            )
        })
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    eprintln!("nvim results: {results:#?}");
    results
}
