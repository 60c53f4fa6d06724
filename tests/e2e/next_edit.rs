//! Next-edit suggestions end to end (issue 60): the built server over stdio, the user's
//! keystrokes as `didChange`s, `textDocument/copilotInlineEdit` as sidekick.nvim sends
//! it. No model: the rename and the added parameter are predicted from the edits.

use std::time::{Duration, Instant};

use agentls_testkit::lsp::LspClient;
use serde_json::{Value, json};

use crate::support::{change, open, start};

const RENAME: &str = "fn main() {\n    let count = 1;\n    let double = count * 2;\n    println!(\"{count} {double}\");\n    let _ = count + 1;\n}\n\nfn other() -> u32 {\n    let count = 3;\n    count\n}\n";

const SIGNATURE: &str = "fn area(w: u32) -> u32 {\n    w * 2\n}\n\nfn main() {\n    let a = area(3);\n    let b = area(a) + area(1);\n    println!(\"{a} {b}\");\n}\n";

fn setup(text: &str) -> (LspClient, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("main.rs"), text).unwrap();
    let mut client = start(&[]);
    client
        .initialize(
            json!({ "general": { "positionEncodings": ["utf-16"] } }),
            json!({ "workspaceFolders": [{ "uri": format!("file://{}", root.display()), "name": "ws" }] }),
        )
        .unwrap();
    let uri = format!("file://{}", root.join("main.rs").display());
    open(&mut client, &uri, 1, text);
    (client, uri, dir)
}

/// Types `text` key by key at (`line`, `col`), the first key replacing `replace` chars;
/// returns the next version.
fn type_keys(
    client: &mut LspClient,
    uri: &str,
    mut version: i32,
    line: u32,
    col: u32,
    replace: u32,
    text: &str,
) -> i32 {
    for (i, key) in text.chars().enumerate() {
        let at = col + i as u32;
        let end = if i == 0 { at + replace } else { at };
        change(
            client,
            uri,
            version,
            json!([{ "range": { "start": { "line": line, "character": at }, "end": { "line": line, "character": end } }, "text": key.to_string() }]),
        );
        version += 1;
    }
    version
}

fn ask(client: &mut LspClient, uri: &str, version: i32, line: u32, character: u32) -> Value {
    client
        .request_ok(
            "textDocument/copilotInlineEdit",
            json!({ "textDocument": { "uri": uri, "version": version }, "position": { "line": line, "character": character } }),
        )
        .unwrap()
}

fn edit(uri: &str, version: i32, (l0, c0, l1, c1): (u32, u32, u32, u32), text: &str) -> Value {
    json!({
        "range": { "start": { "line": l0, "character": c0 }, "end": { "line": l1, "character": c1 } },
        "text": text,
        "textDocument": { "uri": uri, "version": version },
    })
}

#[test]
fn a_rename_where_count_is_assigned_suggests_the_uses_below() {
    let (mut client, uri, _dir) = setup(RENAME);
    // Nothing edited yet: nothing to suggest, at once.
    let t = Instant::now();
    assert_eq!(ask(&mut client, &uri, 1, 1, 8), json!({ "edits": [] }));
    assert!(t.elapsed() < Duration::from_secs(2));
    // `count` -> `total` where it is assigned, key by key.
    let version = type_keys(&mut client, &uri, 2, 1, 8, 5, "total") - 1;
    let answer = ask(&mut client, &uri, version, 1, 13);
    assert_eq!(
        answer,
        json!({ "edits": [
            edit(&uri, version, (2, 17, 2, 22), "total"),
            edit(&uri, version, (3, 15, 3, 20), "total"),
            edit(&uri, version, (4, 12, 4, 17), "total"),
        ] }),
        "the uses in main, not the other function's own `count`"
    );
    // A stale version gets nothing.
    assert_eq!(
        ask(&mut client, &uri, version - 1, 1, 13),
        json!({ "edits": [] })
    );
    client.shutdown().unwrap();
}

#[test]
fn an_added_parameter_suggests_the_call_sites() {
    let (mut client, uri, dir) = setup(SIGNATURE);
    // Another open document calls it too; its edit carries its own version.
    let other = format!(
        "file://{}",
        dir.path().canonicalize().unwrap().join("util.rs").display()
    );
    open(
        &mut client,
        &other,
        5,
        "fn twice() -> u32 {\n    crate::area(4) * 2\n}\n",
    );
    let version = type_keys(&mut client, &uri, 2, 0, 14, 0, ", h: u32") - 1;
    let answer = ask(&mut client, &uri, version, 0, 22);
    assert_eq!(
        answer,
        json!({ "edits": [
            edit(&uri, version, (5, 18, 5, 18), ", h"),
            edit(&uri, version, (6, 18, 6, 18), ", h"),
            edit(&uri, version, (6, 28, 6, 28), ", h"),
            edit(&other, 5, (1, 17, 1, 17), ", h"),
        ] })
    );
    client.shutdown().unwrap();
}

#[test]
fn a_newer_request_answers_the_older_with_nothing() {
    let (mut client, uri, _dir) = setup(RENAME);
    let version = type_keys(&mut client, &uri, 2, 1, 8, 5, "total") - 1;
    // Sent at once after the last key: the first waits for the word to be typed…
    let first = client
        .send_request(
            "textDocument/copilotInlineEdit",
            json!({ "textDocument": { "uri": uri, "version": version }, "position": { "line": 1, "character": 13 } }),
        )
        .unwrap();
    // …and the second supersedes it.
    let second = ask(&mut client, &uri, version, 1, 13);
    assert_eq!(
        second["edits"].as_array().map(Vec::len),
        Some(3),
        "{second}"
    );
    let first = client.wait_response_to(first).unwrap().unwrap();
    assert_eq!(first, json!({ "edits": [] }));
    client.shutdown().unwrap();
}

#[test]
fn nothing_for_a_word_still_being_typed() {
    let (mut client, uri, _dir) = setup(RENAME);
    // `count` -> `tot`, and the question asked at once, the cursor on the word…
    let version = type_keys(&mut client, &uri, 2, 1, 8, 5, "tot") - 1;
    let asked = client
        .send_request(
            "textDocument/copilotInlineEdit",
            json!({ "textDocument": { "uri": uri, "version": version }, "position": { "line": 1, "character": 11 } }),
        )
        .unwrap();
    // …while the user types on: the answer is nothing, never the rename to `tot`.
    let version = type_keys(&mut client, &uri, version + 1, 1, 11, 0, "al") - 1;
    let first = client.wait_response_to(asked).unwrap().unwrap();
    assert_eq!(first, json!({ "edits": [] }));
    let answer = ask(&mut client, &uri, version, 1, 13);
    let texts: Vec<_> = answer["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].clone())
        .collect();
    assert_eq!(texts, vec![json!("total"); 3], "{answer}");
    client.shutdown().unwrap();
}
