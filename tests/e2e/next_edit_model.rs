//! Next edits from a model end to end (issue 60): when the predictions without a model
//! give nothing, the built server asks the next-edit model server `[completion.next_edit]`
//! names (the fixture model's `/completions` over HTTP on loopback) for the lines around
//! the cursor rewritten, in Zeta's layout, and `textDocument/copilotInlineEdit` answers
//! the smallest changed range; the gates drop a rewrite that takes the user's edit
//! back or changes nothing; a newer request ends an older one's model call.

use std::time::{Duration, Instant};

use agentls_testkit::lsp::LspClient;
use agentls_testkit::model_server::{Fault, ModelServer, Turn, Wire};
use serde_json::{Value, json};

use crate::support::{bin, change, fixture_config, open};

const TEXT: &str = "fn main() {\n    let xs = vec![1, 2, 3];\n    println!(\"{}\", xs.len());\n    println!(\"{}\", xs.len());\n}\n";

/// The window the model is asked to rewrite once ` * 2` is typed on line 2, as Zeta
/// answers it: the excerpt again, `rewritten` in place of the region.
fn zeta_answer(rewritten: &str) -> String {
    format!(
        "```main.rs\n<|start_of_file|>\n<|editable_region_start|>\n{rewritten}<|editable_region_end|>\n```"
    )
}

const EDITED: &str = "fn main() {\n    let xs = vec![1, 2, 3];\n    println!(\"{}\", xs.len() * 2<|user_cursor_is_here|>);\n    println!(\"{}\", xs.len());\n}\n";

struct Fixture {
    _dir: tempfile::TempDir,
    client: LspClient,
    model: ModelServer,
    uri: String,
}

async fn setup() -> Fixture {
    let model = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("main.rs"), TEXT).unwrap();
    let config = dir.path().join("config.toml");
    fixture_config(&config, &model.url());
    let mut client = LspClient::start(
        bin(),
        &[],
        &[
            ("AGENTLS_LOG", "debug"),
            ("AGENTLS_CONFIG", config.to_str().unwrap()),
            ("AGENTLS_EMBEDDER", "none"),
            ("XDG_DATA_HOME", dir.path().join("data").to_str().unwrap()),
        ],
    )
    .unwrap();
    client
        .initialize(
            json!({ "general": { "positionEncodings": ["utf-16"] } }),
            json!({
                "workspaceFolders": [{ "uri": format!("file://{}", root.display()), "name": "ws" }],
                "initializationOptions": { "completion": { "next_edit": { "model": "fixture", "format": "zeta" } } },
            }),
        )
        .unwrap();
    let uri = format!("file://{}", root.join("main.rs").display());
    open(&mut client, &uri, 1, TEXT);
    Fixture {
        _dir: dir,
        client,
        model,
        uri,
    }
}

/// Types ` * 2` after `xs.len()` on line 2, key by key; returns the last version.
fn type_times_two(f: &mut Fixture) -> i32 {
    for (i, key) in " * 2".chars().enumerate() {
        let at = 27 + i as u32;
        change(
            &mut f.client,
            &f.uri,
            2 + i as i32,
            json!([{ "range": { "start": { "line": 2, "character": at }, "end": { "line": 2, "character": at } }, "text": key.to_string() }]),
        );
    }
    5
}

fn params(uri: &str, version: i32) -> Value {
    json!({ "textDocument": { "uri": uri, "version": version }, "position": { "line": 2, "character": 31 } })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_rewrites_the_window_and_the_smallest_change_is_suggested() {
    let mut f = setup().await;
    let version = type_times_two(&mut f);
    let rewritten = EDITED.replacen("xs.len());", "xs.len() * 2);", 1);
    f.model.push_turn(Turn::text(zeta_answer(&rewritten)));
    let answer = f
        .client
        .request_ok("textDocument/copilotInlineEdit", params(&f.uri, version))
        .unwrap();
    assert_eq!(
        answer,
        json!({ "edits": [{
            "range": { "start": { "line": 3, "character": 27 }, "end": { "line": 3, "character": 27 } },
            "text": " * 2",
            "textDocument": { "uri": f.uri, "version": version },
        }] })
    );
    // One call, to the legacy completions endpoint, whole (not streamed), with the
    // user's edit as a diff and the window between Zeta's markers.
    let requests = f.model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/completions");
    let body = &requests[0].body;
    assert_eq!(body["stream"], false);
    let prompt = body["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("User edited \"main.rs\":\n```diff\n@@ -3,1 +3,1 @@\n-    println!(\"{}\", xs.len());\n+    println!(\"{}\", xs.len() * 2);\n```"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!(
            "<|editable_region_start|>\n{EDITED}<|editable_region_end|>"
        )),
        "{prompt}"
    );
    f.client.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewrite_that_undoes_the_edit_or_changes_nothing_is_not_suggested() {
    let mut f = setup().await;
    let version = type_times_two(&mut f);
    // The model takes the user's ` * 2` back.
    f.model
        .push_turn(Turn::text(zeta_answer(&EDITED.replace(" * 2", ""))));
    let answer = f
        .client
        .request_ok("textDocument/copilotInlineEdit", params(&f.uri, version))
        .unwrap();
    assert_eq!(answer, json!({ "edits": [] }));
    // The model writes the window again as it is.
    f.model.push_turn(Turn::text(zeta_answer(EDITED)));
    let answer = f
        .client
        .request_ok("textDocument/copilotInlineEdit", params(&f.uri, version))
        .unwrap();
    assert_eq!(answer, json!({ "edits": [] }));
    assert_eq!(f.model.calls(Wire::Completions), 2, "both asked the model");
    // A rename is predicted without the model: no call.
    change(
        &mut f.client,
        &f.uri,
        version + 1,
        json!([{ "range": { "start": { "line": 1, "character": 8 }, "end": { "line": 1, "character": 10 } }, "text": "items" }]),
    );
    std::thread::sleep(Duration::from_millis(400));
    let answer = f
        .client
        .request_ok(
            "textDocument/copilotInlineEdit",
            json!({ "textDocument": { "uri": f.uri, "version": version + 1 }, "position": { "line": 1, "character": 13 } }),
        )
        .unwrap();
    assert_eq!(
        answer["edits"].as_array().map(Vec::len),
        Some(2),
        "{answer}"
    );
    assert_eq!(f.model.calls(Wire::Completions), 2);
    f.client.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newer_request_ends_the_older_model_call() {
    let mut f = setup().await;
    let version = type_times_two(&mut f);
    let rewritten = EDITED.replacen("xs.len());", "xs.len() * 2);", 1);
    f.model.inject(Fault::SlowFirstByte(Duration::from_secs(8)));
    f.model.push_turn(Turn::text(zeta_answer(&rewritten)));
    f.model.push_turn(Turn::text(zeta_answer(&rewritten)));
    let t = Instant::now();
    let first = f
        .client
        .send_request("textDocument/copilotInlineEdit", params(&f.uri, version))
        .unwrap();
    // Once the first is waiting on the model, a second asks.
    let deadline = Instant::now() + Duration::from_secs(20);
    while f.model.calls(Wire::Completions) < 1 {
        assert!(Instant::now() < deadline, "the model was never asked");
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = f
        .client
        .request_ok("textDocument/copilotInlineEdit", params(&f.uri, version))
        .unwrap();
    let first = f.client.wait_response_to(first).unwrap().unwrap();
    assert_eq!(first, json!({ "edits": [] }));
    assert!(
        t.elapsed() < Duration::from_secs(6),
        "the first waited for its model call: {:?}",
        t.elapsed()
    );
    assert_eq!(second["edits"][0]["text"], " * 2", "{second}");
    f.client.shutdown().unwrap();
}
