//! Edits landing through the editor: `agentls.applyEdit` → versioned `WorkspaceEdit` →
//! `workspace/applyEdit` → the editor's `didChange` → the command answers. The editor
//! refuses stale versions (as Helix and Neovim do), and the user types meanwhile.

use std::path::Path;

use agentls_testkit::editor::Editor;
use agentls_text::PositionEncoding;
use serde_json::{Value, json};

use crate::support::start;

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// A server on a fresh workspace holding `src/a.rs`, and an editor with it open.
fn setup(text: &str) -> (tempfile::TempDir, Editor, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.rs"), text).unwrap();
    let mut client = start(&[]);
    let caps = json!({
        "general": { "positionEncodings": ["utf-16"] },
        "workspace": { "workspaceEdit": {
            "documentChanges": true,
            "resourceOperations": ["create", "rename", "delete"],
            "failureHandling": "abort"
        }}
    });
    let init = client
        .initialize(
            caps,
            json!({ "workspaceFolders": [{ "uri": url(&root), "name": "ws" }] }),
        )
        .unwrap();
    let commands = &init["capabilities"]["executeCommandProvider"]["commands"];
    for c in ["agentls.applyEdit", "agentls.implement", "agentls.cancel"] {
        assert!(
            commands.as_array().unwrap().contains(&json!(c)),
            "{commands}"
        );
    }
    let mut editor = Editor::new(client, PositionEncoding::Utf16);
    let uri = url(&root.join("src/a.rs"));
    editor.open(&uri, text).unwrap();
    (dir, editor, uri)
}

fn apply(editor: &mut Editor, format: &str, edit: Value) -> Result<Value, Value> {
    let edit = if let Value::String(s) = edit {
        s
    } else {
        edit.to_string()
    };
    editor
        .client
        .request(
            "workspace/executeCommand",
            json!({ "command": "agentls.applyEdit", "arguments": [{ "format": format, "edit": edit }] }),
        )
        .unwrap()
}

fn server_text(editor: &mut Editor, uri: &str) -> String {
    let r = editor
        .client
        .request_ok(
            "agentls/viewFileText",
            json!({ "textDocument": { "uri": uri } }),
        )
        .unwrap();
    r["text"].as_str().unwrap().to_owned()
}

const TEXT: &str = "fn greet() {\n    println!(\"hi 😀\");\n}\n\nfn other() {}\n";

#[test]
fn an_edit_lands_in_the_buffer_not_on_disk() {
    let (dir, mut editor, uri) = setup(TEXT);
    let edit =
        json!({ "path": "src/a.rs", "old_string": "\"hi 😀\"", "new_string": "\"hello 😀\"" });
    let result = apply(&mut editor, "str-replace", edit).unwrap();
    assert_eq!(result["retried"], false, "{result}");
    let expected = TEXT.replace("hi 😀", "hello 😀");
    assert_eq!(editor.text(&uri).unwrap(), expected);
    assert_eq!(server_text(&mut editor, &uri), expected);
    // The editor holds the change; nothing was written behind its back.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/a.rs")).unwrap(),
        TEXT
    );
    // The edit carried the buffer's version and minimal ranges (only "hi" → "hello").
    let answers = editor.buffers.lock().unwrap().answers.clone();
    assert_eq!(answers, vec![json!({ "applied": true })]);
}

#[test]
fn typing_elsewhere_during_the_edit_is_rebased_and_retried() {
    let (_dir, mut editor, uri) = setup(TEXT);
    // The user types on the last line while the edit is in flight: the edit's version is
    // stale, the editor refuses it, the server rebases over the typing and retries.
    editor.buffers.lock().unwrap().type_before_next_apply.push((
        uri.clone(),
        4,
        3,
        4,
        8,
        "renamed".to_owned(),
    ));
    let edit = json!({ "path": "src/a.rs", "old_string": "\"hi 😀\"", "new_string": "\"bye\"" });
    let result = apply(&mut editor, "str-replace", edit).unwrap();
    assert_eq!(result["retried"], true, "{result}");
    let expected = "fn greet() {\n    println!(\"bye\");\n}\n\nfn renamed() {}\n";
    assert_eq!(editor.text(&uri).unwrap(), expected);
    assert_eq!(server_text(&mut editor, &uri), expected);
    let answers = editor.buffers.lock().unwrap().answers.clone();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["applied"], false);
}

#[test]
fn an_edit_neovim_skips_silently_is_noticed_and_retried() {
    let (_dir, mut editor, uri) = setup(TEXT);
    // Neovim answers `applied: true` for an edit to an older version of a buffer but
    // does not apply it: the server must notice the buffer moved on without the edit.
    {
        let mut b = editor.buffers.lock().unwrap();
        b.skip_stale_silently = true;
        b.type_before_next_apply
            .push((uri.clone(), 4, 3, 4, 8, "renamed".to_owned()));
    }
    let edit = json!({ "path": "src/a.rs", "old_string": "\"hi 😀\"", "new_string": "\"bye\"" });
    let result = apply(&mut editor, "str-replace", edit).unwrap();
    assert_eq!(result["retried"], true, "{result}");
    let expected = "fn greet() {\n    println!(\"bye\");\n}\n\nfn renamed() {}\n";
    assert_eq!(editor.text(&uri).unwrap(), expected);
    assert_eq!(server_text(&mut editor, &uri), expected);
    let answers = editor.buffers.lock().unwrap().answers.clone();
    assert_eq!(
        answers,
        vec![json!({ "applied": true }), json!({ "applied": true })]
    );
}

#[test]
fn typing_on_the_same_lines_refuses_the_edit_and_keeps_the_typing() {
    let (_dir, mut editor, uri) = setup(TEXT);
    editor.buffers.lock().unwrap().type_before_next_apply.push((
        uri.clone(),
        1,
        14,
        1,
        16,
        "yo".to_owned(),
    ));
    let edit = json!({ "path": "src/a.rs", "old_string": "\"hi 😀\"", "new_string": "\"bye\"" });
    let err = apply(&mut editor, "str-replace", edit).unwrap_err();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("edited the same lines"),
        "{err}"
    );
    let expected = TEXT.replace("hi 😀", "yo 😀");
    assert_eq!(editor.text(&uri).unwrap(), expected);
    assert_eq!(server_text(&mut editor, &uri), expected);
}

#[test]
fn a_patch_that_does_not_match_changes_nothing() {
    let (_dir, mut editor, uri) = setup(TEXT);
    let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-fn missing() {}\n+fn found() {}\n*** End Patch\n";
    let err = apply(&mut editor, "apply-patch", json!(patch)).unwrap_err();
    assert_eq!(err["code"], -32803, "{err}");
    assert_eq!(editor.text(&uri).unwrap(), TEXT);
    assert!(
        editor.buffers.lock().unwrap().answers.is_empty(),
        "nothing was sent to the editor"
    );
}

#[test]
fn a_new_file_is_created_through_resource_operations() {
    let (dir, mut editor, _uri) = setup(TEXT);
    let patch = "*** Begin Patch\n*** Add File: src/new.rs\n+pub fn fresh() {}\n*** End Patch\n";
    let result = apply(&mut editor, "apply-patch", json!(patch)).unwrap();
    assert!(
        result["files"][0].as_str().unwrap().starts_with("A "),
        "{result}"
    );
    let new_uri = url(&dir.path().canonicalize().unwrap().join("src/new.rs"));
    assert_eq!(
        editor.text(&new_uri).as_deref(),
        Some("pub fn fresh() {}\n")
    );
    assert_eq!(server_text(&mut editor, &new_uri), "pub fn fresh() {}\n");
}
