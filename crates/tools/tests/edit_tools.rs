//! The edit tools through the edit engine, landing on disk (`DiskSink`) or in memory
//! (`MemorySink`, with a live buffer that differs from the disk).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;

use agentls_edit::FileChange;
use agentls_tools::{ErrorClass, MemorySink};
use common::{ws, ws_with};
use serde_json::json;

#[tokio::test]
async fn str_replace_lands_on_disk_and_reports_the_hunk() {
    let w = ws(&[("src/lib.rs", "fn a() {\n    old();\n}\n")]);
    let out = w
        .ok(
            "str_replace",
            json!({"path": "src/lib.rs", "old_string": "old();", "new_string": "new();"}),
        )
        .await;
    assert_eq!(w.disk("src/lib.rs"), "fn a() {\n    new();\n}\n");
    assert!(out.contains("Edited src/lib.rs (1 change)"), "{out}");
    assert!(out.contains("hunk 1 at line 2"), "{out}");
}

#[tokio::test]
async fn a_failed_str_replace_changes_nothing_and_shows_the_nearest_lines() {
    let w = ws(&[("src/lib.rs", "fn a() {\n    old_call(1, 2);\n}\n")]);
    let e = w
        .err(
            "str_replace",
            json!({"path": "src/lib.rs", "old_string": "old_cal(1, 3);\nzzz", "new_string": "x"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(e.message.contains("nothing was changed"), "{}", e.message);
    assert!(
        e.message.contains("old_call(1, 2)"),
        "nearest lines: {}",
        e.message
    );
    assert_eq!(w.disk("src/lib.rs"), "fn a() {\n    old_call(1, 2);\n}\n");

    let w = ws(&[("a.txt", "x = 1\nx = 1\n")]);
    let e = w
        .err(
            "str_replace",
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}),
        )
        .await;
    assert!(
        e.message.contains('1') && e.message.contains('2'),
        "candidates: {}",
        e.message
    );
    w.ok(
        "str_replace",
        json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "line_hint": 2}),
    )
    .await;
    assert_eq!(w.disk("a.txt"), "x = 1\nx = 2\n");
    let e = w
        .err(
            "str_replace",
            json!({"path": "missing.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(e.message.contains("not found"), "{}", e.message);
}

#[tokio::test]
async fn edits_match_the_live_buffer_not_the_disk() {
    let sink = Arc::new(MemorySink::new());
    let w = ws_with(&[("src/lib.rs", "fn disk() {}\n")], sink.clone());
    w.open("src/lib.rs", "fn live() {}\n");
    w.ok(
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "live", "new_string": "edited"}),
    )
    .await;
    let plans = sink.plans();
    assert_eq!(plans.len(), 1);
    let FileChange::Edit(change) = &plans[0].changes[0] else {
        panic!("expected an edit: {:?}", plans[0].changes);
    };
    assert_eq!(change.version, Some(1), "the buffer's version");
    assert_eq!(change.new_text, "fn edited() {}\n");
    assert_eq!(
        sink.file(&w.path("src/lib.rs")),
        Some(Some("fn edited() {}\n".into()))
    );
    // The memory sink never writes.
    assert_eq!(w.disk("src/lib.rs"), "fn disk() {}\n");
    // The disk's text is not there to match.
    let e = w
        .err(
            "str_replace",
            json!({"path": "src/lib.rs", "old_string": "fn disk", "new_string": "fn x"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
}

#[tokio::test]
async fn apply_patch_adds_updates_and_reports_new_syntax_errors() {
    let w = ws(&[("src/lib.rs", "fn a() {\n    old();\n}\n")]);
    let patch = "*** Begin Patch\n*** Add File: src/new.rs\n+pub fn n() {}\n*** Update File: src/lib.rs\n@@ fn a() {\n-    old();\n+    new(;\n*** End Patch";
    let out = w.ok("apply_patch", json!({"patch": patch})).await;
    assert_eq!(w.disk("src/new.rs"), "pub fn n() {}\n");
    assert_eq!(w.disk("src/lib.rs"), "fn a() {\n    new(;\n}\n");
    assert!(out.contains("Created src/new.rs"), "{out}");
    assert!(
        out.contains("WARNING: the edit introduced syntax errors in src/lib.rs"),
        "{out}"
    );
    assert!(out.contains("line 2"), "{out}");
    // A broken patch is refused whole.
    let e = w
        .err(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Frobnicate: x\n*** End Patch"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    // `input` is accepted as an alias of `patch` (codex's name).
    let patch = "*** Begin Patch\n*** Delete File: src/new.rs\n*** End Patch";
    w.ok("apply_patch", json!({"input": patch})).await;
    assert!(!w.path("src/new.rs").exists());
}

#[tokio::test]
async fn write_insert_move_and_delete() {
    let w = ws(&[("a.txt", "one\ntwo\n")]);
    w.ok(
        "write_file",
        json!({"path": "deep/dir/b.txt", "content": "hello\n"}),
    )
    .await;
    assert_eq!(w.disk("deep/dir/b.txt"), "hello\n");
    w.ok("read_file", json!({"path": "a.txt"})).await;
    w.ok("write_file", json!({"path": "a.txt", "content": "uno\n"}))
        .await;
    assert_eq!(w.disk("a.txt"), "uno\n");
    w.ok(
        "insert",
        json!({"path": "a.txt", "line": 0, "text": "zero"}),
    )
    .await;
    assert_eq!(w.disk("a.txt"), "zero\nuno\n");
    let e = w
        .err("insert", json!({"path": "a.txt", "line": 9, "text": "x"}))
        .await;
    assert!(e.message.contains("2 lines"), "{}", e.message);
    let out = w
        .ok("move_file", json!({"from": "a.txt", "to": "moved/a.txt"}))
        .await;
    assert!(out.contains("Moved a.txt to moved/a.txt"), "{out}");
    assert_eq!(w.disk("moved/a.txt"), "zero\nuno\n");
    assert!(!w.path("a.txt").exists());
    let e = w
        .err(
            "move_file",
            json!({"from": "moved/a.txt", "to": "deep/dir/b.txt"}),
        )
        .await;
    assert!(e.message.contains("already exists"), "{}", e.message);
    w.ok("delete_file", json!({"path": "moved/a.txt"})).await;
    assert!(!w.path("moved/a.txt").exists());
    let e = w.err("delete_file", json!({"path": "moved/a.txt"})).await;
    assert!(e.message.contains("not found"), "{}", e.message);
    let e = w
        .err(
            "write_file",
            json!({"path": "../escape.txt", "content": ""}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
}

#[tokio::test]
async fn disk_sink_refuses_a_plan_whose_file_changed_on_disk() {
    // Plan against the live buffer (which equals the old disk), then change the disk.
    let sink = agentls_tools::DiskSink::new();
    let w = ws(&[("a.txt", "old\n")]);
    let plan = {
        let ops = vec![agentls_edit::FileOp::Write {
            path: "a.txt".into(),
            content: "new\n".into(),
        }];
        let source = agentls_edit::DiskSource::default();
        agentls_edit::Planner::new(&w.root, &source)
            .plan(&ops)
            .unwrap()
    };
    std::fs::write(w.path("a.txt"), "someone else\n").unwrap();
    let e = agentls_tools::EditSink::apply(&sink, "test", plan)
        .await
        .unwrap_err();
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
    assert!(e.message.contains("changed on disk"), "{}", e.message);
    assert_eq!(w.disk("a.txt"), "someone else\n");
}

#[tokio::test]
async fn a_refusing_sink_is_reported_and_nothing_lands() {
    let sink = Arc::new(MemorySink::new());
    sink.refuse_with("the editor rejected the edit");
    let w = ws_with(&[("a.txt", "a\n")], sink.clone());
    w.ok("read_file", json!({"path": "a.txt"})).await;
    let e = w
        .err("write_file", json!({"path": "a.txt", "content": "b\n"}))
        .await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
    assert!(
        e.message.contains("the editor rejected the edit"),
        "{}",
        e.message
    );
    assert!(sink.plans().is_empty());
}

#[tokio::test]
async fn disk_sink_with_index_makes_new_symbols_findable_at_once() {
    let mut w = ws(&[("src/lib.rs", "pub fn old() {}\n")]);
    w.crawl();
    w.ctx.edits = Arc::new(agentls_tools::DiskSink::with_index(w.index.clone()));
    w.ok(
        "write_file",
        json!({"path": "src/new.rs", "content": "pub fn fresh() {}\n"}),
    )
    .await;
    let out = w
        .ok("symbols", json!({"name": "fresh", "find": "definitions"}))
        .await;
    assert!(out.contains("src/new.rs:1 function fresh"), "{out}");
    w.ok("delete_file", json!({"path": "src/lib.rs"})).await;
    let out = w
        .ok("symbols", json!({"name": "old", "find": "definitions"}))
        .await;
    assert!(out.contains("definitions of `old` (0)"), "{out}");
}

#[tokio::test]
async fn write_file_of_a_file_never_read_is_refused() {
    let w = ws(&[("a.txt", "the user's text\n"), ("empty.txt", "")]);
    let e = w
        .err("write_file", json!({"path": "a.txt", "content": "model\n"}))
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(
        e.message.contains("read it with read_file"),
        "{}",
        e.message
    );
    assert_eq!(w.disk("a.txt"), "the user's text\n");
    // A partial read is not a read of the whole file.
    w.ok(
        "read_file",
        json!({"path": "a.txt", "limit": 1, "offset": 1}),
    )
    .await;
    // (one line: this window is the whole file, so it counts)
    w.ok("write_file", json!({"path": "a.txt", "content": "model\n"}))
        .await;
    assert_eq!(w.disk("a.txt"), "model\n");
    // Empty and new files need no read.
    w.ok("write_file", json!({"path": "empty.txt", "content": "x\n"}))
        .await;
    assert_eq!(w.disk("empty.txt"), "x\n");
}

#[tokio::test]
async fn a_window_of_a_file_does_not_count_as_read() {
    let w = ws(&[("a.txt", "1\n2\n3\n")]);
    w.ok("read_file", json!({"path": "a.txt", "limit": 2}))
        .await;
    let e = w
        .err("write_file", json!({"path": "a.txt", "content": "x\n"}))
        .await;
    assert!(e.message.contains("has not been read"), "{}", e.message);
    assert_eq!(w.disk("a.txt"), "1\n2\n3\n");
}

/// Issue 15: the model read the file, the user added a line, the model wrote the whole
/// file. The user's line used to be deleted silently.
#[tokio::test]
async fn the_users_line_added_after_the_read_survives_a_whole_file_write() {
    let w = ws(&[("notes.md", "# Notes\n\nfirst\n\nlast\n")]);
    w.ok("read_file", json!({"path": "notes.md"})).await;
    // The user types a line in the editor (the live buffer) and saves it.
    let typed = "# Notes\n\nfirst\n\nlast\nthe user's line\n";
    w.open("notes.md", typed);
    std::fs::write(w.path("notes.md"), typed).unwrap();
    let out = w
        .ok(
            "write_file",
            json!({"path": "notes.md", "content": "# Notes\n\nFIRST\n\nlast\n"}),
        )
        .await;
    assert_eq!(
        w.disk("notes.md"),
        "# Notes\n\nFIRST\n\nlast\nthe user's line\n"
    );
    assert!(out.contains("merged"), "{out}");
    assert!(out.contains("line 6"), "{out}");
    // The editor shows what landed (this test's disk sink does not update buffers).
    w.open("notes.md", &w.disk("notes.md"));
    // The model never saw the user's line: a further write from its own view still
    // merges it in rather than dropping it.
    let out = w
        .ok(
            "write_file",
            json!({"path": "notes.md", "content": "# My notes\n\nFIRST\n\nlast\n"}),
        )
        .await;
    assert!(out.contains("merged"), "{out}");
    assert_eq!(
        w.disk("notes.md"),
        "# My notes\n\nFIRST\n\nlast\nthe user's line\n"
    );
}

#[tokio::test]
async fn a_conflicting_whole_file_write_is_refused_with_the_current_text() {
    let w = ws(&[("a.txt", "one\ntwo\nthree\n")]);
    w.ok("read_file", json!({"path": "a.txt"})).await;
    std::fs::write(w.path("a.txt"), "one\nTWO (user)\nthree\n").unwrap();
    let e = w
        .err(
            "write_file",
            json!({"path": "a.txt", "content": "one\n2 (model)\nthree\n"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(e.message.contains("nothing was changed"), "{}", e.message);
    assert!(e.message.contains("TWO (user)"), "{}", e.message);
    assert_eq!(w.disk("a.txt"), "one\nTWO (user)\nthree\n");
    // The refusal showed the current text: redoing the write on it lands.
    w.ok(
        "write_file",
        json!({"path": "a.txt", "content": "one\nTWO (user) and 2\nthree\n"}),
    )
    .await;
    assert_eq!(w.disk("a.txt"), "one\nTWO (user) and 2\nthree\n");
}

#[tokio::test]
async fn an_edit_the_model_made_counts_as_seen() {
    let w = ws(&[("a.txt", "alpha\nbeta\n")]);
    w.ok(
        "str_replace",
        json!({"path": "a.txt", "old_string": "beta", "new_string": "gamma"}),
    )
    .await;
    w.ok(
        "write_file",
        json!({"path": "a.txt", "content": "alpha\ngamma\ndelta\n"}),
    )
    .await;
    assert_eq!(w.disk("a.txt"), "alpha\ngamma\ndelta\n");
}

#[tokio::test]
async fn no_op_edits_are_invalid_arguments() {
    let w = ws(&[("a.txt", "a\nb\n")]);
    let e = w
        .err("insert", json!({"path": "a.txt", "line": 1, "text": ""}))
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(
        e.message.contains("the edit changes nothing"),
        "{}",
        e.message
    );
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+a\n*** End Patch";
    let e = w.err("apply_patch", json!({"patch": patch})).await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(
        e.message.contains("the edit changes nothing"),
        "{}",
        e.message
    );
    assert_eq!(w.disk("a.txt"), "a\nb\n");
}

/// A `str_replace` on a file the model has seen none of is answered with the file (the
/// lean profile's harness sends that instead of making the edit); a window read, the
/// model's own new file, a new file's empty `old_string` and other tools pass.
#[tokio::test]
async fn an_edit_of_an_unread_file_is_answered_with_the_file() {
    let w = ws(&[
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        ("big.py", "x = 1\ny = 2\nz = 3\n"),
    ]);
    let edit = |path: &str, old: &str| {
        json!({"path": path, "old_string": old, "new_string": "return 0"}).to_string()
    };
    let why = agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("./calc.py", "return"))
        .await
        .expect("a blind edit");
    assert!(why.contains("you have not read calc.py"), "{why}");
    assert!(
        why.contains("     2\t    return a - b"),
        "the file shown: {why}"
    );
    assert_eq!(w.disk("calc.py"), "def add(a, b):\n    return a - b\n");
    // Being shown the file counts as reading it.
    let again =
        agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("calc.py", "return")).await;
    assert_eq!(again, None);

    // A window of lines is a read.
    w.ok(
        "read_file",
        json!({"path": "big.py", "offset": 2, "limit": 1}),
    )
    .await;
    let after_window =
        agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("big.py", "y = 2")).await;
    assert_eq!(after_window, None);

    // A file the model created is one it knows.
    w.ok(
        "write_file",
        json!({"path": "new.py", "content": "a = 1\n"}),
    )
    .await;
    let own =
        agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("new.py", "a = 1")).await;
    assert_eq!(own, None);

    let w = ws(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let creates =
        agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("other.py", "")).await;
    assert_eq!(creates, None);
    let missing =
        agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("nope.py", "x")).await;
    assert_eq!(missing, None, "the tool itself says the file is missing");
    // Whole lines found once: the model knew the text (the task named the line).
    let whole =
        agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("calc.py", "return a - b"))
            .await;
    assert_eq!(whole, None);
    let two_lines = agentls_tools::read_before_edit(
        &w.ctx,
        "str_replace",
        &edit("calc.py", "def add(a, b):\n  return a - b\n"),
    )
    .await;
    assert_eq!(two_lines, None);
    let other_tool =
        agentls_tools::read_before_edit(&w.ctx, "write_file", &edit("calc.py", "return")).await;
    assert_eq!(other_tool, None);
    let broken = agentls_tools::read_before_edit(&w.ctx, "str_replace", "{\"path\": ").await;
    assert_eq!(broken, None, "the tool reports broken arguments");
    assert!(
        agentls_tools::read_before_edit(&w.ctx, "str_replace", &edit("calc.py", "return"))
            .await
            .is_some()
    );
}
