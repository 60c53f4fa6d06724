//! Grep over a temporary workspace: every option, ignore files and live buffers.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a panic is a failed test

use std::fs;
use std::path::{Path, PathBuf};

use agentls_search::{CaseMode, GrepError, GrepOptions, Overlay, grep};

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::create_dir_all(root.join(".git-like")).unwrap();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    let total = add(1, 2);\n    println!(\"{total}\");\n}\n",
    )
    .unwrap();
    fs::write(
        root.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n// TODO: Add more\n",
    )
    .unwrap();
    fs::write(root.join("notes.md"), "add (a+b) here\n").unwrap();
    fs::write(root.join("target/out.rs"), "fn add() {}\n").unwrap();
    fs::write(root.join(".git-like/h.rs"), "fn add() {}\n").unwrap();
    fs::write(root.join("blob.bin"), b"add\0\x01\x02").unwrap();
    (dir, root)
}

fn hits(root: &Path, opts: &GrepOptions, overlay: &Overlay) -> Vec<String> {
    grep(root, opts, overlay)
        .unwrap()
        .matches
        .iter()
        .map(|m| {
            format!(
                "{}:{}:{}",
                m.path.strip_prefix(root).unwrap().display(),
                m.line + 1,
                m.column + 1
            )
        })
        .collect()
}

#[test]
fn regex_respects_gitignore_hidden_and_binary() {
    let (_d, root) = workspace();
    let opts = GrepOptions::new(r"\badd\(");
    assert_eq!(
        hits(&root, &opts, &Overlay::new()),
        ["src/lib.rs:1:8", "src/main.rs:2:17"]
    );
    let mut all = GrepOptions::new(r"fn add");
    all.respect_ignore_files = false;
    all.hidden = true;
    assert_eq!(
        hits(&root, &all, &Overlay::new()),
        [".git-like/h.rs:1:1", "src/lib.rs:1:5", "target/out.rs:1:1"]
    );
}

#[test]
fn literal_and_case_modes() {
    let (_d, root) = workspace();
    let mut opts = GrepOptions::new("(a+b)");
    opts.literal = true;
    assert_eq!(hits(&root, &opts, &Overlay::new()), ["notes.md:1:5"]);

    let mut opts = GrepOptions::new("add");
    opts.word = true;
    let sensitive = hits(&root, &opts, &Overlay::new());
    assert!(!sensitive.iter().any(|h| h.starts_with("src/lib.rs:4")));
    opts.case = CaseMode::Insensitive;
    let insensitive = hits(&root, &opts, &Overlay::new());
    assert!(
        insensitive.iter().any(|h| h == "src/lib.rs:4:10"),
        "{insensitive:?}"
    );
    opts.case = CaseMode::Smart;
    assert_eq!(hits(&root, &opts, &Overlay::new()), insensitive);
    opts.pattern = "Add".into();
    assert_eq!(hits(&root, &opts, &Overlay::new()), ["src/lib.rs:4:10"]);
}

#[test]
fn include_and_exclude_globs() {
    let (_d, root) = workspace();
    let mut opts = GrepOptions::new("add");
    opts.include = vec!["*.md".into()];
    assert_eq!(hits(&root, &opts, &Overlay::new()), ["notes.md:1:1"]);
    let mut opts = GrepOptions::new("add");
    opts.exclude = vec!["*.rs".into()];
    assert_eq!(hits(&root, &opts, &Overlay::new()), ["notes.md:1:1"]);
    opts.exclude = vec!["src/main.rs".into()];
    assert_eq!(
        hits(&root, &opts, &Overlay::new()),
        ["notes.md:1:1", "src/lib.rs:1:8"]
    );
    let mut bad = GrepOptions::new("add");
    bad.include = vec!["a{b".into()];
    assert!(matches!(
        grep(&root, &bad, &Overlay::new()),
        Err(GrepError::Glob { .. })
    ));
}

#[test]
fn context_lines_and_text() {
    let (_d, root) = workspace();
    let mut opts = GrepOptions::new("a \\+ b");
    opts.before_context = 1;
    opts.after_context = 2;
    let found = grep(&root, &opts, &Overlay::new()).unwrap();
    assert_eq!(found.matches.len(), 1);
    let m = &found.matches[0];
    assert_eq!(m.text, "    a + b");
    assert_eq!((m.line, m.column, m.len), (1, 4, 5));
    let before: Vec<_> = m.before.iter().map(|c| (c.line, c.text.as_str())).collect();
    assert_eq!(before, [(0, "pub fn add(a: i32, b: i32) -> i32 {")]);
    let after: Vec<_> = m.after.iter().map(|c| (c.line, c.text.as_str())).collect();
    assert_eq!(after, [(2, "}"), (3, "// TODO: Add more")]);
    assert!(m.to_string().ends_with("src/lib.rs:2:5:    a + b"));
}

#[test]
fn max_results_truncates() {
    let (_d, root) = workspace();
    let mut opts = GrepOptions::new("a");
    opts.max_results = Some(2);
    let found = grep(&root, &opts, &Overlay::new()).unwrap();
    assert_eq!(found.matches.len(), 2);
    assert!(found.truncated);
    opts.max_results = Some(1000);
    let found = grep(&root, &opts, &Overlay::new()).unwrap();
    assert!(!found.truncated);
    assert!(found.matches.len() > 2);
}

#[test]
fn live_buffers_replace_files_and_add_new_ones() {
    let (_d, root) = workspace();
    let mut overlay = Overlay::new();
    overlay.insert_text(root.join("src/lib.rs"), "pub fn sum(a: i32) -> i32 { a }\n");
    overlay.insert_text(root.join("src/new.rs"), "fn x() { add(1, 1); }\n");
    overlay.insert_text(root.join("target/new.rs"), "fn y() { add(1, 1); }\n");
    overlay.insert_text("/elsewhere/z.rs", "add(\n");
    let opts = GrepOptions::new(r"add\(");
    assert_eq!(
        hits(&root, &opts, &overlay),
        ["src/main.rs:2:17", "src/new.rs:1:10"]
    );
    let found = grep(&root, &GrepOptions::new("sum"), &overlay).unwrap();
    assert_eq!(found.matches.len(), 1);
    assert!(found.matches[0].from_buffer);
}

#[test]
fn invalid_pattern_is_an_error() {
    let (_d, root) = workspace();
    let err = grep(&root, &GrepOptions::new("(unclosed"), &Overlay::new()).unwrap_err();
    assert!(matches!(err, GrepError::Pattern(_)), "{err}");
}
