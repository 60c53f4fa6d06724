//! Keeping the index current: live buffers, incremental edits, refresh, removal, ignore
//! files and overlays during the crawl.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a panic is a failed test

use std::fs;
use std::path::Path;

use agentls_index::{
    Index, IndexOptions, Language, Overlay, SyntaxErrorKind, check_query, syntax_errors,
};

fn names(index: &Index, path: &Path) -> Vec<String> {
    index
        .file_symbols(path)
        .iter()
        .map(|s| format!("{} {}", s.kind.as_str(), s.name))
        .collect()
}

#[test]
fn every_tags_query_compiles() {
    for lang in Language::ALL {
        check_query(lang).unwrap_or_else(|e| panic!("{lang:?}: {e}"));
    }
}

#[test]
fn languages_by_extension_and_id() {
    assert_eq!(
        Language::from_path(Path::new("a/b.rs")),
        Some(Language::Rust)
    );
    assert_eq!(Language::from_path(Path::new("x.tsx")), Some(Language::Tsx));
    assert_eq!(Language::from_path(Path::new("x.h")), Some(Language::C));
    assert_eq!(Language::from_path(Path::new("x.hpp")), Some(Language::Cpp));
    assert_eq!(Language::from_path(Path::new("Makefile")), None);
    assert_eq!(
        Language::from_language_id("typescriptreact"),
        Some(Language::Tsx)
    );
    assert_eq!(Language::from_language_id("cobol"), None);
    for lang in Language::ALL {
        assert_eq!(Language::from_language_id(lang.language_id()), Some(lang));
    }
}

#[test]
fn syntax_errors_find_error_and_missing_nodes() {
    assert!(syntax_errors(Language::Rust, "fn main() { let x = 1; }").is_empty());
    let errs = syntax_errors(Language::Rust, "fn main() {\n    let x = ;\n}\n");
    assert!(!errs.is_empty());
    assert_eq!(errs[0].line, 1);
    let errs = syntax_errors(Language::Python, "def f(:\n    pass\n");
    assert!(!errs.is_empty());
    let errs = syntax_errors(Language::Java, "class A { void f() { int x = 1 } }");
    assert!(
        errs.iter()
            .any(|e| e.kind == SyntaxErrorKind::Missing(";".into())),
        "{errs:?}"
    );
}

#[test]
fn live_buffer_edits_reindex_incrementally() {
    let mut index = Index::default();
    let path = Path::new("/ws/src/a.rs");
    let v1 = "fn alpha() {}\n\nfn beta() { alpha(); }\n";
    assert!(index.update_file(path, v1));
    assert!(index.is_live(path));
    assert_eq!(names(&index, path), ["function alpha", "function beta"]);
    assert_eq!(index.references("alpha").len(), 1);

    // Rename beta to gamma and add a function: the kept tree is edited and reparsed.
    let v2 = "fn alpha() {}\n\nfn gamma() { alpha(); alpha(); }\nstruct S;\n";
    assert!(index.update_file(path, v2));
    assert_eq!(
        names(&index, path),
        ["function alpha", "function gamma", "struct S"]
    );
    assert!(index.definitions("beta").is_empty());
    assert_eq!(index.definitions("gamma").len(), 1);
    assert_eq!(index.references("alpha").len(), 2);

    // The incremental result equals a fresh parse of the same text.
    let mut fresh = Index::default();
    fresh.update_file(path, v2);
    assert_eq!(index.file_symbols(path), fresh.file_symbols(path));
    assert_eq!(index.references("alpha"), fresh.references("alpha"));

    // Same text again is a no-op edit.
    assert!(index.update_file(path, v2));
    assert_eq!(index.stats().definitions, 3);
}

#[test]
fn many_small_edits_stay_equal_to_fresh_parse() {
    let mut index = Index::default();
    let path = Path::new("/ws/m.py");
    let mut text = String::from("class A:\n    def f(self):\n        return g()\n");
    index.update_file(path, &text);
    for i in 0..30 {
        let at = text.len() / 2;
        let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap();
        if i % 3 == 0 {
            text.insert_str(at, "\ndef h():\n    pass\n");
        } else if i % 3 == 1 {
            text.push_str(&format!("\ndef fn_{i}():\n    return A()\n"));
        } else {
            text.replace_range(0..1, "c");
            text.replace_range(0..1, "c");
        }
        index.update_file(path, &text);
        let mut fresh = Index::default();
        fresh.update_file(path, &text);
        assert_eq!(
            index.file_symbols(path),
            fresh.file_symbols(path),
            "step {i}"
        );
        assert_eq!(index.outline(path), fresh.outline(path), "step {i}");
    }
}

#[test]
fn remove_and_refresh_follow_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("a.go"), "package a\nfunc One() {}\n").unwrap();
    fs::write(root.join("b.go"), "package a\nfunc Two() { One() }\n").unwrap();
    let mut index = Index::default();
    let stats = index.crawl(root, &Overlay::new());
    assert_eq!(stats.files, 2);
    assert_eq!(index.references("One").len(), 1);

    fs::write(
        root.join("b.go"),
        "package a\nfunc Three() { One(); One() }\n",
    )
    .unwrap();
    index.refresh_file(&root.join("b.go"));
    assert!(index.definitions("Two").is_empty());
    assert_eq!(index.definitions("Three").len(), 1);
    assert_eq!(index.references("One").len(), 2);

    fs::remove_file(root.join("b.go")).unwrap();
    index.refresh_file(&root.join("b.go"));
    assert!(index.definitions("Three").is_empty());
    assert!(index.references("One").is_empty());
    assert!(!index.remove_file(&root.join("b.go")));
    assert!(index.remove_file(&root.join("a.go")));
    assert_eq!(index.stats().files, 0);
    assert_eq!(index.stats().lines, 0);
}

#[test]
fn refresh_leaves_live_buffers_alone_until_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ts");
    fs::write(&path, "function onDisk() {}\n").unwrap();
    let mut index = Index::default();
    index.update_file(&path, "function inBuffer() {}\n");
    index.refresh_file(&path);
    assert_eq!(index.definitions("inBuffer").len(), 1);
    assert!(index.definitions("onDisk").is_empty());
    index.close_file(&path);
    assert!(!index.is_live(&path));
    assert_eq!(index.definitions("onDisk").len(), 1);
    assert!(index.definitions("inBuffer").is_empty());
}

#[test]
fn crawl_respects_gitignore_hidden_size_and_binary() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("gen")).unwrap();
    fs::create_dir_all(root.join(".hidden")).unwrap();
    fs::write(root.join(".gitignore"), "gen/\n").unwrap();
    fs::write(root.join("keep.py"), "def kept():\n    pass\n").unwrap();
    fs::write(root.join("gen/skip.py"), "def ignored():\n    pass\n").unwrap();
    fs::write(root.join(".hidden/h.py"), "def hidden():\n    pass\n").unwrap();
    fs::write(root.join("bin.py"), b"def binary():\0\n").unwrap();
    let big = "def big():\n    pass\n".repeat(1000);
    fs::write(root.join("big.py"), &big).unwrap();
    let mut index = Index::new(IndexOptions {
        max_file_bytes: 10_000,
        ..IndexOptions::default()
    });
    let stats = index.crawl(root, &Overlay::new());
    assert_eq!(stats.files, 1, "{stats:?}");
    assert_eq!(stats.skipped, 2, "{stats:?}");
    assert_eq!(index.definitions("kept").len(), 1);
    for name in ["ignored", "hidden", "binary", "big"] {
        assert!(index.definitions(name).is_empty(), "{name}");
    }
}

#[test]
fn crawl_takes_open_buffers_over_disk() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    fs::write(root.join("a.java"), "class OnDisk {}\n").unwrap();
    let mut overlay = Overlay::new();
    overlay.insert_text(root.join("a.java"), "class Live { void run() {} }\n");
    let mut index = Index::default();
    index.crawl(&root, &overlay);
    assert!(index.definitions("OnDisk").is_empty());
    assert_eq!(index.definitions("Live").len(), 1);
    assert!(index.is_live(&root.join("a.java")));
}

#[test]
fn memory_is_reported_per_line() {
    let mut index = Index::default();
    let text = (0..200)
        .map(|i| format!("fn f{i}() {{ f{}(); }}\n", i + 1))
        .collect::<String>();
    index.update_file(Path::new("/ws/lib.rs"), &text);
    let stats = index.stats();
    assert_eq!(stats.lines, 200);
    assert_eq!(stats.definitions, 200);
    assert_eq!(stats.references, 200);
    assert!(
        stats.bytes_per_line > 10.0 && stats.bytes_per_line < 1000.0,
        "{stats:?}"
    );
}

#[test]
fn file_events_update_the_index_and_skip_ignored_paths() {
    use agentls_index::FileEvent;
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    fs::create_dir_all(root.join("out")).unwrap();
    fs::write(root.join(".gitignore"), "out/\n").unwrap();
    let mut index = Index::default();
    index.crawl(&root, &Overlay::new());

    fs::write(root.join("new.c"), "int fresh(void) { return 0; }\n").unwrap();
    index.apply_event(&FileEvent::Changed(root.join("new.c")));
    assert_eq!(index.definitions("fresh").len(), 1);

    fs::write(
        root.join("out/gen.c"),
        "int generated(void) { return 0; }\n",
    )
    .unwrap();
    index.apply_event(&FileEvent::Changed(root.join("out/gen.c")));
    assert!(index.definitions("generated").is_empty());

    fs::remove_file(root.join("new.c")).unwrap();
    index.apply_event(&FileEvent::Removed(root.join("new.c")));
    assert!(index.definitions("fresh").is_empty());
}

/// Text files without a grammar (docs, configuration) are followed by revision, with
/// their live buffers, for semantic search; they get no symbols.
#[test]
fn text_files_without_a_grammar_are_followed_by_revision() {
    use agentls_index::FileEvent;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    fs::create_dir_all(root.join("docs")).unwrap();
    fs::create_dir_all(root.join("out")).unwrap();
    fs::write(root.join(".gitignore"), "out/\n").unwrap();
    fs::write(
        root.join("README.md"),
        "# Uploads\nFailed uploads are retried.\n",
    )
    .unwrap();
    fs::write(root.join("Cargo.lock"), "# generated\n").unwrap();
    fs::write(root.join("out/notes.md"), "ignored\n").unwrap();
    fs::write(root.join("big.md"), "x\n".repeat(6_000)).unwrap();
    fs::write(root.join("lib.py"), "def f():\n    pass\n").unwrap();
    let mut index = Index::new(IndexOptions {
        max_file_bytes: 10_000,
        ..IndexOptions::default()
    });
    let stats = index.crawl(&root, &Overlay::new());
    assert_eq!((stats.files, stats.plain), (1, 1), "{stats:?}");
    let readme = root.join("README.md");
    assert!(index.follows(&readme) && !index.contains(&readme));
    assert!(index.file_symbols(&readme).is_empty());
    assert_eq!(
        index.plain_changed_since(0),
        vec![Arc::<Path>::from(readme.as_path())]
    );

    // An open buffer: its text, and a new revision.
    let rev = index.revision();
    assert!(!index.update_file(&readme, "# Uploads\nedited\n"));
    assert_eq!(index.live_text(&readme), Some("# Uploads\nedited\n"));
    assert!(index.is_live(&readme));
    assert_eq!(index.plain_changed_since(rev).len(), 1);
    // The same text again changes nothing.
    let rev = index.revision();
    index.update_file(&readme, "# Uploads\nedited\n");
    assert!(index.plain_changed_since(rev).is_empty());
    // A change on disk does not override the buffer; closing goes back to the disk.
    index.apply_event(&FileEvent::Changed(readme.clone()));
    assert_eq!(index.live_text(&readme), Some("# Uploads\nedited\n"));
    index.close_file(&readme);
    assert_eq!(index.live_text(&readme), None);
    assert_eq!(index.plain_changed_since(rev).len(), 1);

    // A new file, told by an event; one in an ignored directory is not followed.
    let guide = root.join("docs/guide.rst");
    fs::write(&guide, "Retries\n=======\n").unwrap();
    index.apply_event(&FileEvent::Changed(guide.clone()));
    assert!(index.follows(&guide));
    fs::write(root.join("out/more.md"), "ignored\n").unwrap();
    index.apply_event(&FileEvent::Changed(root.join("out/more.md")));
    assert!(!index.follows(&root.join("out/more.md")));
    // Removed on disk: forgotten, with a new revision for followers to look.
    let rev = index.revision();
    fs::remove_file(&guide).unwrap();
    index.apply_event(&FileEvent::Removed(guide.clone()));
    assert!(!index.follows(&guide));
    assert!(index.revision() > rev);
}

#[test]
fn watcher_reports_changes_and_removals() {
    use agentls_index::{FileEvent, FileWatcher};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (tx, rx) = mpsc::channel();
    let _watcher = FileWatcher::new(&root, move |e| {
        let _ = tx.send(e);
    })
    .unwrap();
    let file = root.join("w.py");
    fs::write(&file, "def watched():\n    pass\n").unwrap();
    let wait_for = |want: &dyn Fn(&FileEvent) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(e) = rx.recv_timeout(Duration::from_millis(100))
                && want(&e)
            {
                return true;
            }
        }
        false
    };
    assert!(wait_for(&|e| *e == FileEvent::Changed(file.clone())));
    fs::remove_file(&file).unwrap();
    assert!(wait_for(&|e| *e == FileEvent::Removed(file.clone())));
}

#[test]
fn language_can_come_from_the_language_id() {
    let mut index = Index::default();
    let path = Path::new("/ws/bin/tool");
    assert!(!index.update_file(path, "def main():\n    pass\n"));
    let lang = Language::from_language_id("python").unwrap();
    assert!(index.update_file_as(path, lang, "def main():\n    pass\n"));
    assert_eq!(index.definitions("main").len(), 1);
    assert!(index.update_file_as(path, lang, "def main2():\n    pass\n"));
    assert_eq!(index.definitions("main2").len(), 1);
}

/// Random edits to real files in every language: after each, the incrementally updated
/// symbols, references and outline equal those of a fresh parse of the same text.
#[test]
fn random_edits_match_fresh_parse_in_every_language() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/workspaces");
    let files = [
        "rust/src/lib.rs",
        "python/pkg/models.py",
        "typescript/src/model.ts",
        "tsx/Button.tsx",
        "javascript/lib.js",
        "go/shapes.go",
        "c/util.h",
        "cpp/shape.hpp",
        "java/src/shapes/Circle.java",
    ];
    let snippets = [
        "fn x() {}\n",
        "def y():\n    z()\n",
        "class Q {}\n",
        "}",
        "{",
        "(",
        "\n",
        "  ",
        "call(1);\n",
        "int w(void) { return v(); }\n",
        "func G() { H() }\n",
        "S",
        "_",
        "/* c */",
        "\"",
        "impl T { fn m(&self) {} }\n",
        "void m() {}\n",
    ];
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % n.max(1)
    };
    for file in files {
        let path = fixtures.join(file);
        let mut text = fs::read_to_string(&path).unwrap();
        let mut index = Index::default();
        index.update_file(&path, &text);
        for step in 0..60 {
            let boundary = |t: &str, mut i: usize| {
                while !t.is_char_boundary(i) {
                    i -= 1;
                }
                i
            };
            let at = boundary(&text, next(text.len() + 1));
            match next(3) {
                0 | 1 => text.insert_str(at, snippets[next(snippets.len())]),
                _ => {
                    let end = boundary(&text, (at + next(12)).min(text.len()));
                    text.replace_range(at..end, "");
                }
            }
            index.update_file(&path, &text);
            let mut fresh = Index::default();
            fresh.update_file(&path, &text);
            assert_eq!(
                index.file_symbols(&path),
                fresh.file_symbols(&path),
                "{file} step {step}:\n{text}"
            );
            assert_eq!(
                index.file_references(&path),
                fresh.file_references(&path),
                "{file} step {step}:\n{text}"
            );
            assert_eq!(
                index.outline(&path),
                fresh.outline(&path),
                "{file} step {step}"
            );
        }
    }
}

#[test]
fn crawl_leaves_out_generated_files_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("hand.rs"), "fn written() {}\n").unwrap();
    fs::write(
        root.join("bindings.rs"),
        "/* automatically generated by rust-bindgen */\npub fn bound() {}\n",
    )
    .unwrap();
    fs::write(
        root.join("gen.go"),
        "// Code generated by stringer. DO NOT EDIT.\npackage x\nfunc Stringed() {}\n",
    )
    .unwrap();
    fs::write(root.join("huge.py"), "def huge():\n    pass\n".repeat(100)).unwrap();
    let options = IndexOptions {
        generated_bytes: 1000,
        ..IndexOptions::default()
    };
    let mut index = Index::new(options.clone());
    let stats = index.crawl(root, &Overlay::new());
    assert_eq!((stats.files, stats.generated, stats.skipped), (1, 3, 0));
    assert_eq!(index.definitions("written").len(), 1);
    for name in ["bound", "Stringed", "huge"] {
        assert!(index.definitions(name).is_empty(), "{name}");
    }
    // A file event for a generated file keeps it out too; an open buffer is indexed.
    index.refresh_file(&root.join("bindings.rs"));
    assert!(index.definitions("bound").is_empty());
    index.update_file(
        &root.join("bindings.rs"),
        "/* automatically generated */\npub fn bound() {}\n",
    );
    assert_eq!(index.definitions("bound").len(), 1);

    let mut index = Index::new(IndexOptions {
        skip_generated: false,
        ..options
    });
    let stats = index.crawl(root, &Overlay::new());
    assert_eq!((stats.files, stats.generated), (4, 0));
    for name in ["bound", "Stringed", "huge"] {
        assert!(!index.definitions(name).is_empty(), "{name}");
    }
}
