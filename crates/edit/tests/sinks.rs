//! The two sinks of a plan: the live-buffer store (versions, buffers over disk) and the
//! disk writer (all or nothing).

use std::fs;

use agentls_edit::{
    FileChange, FileOp, Format, Hunk, Planner, StoreSource, SubstringHunk, apply_edits, parse,
    write_plan,
};
use agentls_text::{DocUri, DocumentStore, ReadLimits};
use proptest::prelude::*;

#[test]
fn live_buffer_wins_and_carries_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.rs");
    fs::write(&path, "fn disk() {}\n").unwrap();
    let store = DocumentStore::new();
    let uri = DocUri::from_file_path(&path).unwrap();
    store.open(uri, "rust", 5, "fn buffer() {}\n");
    let source = StoreSource {
        store: &store,
        limits: ReadLimits::default(),
    };
    let ops = parse(
        Format::SearchReplace,
        "a.rs\n<<<<<<< SEARCH\nfn buffer() {}\n=======\nfn edited() {}\n>>>>>>> REPLACE\n",
    )
    .unwrap();
    let plan = Planner::new(dir.path(), &source).plan(&ops).unwrap();
    let FileChange::Edit(change) = &plan.changes[0] else {
        panic!("{:?}", plan.changes)
    };
    assert_eq!(change.version, Some(5));
    assert_eq!(change.new_text, "fn edited() {}\n");
    // Nothing was written: the disk still has its own text.
    assert_eq!(fs::read_to_string(&path).unwrap(), "fn disk() {}\n");
}

#[test]
fn staging_failure_leaves_the_tree_untouched() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("zblock"), "a file, not a directory\n").unwrap();
    fs::write(dir.path().join("keep.txt"), "before\n").unwrap();
    let plan = agentls_edit::Plan {
        changes: vec![
            FileChange::Create {
                path: dir.path().join("anew/deeper/ok.txt"),
                text: "ok\n".into(),
            },
            FileChange::Create {
                path: dir.path().join("zblock/inside.txt"),
                text: "cannot exist\n".into(),
            },
        ],
        root: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    // Staged in path order: `anew/...` is written to a temporary (and its directories
    // made) before `zblock/...` fails; all of it must be rolled back.
    let err = write_plan(&plan).unwrap_err();
    assert!(err.is_environment(), "{err}");
    let mut names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["keep.txt", "zblock"],
        "no new dirs, no temporaries"
    );
}

fn lines() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec("[a-c ]{0,6}|\t[a-c]{1,3}|é😀", 1..30)
}

proptest! {
    /// Whatever the planner matched, its edits applied to the base give its new text.
    #[test]
    fn plan_edits_reproduce_new_text(file in lines(), pick in 0usize..30, new in "[x-z\n]{0,8}", crlf in any::<bool>()) {
        let eol = if crlf { "\r\n" } else { "\n" };
        let text = file.join(eol) + eol;
        let old = file[pick % file.len()].clone();
        let files = move |_: &std::path::Path| Ok(agentls_edit::Source { rope: text.as_str().into(), version: Some(1) });
        let ops = vec![FileOp::Update {
            path: "f.txt".into(),
            move_to: None,
            hunks: vec![Hunk::Substring(SubstringHunk { old, new, replace_all: true, line_hint: None })],
        }];
        // Refusals (empty or ambiguous old text) are fine; a wrong edit is not.
        if let Ok(plan) = Planner::new("/ws", &files).plan(&ops) {
            for c in &plan.changes {
                if let FileChange::Edit(t) = c {
                    prop_assert_eq!(apply_edits(&t.base, &t.edits).to_string(), t.new_text.clone());
                }
            }
        }
    }
}
