//! Read your own writes (issue 61): every request is answered against every
//! `didOpen`/`didChange` the client sent before it, whatever the index's background
//! jobs still have to do. Each request goes out right after its notification, with no
//! pause, while other processes keep every core busy (so the index's own job lags), 200
//! times for each kind: code actions (the "implement" action of a stub just opened,
//! whose disk copy is empty), document symbols, workspace symbols and the definitions
//! inline completion gives the model as context.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use agentls_testkit::lsp::LspClient;
use agentls_testkit::model_server::{ModelServer, Turn, Wire};
use serde_json::{Value, json};

use crate::support::{bin, fixture_config};

/// Requests of each kind.
const ROUNDS: usize = 200;

/// Processes spinning on every core until dropped.
struct Burner(Vec<Child>);

impl Burner {
    fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let children = (0..cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        Self(children)
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn open(client: &mut LspClient, uri: &str, text: &str) {
    let doc = json!({ "uri": uri, "languageId": "rust", "version": 1, "text": text });
    client
        .notify("textDocument/didOpen", json!({ "textDocument": doc }))
        .unwrap();
}

/// A full-text `didChange` (no range: the completion ring notes no place for it, so
/// only the index can give a definition as context).
fn replace(client: &mut LspClient, uri: &str, version: i32, text: &str) {
    let params = json!({
        "textDocument": { "uri": uri, "version": version },
        "contentChanges": [{ "text": text }]
    });
    client.notify("textDocument/didChange", params).unwrap();
}

fn titles(actions: &Value) -> Vec<String> {
    actions
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["title"].as_str().map(str::to_owned))
        .collect()
}

fn names(symbols: &Value) -> Vec<String> {
    symbols
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_request_reads_the_notifications_sent_before_it_on_a_loaded_machine() {
    let model = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    // On disk the files are empty: the crawl indexes them so, and only the buffers
    // hold code.
    for i in 0..ROUNDS {
        std::fs::write(root.join(format!("src/f{i}.rs")), "").unwrap();
        std::fs::write(root.join(format!("src/h{i}.rs")), "").unwrap();
    }
    let config = dir.path().join("config.toml");
    fixture_config(&config, &model.url());
    let mut client = LspClient::start(
        bin(),
        &[],
        &[
            ("AGENTLS_LOG", "info"),
            ("AGENTLS_CONFIG", config.to_str().unwrap()),
            ("AGENTLS_EMBEDDER", "none"),
            ("XDG_DATA_HOME", dir.path().join("data").to_str().unwrap()),
        ],
    )
    .unwrap();
    let caps = json!({
        "general": { "positionEncodings": ["utf-16"] },
        "window": { "workDoneProgress": true }
    });
    let init = json!({
        "workspaceFolders": [{ "uri": url(&root), "name": "ws" }],
        "initializationOptions": { "completion": { "model": "fixture" } },
    });
    client.initialize(caps, init).unwrap();
    // The crawl's end: from here the index holds every file as empty.
    for kind in ["begin", "end"] {
        let progress = client.wait_notification("$/progress").unwrap();
        assert_eq!(progress["params"]["value"]["kind"], kind, "{progress}");
    }

    let _burner = Burner::start();
    let mut missed: Vec<String> = Vec::new();
    for i in 0..ROUNDS {
        let f = url(&root.join(format!("src/f{i}.rs")));
        let h = url(&root.join(format!("src/h{i}.rs")));
        let doc = json!({ "uri": f });

        // A stub opened, then the menu at once: it offers to implement it.
        let mut text = format!("pub fn impl_{i}(x: i32) -> i32 {{\n    todo!()\n}}\n");
        open(&mut client, &f, &text);
        let actions = client
            .request_ok(
                "textDocument/codeAction",
                json!({
                    "textDocument": doc,
                    "range": { "start": { "line": 1, "character": 4 }, "end": { "line": 1, "character": 4 } },
                    "context": { "diagnostics": [] }
                }),
            )
            .unwrap();
        let want = format!("Agent: implement `impl_{i}`");
        if !titles(&actions).contains(&want) {
            missed.push(format!("code action {i}: {:?}", titles(&actions)));
        }

        // A function typed, then the outline.
        text.push_str(&format!("\npub fn sym_{i}() {{}}\n"));
        replace(&mut client, &f, 2, &text);
        let outline = client
            .request_ok(
                "textDocument/documentSymbol",
                json!({ "textDocument": doc }),
            )
            .unwrap();
        if !names(&outline).contains(&format!("sym_{i}")) {
            missed.push(format!("document symbols {i}: {:?}", names(&outline)));
        }

        // A type typed, then a search for it across the workspace.
        let unique = format!("Ws{i}Unique");
        text.push_str(&format!("pub struct {unique};\n"));
        replace(&mut client, &f, 3, &text);
        let found = client
            .request_ok("workspace/symbol", json!({ "query": unique }))
            .unwrap();
        if !names(&found).contains(&unique) {
            missed.push(format!("workspace symbols {i}: {:?}", names(&found)));
        }

        // A helper opened in another file and a call to it typed: ghost text's context
        // has the helper's definition.
        open(
            &mut client,
            &h,
            &format!("pub fn ctx_{i}_helper(x: i32) -> i32 {{\n    x + {i}\n}}\n"),
        );
        text.push_str(&format!("fn use_{i}() -> i32 {{\n    ctx_{i}_helper("));
        replace(&mut client, &f, 4, &text);
        model.push_turn(Turn::text("1)"));
        let line = text.lines().count() as u32 - 1;
        let character = text.lines().last().unwrap().len() as u32;
        client
            .request_ok(
                "textDocument/inlineCompletion",
                json!({
                    "textDocument": doc,
                    "position": { "line": line, "character": character },
                    "context": { "triggerKind": 1 }
                }),
            )
            .unwrap();
        let requests = model.requests();
        let last = requests
            .iter()
            .rev()
            .find(|r| r.wire == Wire::Completions)
            .unwrap();
        let prompt = last.body["prompt"].as_str().unwrap_or_default();
        if !prompt.contains(&format!("ctx_{i}_helper(x: i32)")) {
            missed.push(format!("completion context {i}: {prompt}"));
        }
    }
    assert_eq!(model.calls(Wire::Completions), ROUNDS);
    assert!(
        missed.is_empty(),
        "{} of {} answers missed a write sent before them:\n{}",
        missed.len(),
        4 * ROUNDS,
        missed.join("\n")
    );
    client.shutdown().unwrap();
}
