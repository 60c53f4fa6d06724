//! The index end to end, with a bag-of-words embedder standing in for a model (the
//! real one is tested in `agentls-embed` and through the server).

use std::path::Path;
use std::sync::Arc;

use agentls_index::Index;

use crate::*;

/// Hashes each term into one of 64 dimensions; synonyms listed share a dimension, so
/// the vector side can find what the lexical side cannot.
struct Words;

impl Embedder for Words {
    fn id(&self) -> &str {
        "words-1"
    }
    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; 64];
                for term in terms(t) {
                    let term = match term.as_str() {
                        "backoff" | "resend" => "retry".to_owned(),
                        _ => term,
                    };
                    let h = term
                        .bytes()
                        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
                    v[(h % 64) as usize] += 1.0;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter_mut().for_each(|x| *x /= n);
                v
            })
            .collect()
    }
}

fn workspace() -> SemanticIndex {
    let files = [
        (
            "/ws/net/upload.py",
            "def send_chunk(conn, data):\n    conn.write(data)\n\n# Resend with exponential backoff when the server drops us.\ndef resend_with_backoff(conn, data, attempts=5):\n    for i in range(attempts):\n        send_chunk(conn, data)\n",
        ),
        (
            "/ws/cfg.py",
            "def parse_config(path):\n    return open(path).read()\n",
        ),
        ("/ws/README.txt", "How to retry: run the tool again.\n"),
    ];
    index_of(&files)
}

/// The chunks of `files` (path, text), cut by their syntax trees where they have one.
fn index_of(files: &[(&str, &str)]) -> SemanticIndex {
    let mut index = Index::default();
    let mut sem = SemanticIndex::default();
    for &(p, text) in files {
        let path: Arc<Path> = Arc::from(Path::new(p));
        index.update_file(&path, text);
        let syms = index.file_symbols(&path);
        let syms = (!syms.is_empty()).then_some(&syms[..]);
        sem.set_file(&path, chunk_file(&path, text, syms));
    }
    sem
}

fn search(sem: &SemanticIndex, text: &str, mode: Mode) -> Vec<Hit> {
    let v = Words.embed(&[text]).remove(0);
    sem.search(&Query {
        text,
        vector: Some(&v),
        k: 5,
        mode,
        filter: None,
        boosted: None,
        vector_weight: VECTOR_WEIGHT,
    })
}

#[test]
fn vectors_find_what_words_miss_and_hybrid_keeps_both() {
    let mut sem = workspace();
    assert_eq!(sem.stats().embedded, 0);
    // Before any vector exists, hybrid answers lexically.
    let hits = search(&sem, "where do we retry", Mode::Hybrid);
    assert_eq!(hits[0].chunk.path.as_ref(), Path::new("/ws/README.txt"));
    let n = sem.embed_pending(&Words, usize::MAX, 2);
    assert_eq!(n, sem.stats().chunks);
    let vector = search(&sem, "where do we retry", Mode::Vector);
    assert_eq!(
        vector[0].chunk.symbol.as_deref(),
        Some("resend_with_backoff"),
        "{vector:?}"
    );
    let lexical = search(&sem, "where do we retry", Mode::Lexical);
    assert!(
        lexical
            .iter()
            .all(|h| h.chunk.symbol.as_deref() != Some("resend_with_backoff"))
    );
    let hybrid = search(&sem, "where do we retry", Mode::Hybrid);
    let paths = files_of(&hybrid);
    assert!(
        paths
            .iter()
            .take(2)
            .any(|p| p.as_ref() == Path::new("/ws/net/upload.py")),
        "{paths:?}"
    );
    assert!(
        paths
            .iter()
            .take(2)
            .any(|p| p.as_ref() == Path::new("/ws/README.txt")),
        "{paths:?}"
    );
}

#[test]
fn an_edit_reembeds_only_the_changed_chunks() {
    let mut sem = workspace();
    sem.embed_pending(&Words, usize::MAX, 8);
    let path: Arc<Path> = Arc::from(Path::new("/ws/cfg.py"));
    let text = "def parse_config(path):\n    return open(path).read()\n\ndef load_defaults():\n    return {}\n";
    let mut index = Index::default();
    index.update_file(&path, text);
    let syms = index.file_symbols(&path);
    sem.set_file(&path, chunk_file(&path, text, Some(&syms)));
    let pending = sem.pending(usize::MAX);
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert!(pending[0].1.contains("load_defaults"));
    sem.remove_file(&path);
    assert!(sem.pending(usize::MAX).is_empty());
    assert!(
        search(&sem, "parse config", Mode::Hybrid)
            .iter()
            .all(|h| h.chunk.path != path)
    );
}

#[test]
fn the_filter_and_another_embedder() {
    let mut sem = workspace();
    sem.embed_pending(&Words, usize::MAX, 8);
    let only_net = |p: &Path| p.starts_with("/ws/net");
    let v = Words.embed(&["retry"]).remove(0);
    let hits = sem.search(&Query {
        text: "retry",
        vector: Some(&v),
        k: 5,
        mode: Mode::Hybrid,
        filter: Some(&only_net),
        boosted: None,
        vector_weight: VECTOR_WEIGHT,
    });
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.chunk.path.starts_with("/ws/net")));
    // Vectors of another model are never mixed in.
    sem.use_embedder("other-2");
    assert_eq!(sem.stats().embedded, 0);
}

/// Another embedder with the same vectors under another name.
struct Renamed;

impl Embedder for Renamed {
    fn id(&self) -> &str {
        "words-2"
    }
    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        Words.embed(texts)
    }
}

/// A symbol index holding `dir/upload.py` with `text`, written to disk too.
fn one_file(dir: &Path, text: &str) -> std::sync::RwLock<Index> {
    let file = dir.join("upload.py");
    std::fs::write(&file, text).unwrap();
    let index = std::sync::RwLock::new(Index::default());
    index
        .write()
        .unwrap()
        .update_file(&Arc::from(file.as_path()), text);
    index
}

#[test]
fn kept_vectors_are_read_back_by_the_next_service() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ws.vectors");
    let index = one_file(
        dir.path(),
        "def send_chunk(conn, data):\n    conn.write(data)\n\ndef resend(conn, data):\n    send_chunk(conn, data)\n",
    );

    let first = Service::default();
    first.set_embedder(Arc::new(Words));
    assert_eq!(first.keep_in(store.clone()), 0, "nothing stored yet");
    first.sync(&index);
    let embedded = first.embed_some(std::time::Duration::from_secs(10), 8);
    assert!(embedded > 0);
    assert_eq!(first.persist().unwrap().unwrap(), embedded);

    // The next session's service has every chunk's vector without embedding one.
    let next = Service::default();
    next.set_embedder(Arc::new(Words));
    assert_eq!(next.keep_in(store.clone()), embedded);
    next.sync(&index);
    let stats = next.stats();
    assert_eq!((stats.embedded, stats.chunks), (embedded, embedded));

    // Another model's service reads none of them; one without a store keeps nothing.
    let other = Service::default();
    other.set_embedder(Arc::new(Renamed));
    assert_eq!(other.keep_in(store), 0);
    assert!(Service::default().persist().is_none());
}

/// Docs and configuration (no grammar here) are searched in windows of lines: from the
/// crawl, from an unsaved buffer as it stands, and no longer once removed.
#[test]
fn text_files_without_a_grammar_are_searched_as_they_stand() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::absolute(dir.path()).unwrap();
    let doc = root.join("DEPLOY.md");
    std::fs::write(
        root.join("lib.py"),
        "def parse_config(path):\n    return open(path).read()\n",
    )
    .unwrap();
    std::fs::write(
        &doc,
        "# Deploying\n\nRollbacks: run the previous release's migration script.\n",
    )
    .unwrap();
    let index = std::sync::RwLock::new(Index::default());
    index
        .write()
        .unwrap()
        .crawl(&root, &agentls_index::Overlay::new());
    let service = Service::default();
    let top = |q: &str| {
        service
            .search(&index, q, 5, None)
            .hits
            .first()
            .map(|h| (h.chunk.path.to_path_buf(), h.chunk.symbol.clone()))
    };
    assert_eq!(top("rollback migrations"), Some((doc.clone(), None)));

    // An unsaved edit is searched as it stands.
    index
        .write()
        .unwrap()
        .update_file(&doc, "# Deploying\n\nCanary: ship to one host first.\n");
    assert_eq!(top("canary host"), Some((doc.clone(), None)));
    assert_eq!(top("rollback migrations"), None);

    // Closed and deleted: gone.
    index.write().unwrap().close_file(&doc);
    std::fs::remove_file(&doc).unwrap();
    index
        .write()
        .unwrap()
        .apply_event(&agentls_index::FileEvent::Removed(doc.clone()));
    assert_eq!(top("canary host"), None);
    assert_eq!(service.stats().files, 1);
}

/// Where the workspace lies changes nothing: the same files crawled under a plain
/// folder and under one whose names are the query's words are embedded from the same
/// texts and rank the same, with the same scores.
#[test]
fn the_folder_above_the_root_is_not_part_of_a_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::path::absolute(dir.path()).unwrap();
    let files = [
        (
            "net/upload.py",
            "def resend_with_backoff(conn, data):\n    conn.write(data)\n",
        ),
        (
            "cfg.py",
            "def parse_config(path):\n    return open(path).read()\n",
        ),
    ];
    let ranked = |root: &Path| {
        for (p, text) in files {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let index = std::sync::RwLock::new(Index::default());
        index
            .write()
            .unwrap()
            .crawl(root, &agentls_index::Overlay::new());
        let service = Service::default();
        service.set_embedder(Arc::new(Words));
        service.sync(&index);
        let texts: Vec<String> = service
            .with(|s| s.pending(usize::MAX))
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        service.embed_some(std::time::Duration::from_secs(10), 8);
        let hits: Vec<(std::path::PathBuf, f32)> = service
            .search(&index, "parse config", 5, None)
            .hits
            .iter()
            .map(|h| (h.chunk.path.strip_prefix(root).unwrap().to_owned(), h.score))
            .collect();
        (texts, hits)
    };
    let plain = ranked(&base.join("a"));
    let wordy = ranked(&base.join("parse-config-retry").join("a"));
    assert!(
        plain
            .0
            .iter()
            .any(|t| t.starts_with("cfg.py parse_config\n")),
        "{:?}",
        plain.0
    );
    assert_eq!(plain, wordy);
    assert_eq!(plain.1.len(), 2, "{:?}", plain.1);
}

/// The scan's eight-lane dot product against the plain sum, with lengths that leave a
/// remainder, and its ranking best first.
#[test]
fn nearest_ranks_by_dot_product_with_any_length() {
    for dim in [1usize, 7, 8, 9, 384, 389] {
        let q: Vec<f32> = (0..dim).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let vs: Vec<Vec<f32>> = (0..20)
            .map(|j| {
                (0..dim)
                    .map(|i| ((i * 3 + j * 5) % 13) as f32 - 6.0)
                    .collect()
            })
            .collect();
        let plain = |v: &[f32]| -> f32 { q.iter().zip(v).map(|(a, b)| a * b).sum() };
        let mut ids = vs.iter().enumerate().map(|(i, v)| (i as ChunkId, &v[..]));
        let got = nearest(&q, &mut ids, 5);
        assert_eq!(got.len(), 5.min(vs.len()));
        for w in got.windows(2) {
            assert!(w[0].1 >= w[1].1, "{dim}: not best first: {got:?}");
        }
        for &(id, score) in &got {
            let want = plain(&vs[id as usize]);
            assert!(
                (score - want).abs() <= 1e-3 * want.abs().max(1.0),
                "{dim}: {score} vs {want}"
            );
        }
        let best = vs.iter().map(|v| plain(v)).fold(f32::MIN, f32::max);
        assert!((got[0].1 - best).abs() <= 1e-3 * best.abs().max(1.0));
    }
}

/// `n` small Python files, each a function named by two words of a list and calling a
/// third, so that each can be asked for by its words.
fn many_files(n: usize) -> Vec<(Arc<Path>, String)> {
    const WORDS: [&str; 24] = [
        "upload", "parse", "retry", "cache", "token", "socket", "render", "index", "merge",
        "split", "queue", "lock", "batch", "stream", "config", "schema", "buffer", "cursor",
        "digest", "encode", "filter", "graph", "hash", "journal",
    ];
    (0..n)
        .map(|i| {
            let w = |k: usize| WORDS[(i * (k + 3) + k * 7 + i / 24) % WORDS.len()];
            let path: Arc<Path> = Path::new(&format!("/ws/m{i}.py")).into();
            let text = format!("def {}_{}_{i}(x):\n    return {}(x)\n", w(0), w(1), w(2));
            (path, text)
        })
        .collect()
}

fn vector_paths(sem: &SemanticIndex, text: &str) -> Vec<(Arc<Path>, Option<usize>)> {
    search(sem, text, Mode::Vector)
        .iter()
        .map(|h| (h.chunk.path.clone(), h.vector_rank))
        .collect()
}

#[test]
fn a_graph_answers_like_the_scan_and_follows_later_changes() {
    let build = |files: &[(Arc<Path>, String)]| {
        let mut sem = SemanticIndex::default();
        sem.set_graph_min(100);
        for (path, text) in files {
            sem.set_file(path, chunk_file(path, text, None));
        }
        sem.embed_pending(&Words, usize::MAX, 64);
        sem
    };
    let files = many_files(300);
    let scan = build(&files);
    let mut graphed = build(&files);
    let mut few = build(&files[..50]);
    assert!(
        few.graph_wanted().is_none(),
        "50 chunks are below the minimum"
    );
    let input = graphed.graph_wanted().expect("300 chunks want a graph");
    assert_eq!(input.len(), 300);
    assert!(graphed.set_graph(input.build().expect("nothing went meanwhile")));
    assert_eq!(graphed.graph_len(), 300);
    assert!(graphed.graph_wanted().is_none(), "the graph is fresh");
    // On so few vectors the graph's wide search reaches them all: the same answers.
    for q in [
        "retry upload",
        "parse config",
        "socket stream queue",
        "hash journal",
    ] {
        assert_eq!(vector_paths(&graphed, q), vector_paths(&scan, q), "{q}");
    }
    // The graph, not a scan, answers for the vectors it holds: one linked from other
    // vectors of the same chunks (their text embedded backwards) ranks by those.
    let mut other = SemanticIndex::default();
    other.set_graph_min(100);
    for (path, text) in &files {
        other.set_file(path, chunk_file(path, text, None));
    }
    other.use_embedder(Words.id());
    for (id, text) in other.pending(usize::MAX) {
        let backwards: String = text.chars().rev().collect();
        other.set_vector(id, &text, Words.embed(&[&backwards]).remove(0));
    }
    let mut misled = build(&files);
    let built = other.graph_wanted().expect("300 vectors").build();
    assert!(misled.set_graph(built.expect("nothing went meanwhile")));
    assert_ne!(
        vector_paths(&misled, "retry upload"),
        vector_paths(&scan, "retry upload")
    );
    // A file embedded after the graph is found by the scan beside it; a removed one is
    // never answered.
    let new: Arc<Path> = Path::new("/ws/late.py").into();
    let text = "def zebra_quokka_walrus(x):\n    return narwhal(x)\n";
    graphed.set_file(&new, chunk_file(&new, text, None));
    graphed.embed_pending(&Words, usize::MAX, 64);
    assert_eq!(
        vector_paths(&graphed, "zebra quokka walrus narwhal")[0].0,
        new
    );
    let first = vector_paths(&graphed, "retry upload")[0].0.clone();
    graphed.remove_file(&first);
    assert!(
        vector_paths(&graphed, "retry upload")
            .iter()
            .all(|(p, _)| *p != first)
    );
    // Past an eighth of the graph changed, a new one is wanted.
    for (path, _) in &files[..40] {
        graphed.remove_file(path);
    }
    let again = graphed.graph_wanted().expect("41 of 300 gone, one added");
    assert_eq!(again.len(), 300 - 41 + 1);
    // Vectors of another embedder drop the graph, and one built before is refused.
    few.set_graph_min(10);
    let stale = few.graph_wanted().expect("50 chunks over 10");
    few.use_embedder("other-1");
    assert!(stale.build().is_none(), "a build of vectors that went ran");
    assert_eq!(few.graph_len(), 0);
}

#[test]
fn the_service_links_a_graph_once_its_vectors_pass_the_minimum() {
    let mut index = Index::default();
    let files = many_files(150);
    for (path, text) in &files {
        index.update_file(path, text);
    }
    let index = std::sync::RwLock::new(index);
    let service = Service::default();
    service.set_embedder(Arc::new(Words));
    service.with_mut(|s| s.set_graph_min(100));
    assert_eq!(service.refresh_graph(), None, "no vectors yet");
    service.sync(&index);
    while service.embed_some(std::time::Duration::from_secs(10), 64) > 0 {}
    let chunks = service.stats().chunks;
    assert!(chunks >= 150, "{chunks}");
    assert_eq!(service.refresh_graph(), Some(chunks));
    assert_eq!(service.refresh_graph(), None, "the graph is fresh");
    let answer = service.search(&index, "zebra", 3, None);
    assert!(answer.vectors);
    let (path, text) = &files[7];
    let name = text[4..text.find('(').unwrap()].replace('_', " ");
    let answer = service.search(&index, &name, 3, None);
    assert_eq!(&answer.hits[0].chunk.path, path, "{name}");
}

/// [`Words`] at another fusion weight.
struct Heavy;

impl Embedder for Heavy {
    fn id(&self) -> &str {
        "words-1"
    }
    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        Words.embed(texts)
    }
    fn fusion_weight(&self) -> f32 {
        1.0
    }
}

#[test]
fn the_service_fuses_at_the_models_own_weight() {
    let dir = tempfile::tempdir().unwrap();
    // `resend` is found by the vectors only (Words maps it to `retry`).
    let index = one_file(dir.path(), "def resend_packet(conn):\n    conn.write()\n");
    let score = |embedder: Arc<dyn Embedder>| {
        let service = Service::default();
        service.set_embedder(embedder);
        service.sync(&index);
        service.embed_some(std::time::Duration::from_secs(10), 8);
        let answer = service.search(&index, "retry", 5, None);
        assert!(answer.vectors, "ranked with vectors");
        let hit = answer
            .hits
            .iter()
            .find(|h| h.chunk.symbol.as_deref() == Some("resend_packet"))
            .expect("found by its vector");
        assert_eq!(hit.lexical_rank, None);
        hit.score
    };
    let light = score(Arc::new(Words));
    let heavy = score(Arc::new(Heavy));
    // The same vector rank, counted at 1.0 instead of VECTOR_WEIGHT.
    let ratio = heavy / light;
    assert!(
        (ratio - 1.0 / VECTOR_WEIGHT).abs() < 1e-4,
        "{heavy} / {light} = {ratio}"
    );
}

/// Bag of words without [`Words`]' synonyms: a quicker, worse model.
struct Plain;

impl Embedder for Plain {
    fn id(&self) -> &str {
        "plain-1"
    }
    fn embed(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let texts: Vec<String> = texts
            .iter()
            .map(|t| t.replace("resend", "xresend"))
            .collect();
        Words.embed(&texts.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

#[test]
fn a_better_model_takes_over_once_it_has_every_chunk_and_keeps_its_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let index = one_file(
        dir.path(),
        "def send_chunk(conn, data):\n    conn.write(data)\n\ndef resend_packet(conn):\n    conn.write()\n\ndef parse(path):\n    return path\n",
    );
    let quick_store = dir.path().join("quick.vectors");
    let better_store = dir.path().join("better.vectors");
    let service = Service::default();
    service.set_embedder(Arc::new(Plain));
    service.keep_in(quick_store.clone());
    assert_eq!(
        service.set_successor(
            Arc::new(Words),
            Some(better_store.clone()),
            MovedBy::Searches
        ),
        0
    );
    service.sync(&index);
    let chunks = service.stats().chunks;
    assert!(chunks >= 3, "{chunks} chunks");
    assert!(service.embed_some(std::time::Duration::from_secs(10), 8) > 0);
    assert_eq!(service.persist().unwrap().unwrap(), chunks);

    // One chunk a round: the quick model searches meanwhile, and the answer says so.
    let round = service.embed_successor_some(std::time::Duration::ZERO, 1);
    assert_eq!(
        round,
        Succession {
            embedded: 1,
            covered: 1,
            chunks,
            took_over: false
        }
    );
    let answer = service.search(&index, "retry", 5, None);
    assert!(answer.vectors);
    assert_eq!(
        service
            .with(|s| s.embedder_id().map(str::to_owned))
            .as_deref(),
        Some("plain-1")
    );
    assert!(
        answer
            .ranking()
            .ends_with(&format!("a better model (words-1) has embedded 1 of {chunks} chunks and ranks by meaning once it has them all")),
        "{}",
        answer.ranking()
    );
    // What it has embedded so far is kept for the next process.
    assert_eq!(service.persist_successor().unwrap().unwrap(), 1);
    assert!(
        service.persist_successor().is_none(),
        "nothing new to write"
    );

    // The rest in one round, then it takes over: every chunk has its vector, searches
    // embed the query with it, and it finds `resend_packet` by meaning (Words maps
    // `resend` to `retry`; Plain does not).
    let round = service.embed_successor_some(std::time::Duration::from_secs(10), 8);
    assert_eq!(
        (round.embedded, round.covered, round.took_over),
        (chunks - 1, chunks, true)
    );
    assert_eq!(service.embedder().unwrap().id(), "words-1");
    assert_eq!(service.stats().embedded, chunks);
    assert!(service.succession().is_none());
    assert_eq!(service.embed_some(std::time::Duration::from_secs(10), 8), 0);
    let answer = service.search(&index, "retry", 5, None);
    assert_eq!(answer.ranking(), "by words and meaning");
    let top = &answer.hits[0];
    assert_eq!(top.chunk.symbol.as_deref(), Some("resend_packet"));
    assert_eq!((top.lexical_rank, top.vector_rank), (None, Some(1)));

    // Its store is the service's now; the quick model's file is left as it was.
    let quick_before = std::fs::read(&quick_store).unwrap();
    assert_eq!(service.persist().unwrap().unwrap(), chunks);
    assert_eq!(std::fs::read(&quick_store).unwrap(), quick_before);
    assert_eq!(
        crate::store::load(&better_store, "words-1").unwrap().len(),
        chunks
    );

    // The next process: the stored vectors make the better model take over at its first
    // round, embedding nothing.
    let next = Service::default();
    next.set_embedder(Arc::new(Plain));
    assert_eq!(
        next.set_successor(Arc::new(Words), Some(better_store), MovedBy::Background),
        chunks
    );
    next.sync(&index);
    let round = next.embed_successor_some(std::time::Duration::from_secs(10), 8);
    assert_eq!((round.embedded, round.took_over), (0, true));
    assert_eq!(next.stats().embedded, chunks);
}

#[test]
fn words_alone_rank_a_definition_above_prose_that_repeats_its_name() {
    let files = [
        (
            "/ws/cfg.py",
            "def parse_config(path):\n    return open(path).read()\n",
        ),
        (
            "/ws/notes.md",
            "Parse the config: parse config files before the config is used.\n",
        ),
    ];
    let sem = index_of(&files);
    let first = |mode| {
        let hits = sem.search(&Query {
            text: "parse config",
            vector: None,
            k: 5,
            mode,
            filter: None,
            boosted: None,
            vector_weight: VECTOR_WEIGHT,
        });
        files_of(&hits)[0].clone()
    };
    // BM25 alone prefers the prose, which says the words more often; the lexical
    // ranking that answers before vectors exist applies the index's signals, as the
    // hybrid does.
    assert_eq!(first(Mode::Bm25).as_ref(), Path::new("/ws/notes.md"));
    assert_eq!(first(Mode::Lexical).as_ref(), Path::new("/ws/cfg.py"));
}

/// A buffer closed without saving leaves nothing in the semantic index: its chunks go,
/// the file's chunks are those of the disk again, and the vectors of the buffer's texts
/// are dropped, not kept for a text no chunk has.
#[test]
fn a_closed_unsaved_buffer_leaves_no_chunk_and_no_vector() {
    let dir = tempfile::tempdir().unwrap();
    let disk = "def parse_config(path):\n    return open(path).read()\n";
    let index = one_file(dir.path(), disk);
    let file = dir.path().join("upload.py");
    let service = Service::default();
    service.set_embedder(Arc::new(Words));
    service.sync(&index);
    service.embed_some(std::time::Duration::from_secs(10), 8);
    let hashes = |s: &Service| {
        let mut h: Vec<u64> = s.with(|i| i.vectors().map(|(h, _)| h).collect());
        h.sort_unstable();
        h
    };
    let on_disk = hashes(&service);
    assert_eq!(on_disk.len(), 1);

    // Unsaved text, chunked and embedded.
    let secret = "def rotate_secret_token(vault):\n    return vault.rotate()\n";
    index.write().unwrap().update_file(&file, secret);
    service.sync(&index);
    service.embed_some(std::time::Duration::from_secs(10), 8);
    let buffer = hashes(&service);
    assert_eq!(buffer.len(), 1);
    assert_ne!(buffer, on_disk);
    let hits = |q: &str| {
        service
            .search(&index, q, 5, None)
            .hits
            .iter()
            .filter(|h| h.chunk.text.contains("rotate_secret_token"))
            .count()
    };
    assert_eq!(hits("rotate secret token vault"), 1);

    index.write().unwrap().close_file(&file);
    service.sync(&index);
    assert_eq!(hits("rotate secret token vault"), 0);
    assert!(hashes(&service).is_empty(), "the buffer's vector was kept");
    // The disk's text is searched and embedded again.
    service.embed_some(std::time::Duration::from_secs(10), 8);
    assert_eq!(hashes(&service), on_disk);
    assert_eq!(
        service.search(&index, "parse config", 5, None).hits[0]
            .chunk
            .symbol
            .as_deref(),
        Some("parse_config")
    );
}

/// Closing most files leaves too few vectors for a graph: the graph (a copy of every
/// vector it was built from) goes, and one built meanwhile from the vectors of before is
/// not installed.
#[test]
fn a_graph_goes_once_closed_files_leave_too_few_vectors() {
    let files = many_files(300);
    let mut sem = SemanticIndex::default();
    sem.set_graph_min(100);
    for (path, text) in &files {
        sem.set_file(path, chunk_file(path, text, None));
    }
    sem.embed_pending(&Words, usize::MAX, 64);
    let input = sem.graph_wanted().expect("300 chunks want a graph");
    let late = sem.graph_wanted().expect("and a second build");
    assert!(sem.set_graph(input.build().expect("nothing went meanwhile")));
    assert_eq!(sem.graph_len(), 300);
    for (path, _) in &files[50..] {
        sem.remove_file(path);
    }
    assert_eq!(sem.prune_vectors().len(), 250);
    assert_eq!(sem.graph_len(), 0, "the graph outlived its chunks");
    assert!(late.build().is_none(), "a build of vectors that went ran");
    assert_eq!(sem.graph_len(), 0);
    // The 50 left are still found by their vectors.
    let (path, text) = &files[7];
    assert_eq!(vector_paths(&sem, text)[0].0, path.clone());
}

/// Buffers opened without a file on disk (and one over a file on disk), embedded,
/// linked into a graph and then closed leave the semantic index as it was before they
/// opened: the same chunk slots, postings, terms, vectors and texts, and no graph.
#[test]
fn closed_buffers_leave_the_semantic_index_as_it_was_before_they_opened() {
    let dir = tempfile::tempdir().unwrap();
    let disk = "def parse_config(path):\n    return open(path).read()\n\ndef save_config(path, text):\n    open(path, 'w').write(text)\n";
    let index = one_file(dir.path(), disk);
    let on_disk = dir.path().join("upload.py");
    // `one_file` indexes it as a buffer: as the disk's file instead.
    index.write().unwrap().close_file(&on_disk);
    let service = Service::default();
    service.set_embedder(Arc::new(Words));
    // Fewer vectors than the buffers bring: a graph is linked while they are open.
    service.with_mut(|s| s.set_graph_min(40));
    let embed_all = || while service.embed_some(std::time::Duration::from_secs(10), 16) > 0 {};
    service.sync(&index);
    embed_all();
    let fresh = service.footprint();
    assert!(fresh.0.slots >= 2 && fresh.0.vectors >= 2, "{fresh:?}");
    assert_eq!((fresh.0.graph, fresh.1), (0, 0));

    let buffers: Vec<std::path::PathBuf> = (0..20)
        .map(|d| dir.path().join(format!("unsaved_{d}.py")))
        .collect();
    for (d, path) in buffers.iter().enumerate() {
        let text: String = (0..5)
            .map(|i| {
                format!("def handler_{d}_{i}(request):\n    return route_{d}_{i}(request)\n\n")
            })
            .collect();
        index.write().unwrap().update_file(path, &text);
    }
    let edited = format!("{disk}\ndef rotate_secret_token(vault):\n    return vault.rotate()\n");
    index.write().unwrap().update_file(&on_disk, &edited);
    service.sync(&index);
    embed_all();
    assert!(
        service.refresh_graph().is_some(),
        "no graph over the buffers"
    );
    let open = service.footprint().0;
    assert!(
        open.slots > fresh.0.slots + 100 && open.graph > 100,
        "{open:?}"
    );

    for path in buffers.iter().chain([&on_disk]) {
        index.write().unwrap().close_file(path);
    }
    service.sync(&index);
    // The disk's text of the file edited in its buffer is embedded again.
    embed_all();
    assert_eq!(service.footprint(), fresh);
    assert_eq!(service.stats().files, 1);
    assert_eq!(
        service.search(&index, "save config", 5, None).hits[0]
            .chunk
            .symbol
            .as_deref(),
        Some("save_config")
    );
    // After the renumbering, a chunk added is found by its words and its vector.
    let late = dir.path().join("late.py");
    index
        .write()
        .unwrap()
        .update_file(&late, "def zebra_quokka(x):\n    return walrus(x)\n");
    service.sync(&index);
    embed_all();
    let answer = service.search(&index, "zebra quokka walrus", 5, None);
    assert!(answer.vectors);
    assert_eq!(*answer.hits[0].chunk.path, *late);
    assert!(answer.hits[0].lexical_rank.is_some() && answer.hits[0].vector_rank.is_some());
}

/// A vector that arrives for a text no chunk has any more (its buffer closed while the
/// model embedded it) is not kept: no prune would come for it.
#[test]
fn a_vector_for_a_text_gone_meanwhile_is_not_kept() {
    let mut sem = index_of(&[("/ws/a.py", "def alpha(x):\n    return x\n")]);
    sem.use_embedder(Words.id());
    let pending = sem.pending(usize::MAX);
    assert_eq!(pending.len(), 1);
    sem.remove_file(Path::new("/ws/a.py"));
    sem.prune_vectors();
    let (id, text) = &pending[0];
    sem.set_vector(*id, text, Words.embed(&[text]).remove(0));
    assert_eq!(sem.footprint(), Footprint::default());
}
