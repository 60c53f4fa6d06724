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
