//! The read-only tools against temporary workspaces, with live buffers that differ from
//! the disk.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use agentls_tools::ErrorClass;
use common::ws;
use serde_json::json;

#[tokio::test]
async fn read_file_numbers_lines_and_pages() {
    let w = ws(&[("src/a.txt", "one\ntwo\nthree\nfour\n")]);
    let out = w.ok("read_file", json!({"path": "src/a.txt"})).await;
    assert_eq!(
        out,
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n"
    );
    let out = w
        .ok(
            "read_file",
            json!({"path": "src/a.txt", "offset": 2, "limit": 2}),
        )
        .await;
    assert!(out.starts_with("     2\ttwo\n     3\tthree\n"), "{out}");
    assert!(out.contains("offset=4"), "{out}");
    let e = w
        .err("read_file", json!({"path": "src/a.txt", "offset": 9}))
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(e.message.contains("4 lines"), "{}", e.message);
}

#[tokio::test]
async fn read_file_sees_the_live_buffer_first() {
    let w = ws(&[("src/lib.rs", "fn disk() {}\n")]);
    w.open("src/lib.rs", "fn live() {}\n");
    let out = w
        .call("read_file", json!({"path": "src/lib.rs"}))
        .await
        .unwrap();
    assert!(out.content.contains("fn live()"), "{}", out.content);
    assert!(out.summary.contains("unsaved buffer"), "{}", out.summary);
}

#[tokio::test]
async fn read_file_errors_are_clear_and_classified() {
    let w = ws(&[("bin.dat", "ab\0cd"), ("dir/x.txt", "x")]);
    let e = w.err("read_file", json!({"path": "bin.dat"})).await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
    assert!(e.message.contains("binary"), "{}", e.message);
    let e = w.err("read_file", json!({"path": "missing.rs"})).await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
    assert!(e.message.contains("no such file"), "{}", e.message);
    let e = w.err("read_file", json!({"path": "dir"})).await;
    assert!(e.message.contains("list_dir"), "{}", e.message);
    let e = w
        .err("read_file", json!({"path": "../../etc/passwd"}))
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(e.message.contains("outside the workspace"), "{}", e.message);
    let e = w.err("read_file", json!({"file": "x"})).await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
}

#[tokio::test]
async fn list_dir_respects_gitignore() {
    let w = ws(&[
        (".gitignore", "build/\n"),
        ("src/main.rs", ""),
        ("build/out.o", ""),
        ("README.md", ""),
    ]);
    let out = w.ok("list_dir", json!({})).await;
    assert!(out.contains("src/\n"), "{out}");
    assert!(out.contains("README.md"), "{out}");
    assert!(!out.contains("build"), "{out}");
    assert!(!out.contains("main.rs"), "depth 1 only: {out}");
    let out = w.ok("list_dir", json!({"path": ".", "depth": 2})).await;
    assert!(out.contains("  main.rs"), "{out}");
    let e = w.err("list_dir", json!({"path": "nope"})).await;
    assert_eq!(e.class, ErrorClass::UnexpectedEnvironment);
}

#[tokio::test]
async fn find_files_globs_at_any_depth_and_skips_ignored() {
    let w = ws(&[
        (".gitignore", "target/\n"),
        ("src/a.rs", ""),
        ("src/deep/b.rs", ""),
        ("target/c.rs", ""),
        ("notes.md", ""),
    ]);
    let out = w.ok("find_files", json!({"pattern": "*.rs"})).await;
    assert_eq!(out, "src/a.rs\nsrc/deep/b.rs");
    // With a slash, the glob is anchored at the search directory.
    let out = w
        .ok("find_files", json!({"pattern": "src/deep/*.rs"}))
        .await;
    assert_eq!(out, "src/deep/b.rs");
    let out = w.ok("find_files", json!({"pattern": "deep/*.rs"})).await;
    assert!(out.starts_with("no files match"), "{out}");
    let out = w
        .ok("find_files", json!({"pattern": "*.rs", "path": "src/deep"}))
        .await;
    assert_eq!(out, "src/deep/b.rs");
    let out = w.ok("find_files", json!({"pattern": "*.py"})).await;
    assert!(out.starts_with("no files match"), "{out}");
}

#[tokio::test]
async fn grep_searches_live_buffers_and_reports_bad_regex() {
    let w = ws(&[
        ("src/a.rs", "fn alpha() {}\n"),
        ("src/b.rs", "fn beta() {}\n"),
    ]);
    w.open("src/b.rs", "fn beta() {}\nfn alpha_unsaved() {}\n");
    let out = w.ok("grep", json!({"pattern": "alpha"})).await;
    assert_eq!(
        out,
        "src/a.rs:1: fn alpha() {}\nsrc/b.rs:2: fn alpha_unsaved() {}\n"
    );
    let out = w
        .ok(
            "grep",
            json!({"pattern": "alpha()", "literal": true, "include": "a.rs"}),
        )
        .await;
    assert_eq!(out, "src/a.rs:1: fn alpha() {}\n");
    let e = w.err("grep", json!({"pattern": "fn ("})).await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(e.message.contains("literal"), "{}", e.message);
    let out = w.ok("grep", json!({"pattern": "gamma"})).await;
    assert!(out.starts_with("no matches"), "{out}");
}

#[tokio::test]
async fn symbols_and_repo_map_come_from_the_index() {
    let w = ws(&[
        (
            "src/util.rs",
            "pub fn square(x: i32) -> i32 {\n    x * x\n}\n",
        ),
        (
            "src/main.rs",
            "mod util;\nfn main() {\n    util::square(2);\n}\n",
        ),
    ]);
    w.crawl();
    let out = w.ok("symbols", json!({"name": "square"})).await;
    assert!(out.contains("src/util.rs:1 function square"), "{out}");
    assert!(out.contains("src/main.rs:3:"), "{out}");
    let out = w
        .ok("symbols", json!({"name": "squar", "find": "definitions"}))
        .await;
    assert!(out.contains("definitions of `squar` (0)"), "{out}");
    assert!(
        out.contains("similar names:\nsrc/util.rs:1 function square"),
        "{out}"
    );
    let out = w.ok("repo_map", json!({"focus_names": ["square"]})).await;
    assert!(out.contains("src/util.rs:"), "{out}");
    assert!(out.contains("square"), "{out}");
    let e = w.err("symbols", json!({"name": " "})).await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
}

#[tokio::test]
async fn repo_map_focuses_on_the_files_semantic_search_finds_for_a_query() {
    let mut files = vec![(
        "core/helpers.py".to_owned(),
        "def helper(x):\n    return x\n\n\ndef other_helper(y):\n    return y\n".to_owned(),
    )];
    // Files that all use `helper`, so that the map's ranking puts core/helpers.py first
    // and its small budget runs out before a file no one uses.
    for i in 0..8 {
        files.push((
            format!("app/view{i}.py"),
            format!("from core.helpers import helper\n\n\ndef render_page_{i}(x):\n    return helper(x)\n"),
        ));
    }
    files.push((
        "net/upload.py".to_owned(),
        "# Try again when the server drops a file.\ndef retry_failed_upload(conn, f, attempts=3):\n    for _ in range(attempts):\n        conn.write(f)\n".to_owned(),
    ));
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let w = ws(&files);
    w.crawl();
    let plain = w.ok("repo_map", json!({"max_tokens": 64})).await;
    assert!(plain.starts_with("core/helpers.py:"), "{plain}");
    assert!(!plain.contains("net/upload.py"), "{plain}");
    let out = w
        .ok(
            "repo_map",
            json!({"query": "where do we retry uploads that failed?", "max_tokens": 64}),
        )
        .await;
    let mut lines = out.lines();
    let head = lines.next().unwrap_or_default();
    assert_eq!(
        head,
        "focused on the files semantic search found for `where do we retry uploads that failed?` (ranked by words): net/upload.py",
        "{out}"
    );
    assert!(
        out.contains("net/upload.py:\n  2 function retry_failed_upload"),
        "{out}"
    );
    // A query nothing matches says so and leaves the map as it was; its newlines and
    // backticks cannot break the header.
    let out = w
        .ok("repo_map", json!({"query": "zzz\n`qqq`", "max_tokens": 64}))
        .await;
    assert!(
        out.starts_with(
            "semantic search found no files for `zzz 'qqq'`; the map is not focused by it\n\n"
        ),
        "{out}"
    );
    assert!(out.ends_with(&plain), "{out}");
}

#[tokio::test]
async fn semantic_search_follows_the_index_unsaved_buffers_included() {
    let w = ws(&[
        (
            "net/upload.py",
            "def send_chunk(conn, data):\n    conn.write(data)\n\n\n# Try again when the server drops a file.\ndef retry_failed_upload(conn, f, attempts=3):\n    for _ in range(attempts):\n        send_chunk(conn, f)\n",
        ),
        (
            "cfg/load.py",
            "def parse_config(path):\n    return open(path).read()\n",
        ),
    ]);
    w.crawl();
    let out = w
        .ok(
            "semantic_search",
            json!({"query": "where do we retry uploads that failed?"}),
        )
        .await;
    let first = out.lines().nth(2).unwrap_or_default();
    assert_eq!(
        first, "net/upload.py:5-8 retry_failed_upload (function)",
        "{out}"
    );
    assert!(
        out.contains("    # Try again when the server drops a file."),
        "{out}"
    );
    assert!(
        out.contains("ranked by words only: no embedding model"),
        "{out}"
    );
    // An unsaved buffer is what gets searched.
    let path = w.path("cfg/load.py");
    w.index.write().unwrap().update_file(
        &path,
        "def parse_config(path):\n    return open(path).read()\n\ndef retry_config_reload():\n    pass\n",
    );
    let out = w
        .ok(
            "semantic_search",
            json!({"query": "retry", "path": "cfg/**"}),
        )
        .await;
    assert!(
        out.contains("cfg/load.py:4-5 retry_config_reload (function)"),
        "{out}"
    );
    assert!(!out.contains("net/upload.py"), "{out}");
    // A file the index drops is dropped from the results.
    w.index
        .write()
        .unwrap()
        .remove_file(&w.path("net/upload.py"));
    let out = w
        .ok("semantic_search", json!({"query": "retry upload"}))
        .await;
    assert!(!out.contains("net/upload.py"), "{out}");
    let e = w
        .err("semantic_search", json!({"query": "x", "path": "[["}))
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
}

#[tokio::test]
async fn diagnostics_report_syntax_errors_of_the_buffer_and_client_diagnostics() {
    struct Client;
    impl agentls_tools::DiagnosticsSource for Client {
        fn diagnostics(&self, _path: &std::path::Path) -> Vec<(usize, String, String)> {
            vec![(1, "warning".into(), "unused function".into())]
        }
    }
    let mut w = ws(&[("src/lib.rs", "fn ok() {}\n")]);
    let out = w.ok("diagnostics", json!({"path": "src/lib.rs"})).await;
    assert!(out.starts_with("no problems found in 1 file"), "{out}");
    w.open("src/lib.rs", "fn ok() {\n    let x = ;\n}\n");
    w.ctx.diagnostics = Some(std::sync::Arc::new(Client));
    let out = w.ok("diagnostics", json!({})).await;
    assert!(out.contains("src/lib.rs:2:"), "{out}");
    assert!(
        out.contains("src/lib.rs:1: warning: unused function"),
        "{out}"
    );
}

#[tokio::test]
async fn read_file_caps_its_output_and_says_how_to_read_on() {
    let line = "x".repeat(1000);
    let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
    let w = ws(&[("big.txt", &text)]);
    let out = w.ok("read_file", json!({"path": "big.txt"})).await;
    assert!(out.len() < 140 * 1024, "{}", out.len());
    assert!(
        out.contains("of 1000; call again with offset="),
        "{}",
        &out[out.len() - 200..]
    );
}

#[tokio::test]
async fn navigate_answers_from_the_index_without_a_language_server() {
    let w = ws(&[
        (
            "src/util.rs",
            "pub struct Grid;\nimpl Grid {\n    pub fn square(x: i32) -> i32 {\n        x * x\n    }\n}\n",
        ),
        (
            "src/main.rs",
            "mod util;\nfn main() {\n    let _ = util::Grid::square(2);\n}\n",
        ),
    ]);
    w.crawl();
    let args =
        json!({"action": "definition", "path": "src/main.rs", "line": 3, "symbol": "square"});
    let out = w.ok("navigate", args).await;
    assert!(
        out.starts_with(
            "definition of `square` (from the symbol index, by name: no language server"
        ),
        "{out}"
    );
    assert!(
        out.contains("src/util.rs:3: pub fn square(x: i32) -> i32 {"),
        "{out}"
    );
    let out = w
        .ok(
            "navigate",
            json!({"action": "references", "path": "src/util.rs", "line": 3, "symbol": "square"}),
        )
        .await;
    assert!(
        out.contains("src/main.rs:3:") && out.contains("src/util.rs:3:"),
        "{out}"
    );
    let out = w
        .ok(
            "navigate",
            json!({"action": "outline", "path": "src/util.rs"}),
        )
        .await;
    assert!(out.contains("\n1 struct Grid\n"), "{out}");
    assert!(out.contains("\n  3 method square\n"), "{out}");
    // A symbol that is not on the line: the line is shown so the model can correct it.
    let e = w
        .err(
            "navigate",
            json!({"action": "hover", "path": "src/main.rs", "line": 2, "symbol": "square"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
    assert!(
        e.message.contains("which reads: fn main() {"),
        "{}",
        e.message
    );
    let e = w
        .err(
            "navigate",
            json!({"action": "definition", "path": "src/main.rs"}),
        )
        .await;
    assert_eq!(e.class, ErrorClass::InvalidArguments);
}

/// A language server's answer wins over the index, and the question it gets names the
/// symbol's position in UTF-16 code units.
#[tokio::test]
async fn navigate_asks_the_language_server_at_the_symbol_s_position() {
    use agentls_tools::{CheckResult, Checker, NavAnswer, NavAsk, NavQuery};
    use std::sync::{Arc, Mutex};
    struct Server(Mutex<Vec<NavQuery>>, std::path::PathBuf);
    #[async_trait::async_trait]
    impl Checker for Server {
        async fn check(&self, _: &std::path::Path, _: &str) -> CheckResult {
            CheckResult::NoServer
        }
        async fn navigate(
            &self,
            _: &std::path::Path,
            _: &str,
            q: NavQuery,
        ) -> Option<Result<(String, NavAnswer), String>> {
            self.0.lock().unwrap().push(q);
            Some(Ok(match q.ask {
                NavAsk::Hover => (
                    "fake-ls".into(),
                    NavAnswer::Hover("fn square(x: i32) -> i32".into()),
                ),
                _ => (
                    "fake-ls".into(),
                    NavAnswer::Places(vec![(self.1.clone(), 1)]),
                ),
            }))
        }
    }
    let mut w = ws(&[
        ("src/main.rs", "fn main() { let é = square(2); }\n"),
        ("src/sq.rs", "fn square() {}\n"),
    ]);
    let server = Arc::new(Server(Mutex::new(Vec::new()), w.root.join("src/sq.rs")));
    w.ctx.checker = Some(server.clone());
    let out = w
        .ok(
            "navigate",
            json!({"action": "definition", "path": "src/main.rs", "line": 1, "symbol": "square"}),
        )
        .await;
    assert_eq!(
        out,
        "definition of `square` (from fake-ls):\nsrc/sq.rs:1: fn square() {}\n"
    );
    let out = w
        .ok(
            "navigate",
            json!({"action": "hover", "path": "src/main.rs", "line": 1, "symbol": "square"}),
        )
        .await;
    assert!(out.ends_with("fn square(x: i32) -> i32\n"), "{out}");
    // `é` is one UTF-16 unit, two bytes: `square` starts at unit 20 (byte 21).
    let asked = server.0.lock().unwrap().clone();
    assert_eq!(
        asked[0],
        NavQuery {
            ask: NavAsk::Definition,
            line: 0,
            character: 20
        }
    );
}

/// One dimension per distinct first letter of a word: enough to rank, cheap to run.
struct Letters(&'static str);

impl agentls_semantic::Embedder for Letters {
    fn id(&self) -> &str {
        self.0
    }
    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts
            .iter()
            .map(|t| {
                let mut v = [0.0f32; 26];
                for w in t.split(|c: char| !c.is_ascii_alphabetic()) {
                    if let Some(c) = w.bytes().next() {
                        v[usize::from(c.to_ascii_lowercase().saturating_sub(b'a')) % 26] += 1.0;
                    }
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter().map(|x| x / n).collect()
            })
            .collect()
    }
}

#[tokio::test]
async fn semantic_search_moves_a_better_model_on_only_where_no_task_does() {
    use agentls_semantic::MovedBy;
    for (moved_by, moved) in [(MovedBy::Background, false), (MovedBy::Searches, true)] {
        let w = ws(&[
            (
                "a.py",
                "def send_chunk(conn, data):\n    conn.write(data)\n",
            ),
            (
                "b.py",
                "def parse_config(path):\n    return open(path).read()\n",
            ),
        ]);
        w.crawl();
        let semantic = &w.ctx.semantic;
        semantic.set_embedder(std::sync::Arc::new(Letters("quick-1")));
        semantic.set_successor(std::sync::Arc::new(Letters("better-1")), None, moved_by);
        w.ok("semantic_search", json!({"query": "send a chunk"}))
            .await;
        // The first model has every chunk after the call either way; the better one
        // took over only where searches move it (in the server its own task does).
        let now = semantic.embedder().map(|e| e.id().to_owned());
        let waiting = semantic.succession();
        if moved {
            assert_eq!(now.as_deref(), Some("better-1"), "{moved_by:?}");
            assert_eq!(waiting, None);
        } else {
            assert_eq!(now.as_deref(), Some("quick-1"), "{moved_by:?}");
            let (id, embedded, chunks) = waiting.expect("still waiting");
            assert_eq!((id.as_str(), embedded), ("better-1", 0));
            assert!(chunks >= 2, "{chunks}");
        }
    }
}
