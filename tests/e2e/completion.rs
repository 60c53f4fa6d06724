//! Code completion end to end (issue 43): `textDocument/inlineCompletion` from the
//! built server over stdio, the fixture model's `/completions` over HTTP on loopback.
//! Calls are counted, never timed: a slow backend is slower than the client's own
//! timeout, so an answer that arrives proves nothing waited on it.

use std::time::{Duration, Instant};

use agentls_testkit::lsp::LspClient;
use agentls_testkit::model_server::{Fault, ModelServer, Turn, Wire};
use serde_json::{Value, json};

use crate::support::{bin, change, fixture_config, open};

const LIB: &str = "use crate::util::twice;\n\npub fn add(a: i32, b: i32) -> i32 {\n    \n}\n";
const UTIL: &str = "pub fn twice(x: i32) -> i32 {\n    2 * x\n}\n";

struct Fixture {
    _dir: tempfile::TempDir,
    client: LspClient,
    model: ModelServer,
    lib: String,
    util: String,
    init: Value,
}

/// A server on a workspace with `src/lib.rs` and `src/util.rs` open, completing with
/// the fixture model (`[models.fixture]`) and `completion` as the client's settings.
async fn setup(completion: Value) -> Fixture {
    let model = ModelServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), LIB).unwrap();
    std::fs::write(root.join("src/util.rs"), UTIL).unwrap();
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
    let mut settings = json!({ "model": "fixture" });
    if let (Some(s), Value::Object(extra)) = (settings.as_object_mut(), completion) {
        s.extend(extra);
    }
    let init = client
        .initialize(
            json!({ "general": { "positionEncodings": ["utf-16"] } }),
            json!({
                "workspaceFolders": [{ "uri": format!("file://{}", root.display()), "name": "ws" }],
                "initializationOptions": { "completion": settings },
            }),
        )
        .unwrap();
    let lib = format!("file://{}", root.join("src/lib.rs").display());
    let util = format!("file://{}", root.join("src/util.rs").display());
    open(&mut client, &util, 1, UTIL);
    open(&mut client, &lib, 1, LIB);
    Fixture {
        _dir: dir,
        client,
        model,
        lib,
        util,
        init,
    }
}

/// Inline completion parameters at (`line`, `character`); `trigger` 1 is Invoked
/// (answered at once), 2 Automatic (debounced).
fn at(uri: &str, line: u32, character: u32, trigger: u8) -> Value {
    json!({
        "textDocument": { "uri": uri },
        "position": { "line": line, "character": character },
        "context": { "triggerKind": trigger }
    })
}

/// Waits until the fixture model has seen `n` completion calls.
fn until_calls(model: &ModelServer, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while model.calls(Wire::Completions) < n {
        assert!(Instant::now() < deadline, "the model never got call {n}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn inline_completion_is_cut_by_the_stop_rules_and_never_repeats_the_suffix() {
    let mut f = setup(json!({})).await;
    assert_eq!(
        f.init["capabilities"]["inlineCompletionProvider"], true,
        "{:#}",
        f.init
    );
    assert!(f.init["capabilities"]["experimental"]["agentls.lift"].is_null());
    // Helix's items are off by default: no completion provider.
    assert!(f.init["capabilities"]["completionProvider"].is_null());
    // An edit in util.rs: the ring of recent places gives it as context.
    change(
        &mut f.client,
        &f.util,
        2,
        json!([{ "range": { "start": { "line": 1, "character": 4 }, "end": { "line": 1, "character": 4 } }, "text": "1 * " }]),
    );
    // The model runs on: the closing brace again (the suffix), then another function.
    let mut turn = Turn::text("a + b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n");
    turn.chunk_chars = 4;
    f.model.push_turn(turn);
    let list = f
        .client
        .request_ok("textDocument/inlineCompletion", at(&f.lib, 3, 4, 1))
        .unwrap();
    assert_eq!(
        list,
        json!({ "items": [{ "insertText": "a + b", "range": {
            "start": { "line": 3, "character": 4 }, "end": { "line": 3, "character": 4 } } }] })
    );
    let requests = f.model.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["suffix"], "\n}\n");
    assert_eq!(body["stream"], true);
    let prompt = body["prompt"].as_str().unwrap();
    let prefix = &LIB[..LIB.find("\n}").unwrap()];
    assert!(
        prompt.ends_with(&format!("// Path: src/lib.rs\n{prefix}")),
        "{prompt}"
    );
    assert!(
        prompt.contains("// Path: src/util.rs\n// pub fn twice(x: i32) -> i32 {\n//     1 * 2 * x"),
        "{prompt}"
    );

    // The rest of the line is in the buffer already: `twice(|)` is completed as `b`.
    change(
        &mut f.client,
        &f.lib,
        2,
        json!([{ "range": { "start": { "line": 3, "character": 4 }, "end": { "line": 3, "character": 4 } }, "text": "twice()" }]),
    );
    f.model.push_turn(Turn::text("b)"));
    let list = f
        .client
        .request_ok("textDocument/inlineCompletion", at(&f.lib, 3, 10, 1))
        .unwrap();
    assert_eq!(list["items"][0]["insertText"], "b", "{list:#}");
    // A model that only writes the suffix again offers nothing.
    f.model.push_turn(Turn::text(")\n}"));
    let list = f
        .client
        .request_ok("textDocument/inlineCompletion", at(&f.lib, 3, 10, 1))
        .unwrap();
    assert_eq!(list, json!({ "items": [] }));
    f.client.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_ten_characters_then_pausing_costs_one_backend_call() {
    // A pause longer than any gap between two keystrokes of this test.
    let mut f = setup(json!({ "debounce_ms": 3000 })).await;
    f.model.push_turn(Turn::text("a + b"));
    let mut ids = Vec::new();
    for (i, c) in "let sum = ".chars().enumerate() {
        let col = i as u32;
        change(
            &mut f.client,
            &f.lib,
            2 + i as i32,
            json!([{ "range": { "start": { "line": 3, "character": 4 + col }, "end": { "line": 3, "character": 4 + col } }, "text": c.to_string() }]),
        );
        ids.push(
            f.client
                .send_request("textDocument/inlineCompletion", at(&f.lib, 3, 5 + col, 2))
                .unwrap(),
        );
    }
    let mut answers = Vec::new();
    for id in ids {
        answers.push(f.client.wait_response_to(id).unwrap().unwrap());
    }
    let (last, superseded) = answers.split_last().unwrap();
    for a in superseded {
        assert_eq!(a, &json!({ "items": [] }));
    }
    assert_eq!(last["items"][0]["insertText"], "a + b", "{last:#}");
    assert_eq!(f.model.calls(Wire::Completions), 1);
    let prefix = f.model.requests()[0].body["prompt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(prefix.ends_with("    let sum = "), "{prefix}");
    f.client.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_completion_waiting_on_a_slow_model_holds_nothing_back_and_gives_way() {
    let mut f = setup(json!({})).await;
    // Slower than the client waits for any answer (20 s).
    for _ in 0..2 {
        f.model
            .inject(Fault::SlowFirstByte(Duration::from_secs(120)));
    }
    f.model.push_turn(Turn::text("never shown"));
    let first = f
        .client
        .send_request("textDocument/inlineCompletion", at(&f.lib, 3, 4, 1))
        .unwrap();
    until_calls(&f.model, 1);
    // Other requests answer while the completion waits.
    let symbols = f
        .client
        .request_ok("workspace/symbol", json!({ "query": "twice" }))
        .unwrap();
    assert!(symbols.is_array(), "{symbols}");
    let (text, _, _) = crate::support::view(&mut f.client, &f.lib);
    assert_eq!(text, LIB);
    // A newer request answers the waiting one with nothing, at once.
    let second = f
        .client
        .send_request("textDocument/inlineCompletion", at(&f.lib, 3, 4, 1))
        .unwrap();
    assert_eq!(
        f.client.wait_response_to(first).unwrap().unwrap(),
        json!({ "items": [] })
    );
    until_calls(&f.model, 2);
    // `$/cancelRequest`: answered at once with RequestCancelled, as the spec asks.
    f.client
        .notify("$/cancelRequest", json!({ "id": second }))
        .unwrap();
    let cancelled = f.client.wait_response_to(second).unwrap().unwrap_err();
    assert_eq!(cancelled["code"], -32800, "{cancelled}");
    assert_eq!(f.model.calls(Wire::Completions), 2);
    f.client.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn completion_can_be_turned_off_per_language_and_on_again_from_the_editor() {
    let mut f = setup(json!({ "languages": { "rust": false } })).await;
    f.model.push_turn(Turn::text("a + b"));
    let list = f
        .client
        .request_ok("textDocument/inlineCompletion", at(&f.lib, 3, 4, 1))
        .unwrap();
    assert_eq!(list, json!({ "items": [] }));
    assert_eq!(f.model.calls(Wire::Completions), 0);
    // The editor's settings (VS Code sends them under `agentls`) are a layer above.
    f.client
        .notify(
            "workspace/didChangeConfiguration",
            json!({ "settings": { "agentls": { "completion": { "languages": { "rust": true } } } } }),
        )
        .unwrap();
    let list = f
        .client
        .request_ok("textDocument/inlineCompletion", at(&f.lib, 3, 4, 1))
        .unwrap();
    assert_eq!(list["items"][0]["insertText"], "a + b", "{list:#}");
    assert_eq!(f.model.calls(Wire::Completions), 1);
    f.client.shutdown().unwrap();
}
