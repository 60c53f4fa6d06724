//! `agentls bench search`: how well semantic search finds the files a change touched, from
//! the change's own description, on retrieval sets built from real projects' history
//! (`fixtures/retrieval/NAME/`: `set.toml` names a release on pip, `pairs.jsonl` holds
//! commit subject → changed source files). Four rankings side by side in one run:
//! grep-only (files by how many of the query's words they contain), lexical (BM25),
//! vector and hybrid; recall@5, recall@10 and MRR over files; then speed: first build,
//! query latency, one edited file, and size.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Deserialize;

use agentls_index::{Index, IndexOptions, Overlay};
use agentls_semantic::{
    ChunkId, DEPTH, Embedder, GRAPH_MIN, Graph, Mode, Query, Service, VECTOR_WEIGHT, files_of,
    nearest,
};

/// A retrieval set's `set.toml` (the keys the bench reads).
#[derive(Debug, Deserialize)]
struct SetFile {
    package: String,
    version: String,
    sdist: String,
    sha256: String,
    tree_root: String,
}

/// One line of `pairs.jsonl`.
#[derive(Debug, Deserialize)]
struct Pair {
    query: String,
    files: Vec<String>,
}

/// Scores of one ranking over a set.
#[derive(Debug, Default, Clone, Copy)]
struct Scores {
    recall5: f64,
    recall10: f64,
    mrr: f64,
}

impl Scores {
    fn add(&mut self, s: Scores) {
        self.recall5 += s.recall5;
        self.recall10 += s.recall10;
        self.mrr += s.mrr;
    }
}

/// The files of the index's best 100 chunks for `text`, best first.
fn ranked(
    service: &Service,
    text: &str,
    vector: Option<&[f32]>,
    mode: Mode,
    vector_weight: f32,
) -> Vec<Arc<Path>> {
    let hits = service.with(|s| {
        s.search(&Query {
            text,
            vector,
            k: 100,
            mode,
            filter: None,
            boosted: None,
            vector_weight,
        })
    });
    files_of(&hits)
}

/// The hybrid queries again while the whole model embeds the set's chunks beside them
/// below the editor's priority, as the server's second tier does with `embedder =
/// "full"` (`agentls_semantic::at_low_priority`: both cores, ten nicer): what that
/// background costs a search, against the quiet run's `quiet` latencies.
fn under_load(
    service: &Service,
    embedder: &dyn Embedder,
    pairs: &[Pair],
    weight: f32,
    quiet: &[Duration],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let full = match agentls_host::embedding::load("full") {
        Ok(Some(full)) => full,
        Ok(None) => return Ok(()),
        Err(e) => {
            writeln!(
                out,
                "hybrid query beside the whole model: not measured ({e:#})"
            )?;
            return Ok(());
        }
    };
    let texts: Vec<String> = service
        .with(|s| s.missing_from(&Default::default(), 4096))
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    if texts.is_empty() {
        return Ok(());
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let embedded = std::sync::atomic::AtomicUsize::new(0);
    let mut took = Vec::with_capacity(pairs.len());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            agentls_semantic::at_low_priority(|| {
                for batch in texts.chunks(16).cycle() {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
                    full.embed(&batch);
                    embedded.fetch_add(batch.len(), std::sync::atomic::Ordering::Relaxed);
                }
            })
        });
        // The model loaded and its threads busy before the first query.
        while embedded.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        for pair in pairs {
            let t = Instant::now();
            let qv = embedder.embed(&[pair.query.as_str()]).pop();
            ranked(service, &pair.query, qv.as_deref(), Mode::Hybrid, weight);
            took.push(t.elapsed());
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    took.sort();
    let (p95, quiet95) = (percentile(&took, 0.95), percentile(quiet, 0.95));
    writeln!(
        out,
        "hybrid query while the whole model embeds beside it at low priority (the second tier): p50 {:.1?}, p95 {p95:.1?}, {:.2}x the quiet p95 of this run ({quiet95:.1?}); it embedded {} chunks meanwhile",
        percentile(&took, 0.5),
        p95.as_secs_f64() / quiet95.as_secs_f64().max(1e-9),
        embedded.load(std::sync::atomic::Ordering::Relaxed),
    )?;
    Ok(())
}

/// Where a set's release tree is unpacked.
fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("agentls")
        .join("retrieval")
}

/// The set's tree: unpacked from its sdist, fetched with pip and checked by sha256 the
/// first time, reused after.
fn tree(set: &SetFile, out: &mut dyn Write) -> anyhow::Result<PathBuf> {
    let dir = cache_dir().join(format!("{}-{}", set.package, set.version));
    let root = dir.join(&set.tree_root);
    let done = dir.join(".unpacked");
    if done.exists() && root.is_dir() {
        return Ok(root);
    }
    writeln!(out, "fetching {}=={} with pip…", set.package, set.version)?;
    std::fs::create_dir_all(&dir)?;
    let download = dir.join("download");
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
        ])
        .arg(format!("{}=={}", set.package, set.version))
        .arg("-d")
        .arg(&download)
        .status()
        .context("running pip (python3 -m pip) to fetch the set's release")?;
    if !status.success() {
        bail!(
            "pip download of {}=={} failed ({status})",
            set.package,
            set.version
        );
    }
    let sdist = download.join(&set.sdist);
    let (_, digest) = agentls_wheel::sha256_file(&sdist)?;
    if digest != set.sha256 {
        bail!(
            "{}: sha256 {digest}, expected {}",
            sdist.display(),
            set.sha256
        );
    }
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&sdist)
        .arg("-C")
        .arg(&dir)
        .status()
        .context("running tar to unpack the sdist")?;
    if !status.success() || !root.is_dir() {
        bail!("unpacking {} gave no {}", sdist.display(), root.display());
    }
    std::fs::remove_dir_all(&download)?;
    std::fs::write(&done, "")?;
    Ok(root)
}

/// Files ranked by how many of the query's words (4+ letters, lower-cased) they contain,
/// then by how often: what an agent gets from grepping the question's words.
fn grep_rank(files: &[(Arc<Path>, String)], query: &str) -> Vec<Arc<Path>> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() >= 4)
        .map(str::to_lowercase)
        .filter(|w| {
            !["with", "from", "when", "that", "this", "into", "should"].contains(&w.as_str())
        })
        .collect();
    let mut scored: Vec<(usize, usize, &Arc<Path>)> = files
        .iter()
        .filter_map(|(p, text)| {
            let mut distinct = 0;
            let mut total = 0;
            for w in &words {
                let n = text.matches(w.as_str()).count();
                if n > 0 {
                    distinct += 1;
                    total += n;
                }
            }
            (distinct > 0).then_some((distinct, total, p))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(b.2)));
    scored
        .into_iter()
        .take(10)
        .map(|(_, _, p)| p.clone())
        .collect()
}

fn score(ranked: &[Arc<Path>], root: &Path, wanted: &[String]) -> Scores {
    let rel: Vec<String> = ranked
        .iter()
        .map(|p| {
            p.strip_prefix(root)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let found = |k: usize| {
        wanted
            .iter()
            .filter(|w| rel.iter().take(k).any(|r| r == *w))
            .count() as f64
            / wanted.len().max(1) as f64
    };
    let first = rel.iter().position(|r| wanted.contains(r));
    Scores {
        recall5: found(5),
        recall10: found(10),
        mrr: first.map_or(0.0, |i| 1.0 / (i as f64 + 1.0)),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The bound on a query's p95 latency, embedding included.
const QUERY_BUDGET: Duration = Duration::from_millis(50);

/// The sizes [`scan_budget`] tries, after the set's own.
const SCAN_SIZES: [usize; 4] = [100_000, 200_000, 400_000, 800_000];

/// How many of the set's query vectors [`scan_budget`] times at each size.
const SCAN_QUERIES: usize = 50;

/// The vector scan alone (what the graph replaces past [`GRAPH_MIN`] vectors) over
/// the set's vectors copied out to growing sizes, one allocation per vector as the
/// index holds them: at what size brute force stops fitting the query budget. Each
/// size with its p95, up to the first over the budget.
fn scan_budget(vectors: Vec<Vec<f32>>, queries: &[Vec<f32>]) -> Vec<(usize, Duration)> {
    let mut rows = Vec::new();
    let own = vectors.len();
    if own == 0 || queries.is_empty() {
        return rows;
    }
    // The set's own vectors first, then copies of them in turn.
    let mut pool = vectors;
    for n in std::iter::once(own).chain(SCAN_SIZES.into_iter().filter(|&n| n > own)) {
        for i in pool.len()..n {
            let copy = pool[i % own].clone();
            pool.push(copy);
        }
        let mut took: Vec<Duration> = queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                let mut ids = pool.iter().enumerate().map(|(i, v)| (i as ChunkId, &v[..]));
                std::hint::black_box(nearest(q, &mut ids, DEPTH));
                t.elapsed()
            })
            .collect();
        took.sort();
        let p95 = percentile(&took, 0.95);
        rows.push((n, p95));
        if p95 > QUERY_BUDGET {
            break;
        }
    }
    rows
}

/// Sizes at which the graph is built and searched against the scan: the smallest that
/// uses one, and twice that.
const GRAPH_SIZES: [usize; 2] = [GRAPH_MIN, 2 * GRAPH_MIN];

/// What one edit of a file cost ([`edit_once`]).
struct EditCost {
    index: Duration,
    chunk: Duration,
    embed: Duration,
    embedded: usize,
}

/// Gives `path` the text `text` as the server does for an edit: the symbol index first,
/// then the semantic index follows it and embeds what changed.
fn edit_once(
    index: &RwLock<Index>,
    service: &Service,
    path: &Path,
    text: &str,
) -> anyhow::Result<EditCost> {
    let t = Instant::now();
    index
        .write()
        .map_err(|_| anyhow::anyhow!("index lock poisoned"))?
        .update_file(path, text);
    let index_took = t.elapsed();
    let t = Instant::now();
    service.sync(index);
    let chunk = t.elapsed();
    let t = Instant::now();
    let embedded = service.embed_some(Duration::from_secs(60), 64);
    Ok(EditCost {
        index: index_took,
        chunk,
        embed: t.elapsed(),
        embedded,
    })
}

/// The process's resident memory (Linux: `VmRSS` of `/proc/self/status`); `None`
/// elsewhere.
fn resident_bytes() -> Option<u64> {
    vm_rss(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// `VmRSS` of a `/proc/<pid>/status` text, in bytes.
pub(crate) fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// One row of [`graph_rows`].
struct GraphRow {
    vectors: usize,
    build: Duration,
    /// What the process's resident memory grew by while the graph was linked (the
    /// graph's links and what the build left allocated); `None` where it cannot be read.
    grew: Option<u64>,
    scan_p95: Duration,
    graph_p95: Duration,
    /// Of the scan's 10 and [`DEPTH`] nearest, the share the graph's answer holds.
    recall10: f64,
    recall_depth: f64,
}

/// The graph against the scan at `sizes` ([`GRAPH_SIZES`]): the set's vectors, then copies of them
/// moved by noise (norm about 0.3 before normalising again), so that no two are equal
/// (equal copies would tie, and make any answer among them right); build time, p95 of
/// both searches, and how many of the scan's nearest the graph finds.
fn graph_rows(vectors: &[Vec<f32>], queries: &[Vec<f32>], sizes: &[usize]) -> Vec<GraphRow> {
    let own = vectors.len();
    let mut rows = Vec::new();
    if own == 0 || queries.is_empty() {
        return rows;
    }
    let dim = vectors[0].len();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut noise = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Uniform in [-0.5, 0.5): standard deviation 0.29, scaled to a norm near 0.3.
        ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * (0.3 / 0.29) / (dim as f32).sqrt()
    };
    let mut pool: Vec<Arc<[f32]>> = vectors.iter().map(|v| v[..].into()).collect();
    for &n in sizes {
        while pool.len() < n {
            let base = &pool[pool.len() % own];
            let moved: Vec<f32> = base.iter().map(|a| a + noise()).collect();
            let norm = moved.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-6);
            pool.push(moved.iter().map(|a| a / norm).collect::<Vec<f32>>().into());
        }
        let before = resident_bytes();
        let t = Instant::now();
        let graph = Graph::build(
            pool.iter()
                .enumerate()
                .map(|(i, v)| (i as ChunkId, v.clone()))
                .collect(),
        );
        let build = t.elapsed();
        let grew = resident_bytes()
            .zip(before)
            .map(|(after, before)| after.saturating_sub(before));
        let (mut scan_took, mut graph_took) = (Vec::new(), Vec::new());
        let (mut hit10, mut hit_depth, mut total10, mut total_depth) = (0, 0, 0, 0);
        for q in queries {
            let t = Instant::now();
            let mut ids = pool.iter().enumerate().map(|(i, v)| (i as ChunkId, &v[..]));
            let exact = nearest(q, &mut ids, DEPTH);
            scan_took.push(t.elapsed());
            let t = Instant::now();
            let found = graph.nearest(q, DEPTH, |_| true);
            graph_took.push(t.elapsed());
            let found: std::collections::HashSet<ChunkId> = found.iter().map(|p| p.0).collect();
            hit10 += exact
                .iter()
                .take(10)
                .filter(|p| found.contains(&p.0))
                .count();
            hit_depth += exact.iter().filter(|p| found.contains(&p.0)).count();
            total10 += exact.len().min(10);
            total_depth += exact.len();
        }
        scan_took.sort();
        graph_took.sort();
        rows.push(GraphRow {
            vectors: n,
            build,
            grew,
            scan_p95: percentile(&scan_took, 0.95),
            graph_p95: percentile(&graph_took, 0.95),
            recall10: hit10 as f64 / total10.max(1) as f64,
            recall_depth: hit_depth as f64 / total_depth.max(1) as f64,
        });
    }
    rows
}

/// The best recall@10 sum among the rankings that read no vector, and its row's name.
fn best_lexical<'a>(modes: &[(&'a str, Option<Mode>, f32)], totals: &[Scores]) -> (f64, &'a str) {
    modes
        .iter()
        .zip(totals)
        .filter(|((_, m, _), _)| !matches!(m, Some(Mode::Vector | Mode::Hybrid)))
        .map(|((name, _, _), t)| (t.recall10, *name))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap_or((0.0, "none"))
}

/// Runs the benchmark on the set in `set_dir`, with `embedder` for the vector rankings
/// (`None`: grep-only and lexical only); with `recall_only`, the rankings' table alone;
/// with `vectors`, the set's vectors kept in that directory between runs.
pub fn run(
    set_dir: &Path,
    limit: Option<usize>,
    embedder: Option<Arc<dyn Embedder>>,
    recall_only: bool,
    vectors: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let (set, pairs) = load_set(set_dir)?;
    let pairs = &pairs[..limit.unwrap_or(pairs.len()).min(pairs.len())];
    let root = tree(&set, out)?;
    writeln!(
        out,
        "set {} ({} pairs), tree {}",
        set_dir.display(),
        pairs.len(),
        root.display()
    )?;
    let (index, service) = first_build(&root, &set, embedder.as_ref(), vectors, out)?;
    let embedder = embedder.as_deref();
    let ranking = recall_table(&index, &service, &root, pairs, embedder, out)?;
    if recall_only {
        return Ok(());
    }
    if let Some(e) = embedder
        && e.id() != agentls_host::embedding::FULL_ID
    {
        under_load(
            &service,
            e,
            pairs,
            ranking.default_weight,
            &ranking.latencies,
            out,
        )?;
    }
    if let Some(e) = embedder {
        graph_recall(&service, e, &root, pairs, ranking.default_weight, out)?;
    }
    vector_rows(&service, &ranking.query_vectors, out)?;
    edit_costs(&index, &service, &root, out)?;
    let stats = service.stats();
    let per_k = |x: usize| x as f64 * 1000.0 / stats.lines.max(1) as f64;
    writeln!(
        out,
        "size: {:.1} chunks and {:.1} KiB of vectors per 1k lines ({} lines in chunks)",
        per_k(stats.chunks),
        per_k(stats.vector_bytes) / 1024.0,
        stats.lines
    )?;
    Ok(())
}

/// The set's `set.toml` and its pairs.
fn load_set(set_dir: &Path) -> anyhow::Result<(SetFile, Vec<Pair>)> {
    let set: SetFile = toml::from_str(
        &std::fs::read_to_string(set_dir.join("set.toml"))
            .with_context(|| format!("{}/set.toml", set_dir.display()))?,
    )
    .with_context(|| format!("{}/set.toml", set_dir.display()))?;
    let pairs: Vec<Pair> = std::fs::read_to_string(set_dir.join("pairs.jsonl"))
        .with_context(|| format!("{}/pairs.jsonl", set_dir.display()))?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("pairs.jsonl")?;
    Ok((set, pairs))
}

/// The first build: crawl, chunk, embed (vectors kept in `vectors` when given), with
/// each step's time printed.
fn first_build(
    root: &Path,
    set: &SetFile,
    embedder: Option<&Arc<dyn Embedder>>,
    vectors: Option<&Path>,
    out: &mut dyn Write,
) -> anyhow::Result<(RwLock<Index>, Service)> {
    let started = Instant::now();
    let mut index = Index::new(IndexOptions::default());
    let crawl = index.crawl(root, &Overlay::new());
    let crawl_took = started.elapsed();
    let index = RwLock::new(index);
    let service = Service::default();
    let t = Instant::now();
    service.sync(&index);
    let chunk_took = t.elapsed();
    let mut embed_took = Duration::ZERO;
    let (mut read, mut fresh) = (0, 0);
    if let Some(e) = embedder {
        service.set_embedder(e.clone());
        if let Some(dir) = vectors {
            // Named by the model too, so that the static and whole models' runs keep
            // their own.
            read = service.keep_in(dir.join(format!(
                "{}-{}.{}.vectors",
                set.package,
                set.version,
                agentls_semantic::store::file_safe(e.id())
            )));
        }
        let t = Instant::now();
        // A minute at a time, each written back when kept: an interrupted run of the
        // whole model keeps what it embedded.
        loop {
            let n = service.embed_some(Duration::from_secs(60), 64);
            if n == 0 {
                break;
            }
            fresh += n;
            if let Some(Err(err)) = service.persist() {
                anyhow::bail!("keeping the vectors in {}: {err}", dir_of(vectors));
            }
        }
        embed_took = t.elapsed();
    }
    let stats = service.stats();
    if vectors.is_some() {
        writeln!(
            out,
            "{read} vectors read from {}, {fresh} embedded now",
            dir_of(vectors),
        )?;
    }
    writeln!(
        out,
        "first build: {} files, {} lines: crawl {:.1?}, chunk {:.1?} ({} chunks), embed {:.1?} ({} vectors); {:.1?} in all",
        crawl.files,
        crawl.lines,
        crawl_took,
        chunk_took,
        stats.chunks,
        embed_took,
        stats.embedded,
        started.elapsed()
    )?;
    Ok((index, service))
}

/// What the rankings' table leaves for the measurements after it.
struct Ranking {
    /// The model's own vector weight.
    default_weight: f32,
    /// Each query's time at the default ranking, sorted.
    latencies: Vec<Duration>,
    /// The first queries' vectors, for the scan and graph rows.
    query_vectors: Vec<Vec<f32>>,
}

/// Every ranking (grep, BM25, lexical, vectors, the hybrid at three weights) on every
/// pair: recall@5, recall@10 and MRR as a table, the hybrid's gain over the best
/// lexical ranking, and the default ranking's query latency.
fn recall_table(
    index: &RwLock<Index>,
    service: &Service,
    root: &Path,
    pairs: &[Pair],
    embedder: Option<&dyn Embedder>,
    out: &mut dyn Write,
) -> anyhow::Result<Ranking> {
    // The grep baseline reads the same files the index holds.
    let files: Vec<(Arc<Path>, String)> = index
        .read()
        .map_err(|_| anyhow::anyhow!("index lock poisoned"))?
        .paths()
        .filter_map(|p| Some((p.clone(), std::fs::read_to_string(p).ok()?.to_lowercase())))
        .collect();

    // The hybrid at the model's own vector weight (the default), and at the others.
    let default_weight = embedder.map_or(VECTOR_WEIGHT, |e| e.fusion_weight());
    let names: Vec<String> = [1.0f32, 0.5, 0.25]
        .iter()
        .map(|&w| {
            let default = if w == default_weight {
                " (default)"
            } else {
                ""
            };
            format!("hybrid, vector weight {w}{default}")
        })
        .collect();
    let modes: &[(&str, Option<Mode>, f32)] = &[
        ("grep-only", None, 0.0),
        ("BM25 alone", Some(Mode::Bm25), 0.0),
        (
            "lexical (BM25 with the index's signals)",
            Some(Mode::Lexical),
            0.0,
        ),
        ("vector", Some(Mode::Vector), 1.0),
        (&names[0], Some(Mode::Hybrid), 1.0),
        (&names[1], Some(Mode::Hybrid), 0.5),
        (&names[2], Some(Mode::Hybrid), 0.25),
    ];
    let mut totals = vec![Scores::default(); modes.len()];
    let mut latencies = Vec::with_capacity(pairs.len());
    let mut query_vectors = Vec::new();
    for pair in pairs {
        let t = Instant::now();
        let qv = embedder.and_then(|e| e.embed(&[pair.query.as_str()]).pop());
        let embed_query = t.elapsed();
        if query_vectors.len() < SCAN_QUERIES {
            query_vectors.extend(qv.clone());
        }
        for (i, (_, mode, weight)) in modes.iter().enumerate() {
            let t = Instant::now();
            let ranked = match mode {
                None => grep_rank(&files, &pair.query),
                Some(mode) => {
                    if matches!(mode, Mode::Vector | Mode::Hybrid) && qv.is_none() {
                        continue;
                    }
                    ranked(service, &pair.query, qv.as_deref(), *mode, *weight)
                }
            };
            let measured = (*mode == Some(Mode::Hybrid) && *weight == default_weight)
                || (qv.is_none() && *mode == Some(Mode::Lexical));
            if measured {
                latencies.push(embed_query + t.elapsed());
            }
            totals[i].add(score(&ranked, root, &pair.files));
        }
    }
    let n = pairs.len().max(1) as f64;
    writeln!(
        out,
        "\n| ranking | recall@5 | recall@10 | MRR |\n|---|---|---|---|"
    )?;
    for ((name, mode, _), t) in modes.iter().zip(&totals) {
        if embedder.is_none() && matches!(mode, Some(Mode::Vector | Mode::Hybrid)) {
            writeln!(out, "| {name} | – | – | – (no embedding model) |")?;
            continue;
        }
        writeln!(
            out,
            "| {name} | {:.3} | {:.3} | {:.3} |",
            t.recall5 / n,
            t.recall10 / n,
            t.mrr / n
        )?;
    }
    if embedder.is_some() {
        let (words, words_name) = best_lexical(modes, &totals);
        let default = modes
            .iter()
            .position(|(_, m, w)| *m == Some(Mode::Hybrid) && *w == default_weight);
        if let Some(i) = default {
            writeln!(
                out,
                "\nhybrid at its default weight against the best lexical-only ranking ({words_name}): recall@10 {:+.1} points (the goal is +10)",
                (totals[i].recall10 - words) / n * 100.0
            )?;
        }
    }
    latencies.sort();
    writeln!(
        out,
        "\nquery ({}, query embedding included): p50 {:.1?}, p95 {:.1?}, max {:.1?} over {} queries, {} chunks",
        if embedder.is_some() {
            "hybrid"
        } else {
            "lexical"
        },
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.95),
        latencies.last().copied().unwrap_or_default(),
        latencies.len(),
        service.stats().chunks
    )?;
    Ok(Ranking {
        default_weight,
        latencies,
        query_vectors,
    })
}

/// The same hybrid ranking through a graph over the set's own vectors (which a
/// workspace this size does not need): what the approximation costs in recall.
fn graph_recall(
    service: &Service,
    embedder: &dyn Embedder,
    root: &Path,
    pairs: &[Pair],
    default_weight: f32,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let n = pairs.len().max(1) as f64;
    service.with_mut(|s| s.set_graph_min(0));
    let t = Instant::now();
    let linked = service.refresh_graph().unwrap_or(0);
    let build = t.elapsed();
    let mut scores = Scores::default();
    let mut took = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let t = Instant::now();
        let qv = embedder.embed(&[pair.query.as_str()]).pop();
        let files = ranked(
            service,
            &pair.query,
            qv.as_deref(),
            Mode::Hybrid,
            default_weight,
        );
        took.push(t.elapsed());
        scores.add(score(&files, root, &pair.files));
    }
    took.sort();
    writeln!(
        out,
        "hybrid through a graph of the set's {linked} vectors (built in {build:.1?}): recall@5 {:.3}, recall@10 {:.3}, MRR {:.3}; query p50 {:.1?}, p95 {:.1?}",
        scores.recall5 / n,
        scores.recall10 / n,
        scores.mrr / n,
        percentile(&took, 0.5),
        percentile(&took, 0.95),
    )?;
    service.with_mut(|s| s.set_graph_min(GRAPH_MIN));
    Ok(())
}

/// Graphs and scans over the set's vectors repeated to larger sizes: build time,
/// memory, latency and how much of the exact answer a graph keeps.
fn vector_rows(
    service: &Service,
    query_vectors: &[Vec<f32>],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let vectors: Vec<Vec<f32>> = service.with(|s| s.vectors().map(|(_, v)| v.to_vec()).collect());
    for r in graph_rows(&vectors, query_vectors, &GRAPH_SIZES) {
        writeln!(
            out,
            "graph of {} vectors (the set's, and copies moved by noise): built in {:.1?}, resident memory grew by {} (approximate: the build's threads and what the allocator keeps count too); p95 {:.1?} against the scan's {:.1?}; holds {:.1}% of the scan's 10 nearest and {:.1}% of its {DEPTH}",
            r.vectors,
            r.build,
            r.grew.map_or_else(
                || "not read".to_owned(),
                |b| format!(
                    "{:.0} MiB ({} B a vector)",
                    b as f64 / 1048576.0,
                    b / r.vectors.max(1) as u64
                )
            ),
            r.graph_p95,
            r.scan_p95,
            r.recall10 * 100.0,
            r.recall_depth * 100.0
        )?;
    }
    let rows = scan_budget(vectors, query_vectors);
    if !rows.is_empty() {
        let rows: Vec<String> = rows
            .iter()
            .map(|(n, p95)| format!("{n} vectors p95 {p95:.1?}"))
            .collect();
        writeln!(
            out,
            "vector scan alone ({} queries; the set's vectors repeated; budget {QUERY_BUDGET:?}): {}",
            query_vectors.len(),
            rows.join(", ")
        )?;
    }
    Ok(())
}

/// One edited file (the largest): re-indexed, re-chunked, its changed chunk
/// re-embedded; first as a change on disk, then as a keystroke in its buffer.
fn edit_costs(
    index: &RwLock<Index>,
    service: &Service,
    root: &Path,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let biggest = index
        .read()
        .map_err(|_| anyhow::anyhow!("index lock poisoned"))?
        .paths()
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .cloned();
    let Some(path) = biggest else {
        return Ok(());
    };
    let text = std::fs::read_to_string(&path)?;
    let shown = path
        .strip_prefix(root)
        .unwrap_or(&path)
        .display()
        .to_string();
    // First as a file changed on disk (parsed whole), then as a keystroke in the
    // buffer that edit left open (the parser reuses the last tree).
    let edited = format!("{text}\n\ndef added_by_the_benchmark():\n    return 42\n");
    let typed = format!("{text}\n\ndef added_by_the_benchmark():\n    return 43\n");
    for (what, new_text) in [
        ("one edited file", &edited),
        ("then a keystroke in it", &typed),
    ] {
        let e = edit_once(index, service, &path, new_text)?;
        writeln!(
            out,
            "{what} ({shown}, {} lines): {:.1?} in all: re-indexed {:.1?}, re-chunked {:.1?}, {} chunk(s) re-embedded {:.1?}",
            new_text.lines().count(),
            e.index + e.chunk + e.embed,
            e.index,
            e.chunk,
            e.embedded,
            e.embed,
        )?;
    }
    Ok(())
}

fn dir_of(vectors: Option<&Path>) -> String {
    vectors.map_or_else(String::new, |d| d.display().to_string())
}

/// `agentls bench search [SET…] [--limit N] [--embedder static|full|none] [--recall-only]
/// [--vectors DIR]`.
pub fn main(
    sets: Vec<PathBuf>,
    limit: Option<usize>,
    embedder: &str,
    recall_only: bool,
    vectors: Option<PathBuf>,
) -> anyhow::Result<std::process::ExitCode> {
    let sets = if sets.is_empty() {
        let dir = Path::new("fixtures/retrieval");
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| {
                format!(
                    "{}: no retrieval sets here; name a set directory",
                    dir.display()
                )
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("set.toml").is_file())
            .collect();
        found.sort();
        found
    } else {
        sets
    };
    let embedder = agentls_host::embedding::load(embedder)?;
    let mut out = std::io::stdout().lock();
    for set in &sets {
        run(
            set,
            limit,
            embedder.clone(),
            recall_only,
            vectors.as_deref(),
            &mut out,
        )?;
        writeln!(out)?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_is_timed_from_the_sets_size_up_to_the_first_over_budget() {
        let vectors: Vec<Vec<f32>> = (0..10).map(|i| vec![i as f32, 1.0]).collect();
        let rows = scan_budget(vectors, &vec![vec![1.0, 0.0]; 3]);
        let sizes: Vec<usize> = rows.iter().map(|r| r.0).collect();
        let all: Vec<usize> = std::iter::once(10).chain(SCAN_SIZES).collect();
        assert_eq!(sizes, all[..sizes.len()], "{rows:?}");
        let (last, under) = rows.split_last().unwrap();
        assert!(under.iter().all(|r| r.1 <= QUERY_BUDGET), "{rows:?}");
        assert!(
            last.1 > QUERY_BUDGET || sizes.len() == all.len(),
            "{rows:?}"
        );
        assert!(scan_budget(Vec::new(), &[vec![1.0]]).is_empty());
    }

    #[test]
    fn resident_memory_is_read_from_proc_status() {
        let status = "Name:\tagentls\nVmPeak:\t  900 kB\nVmRSS:\t   51234 kB\nRssAnon:\t 1 kB\n";
        assert_eq!(vm_rss(status), Some(51234 * 1024));
        assert_eq!(vm_rss("VmRSS: lots\n"), None);
        assert_eq!(vm_rss("Name: x\n"), None);
        #[cfg(target_os = "linux")]
        assert!(resident_bytes().is_some_and(|b| b > 0));
    }

    #[test]
    fn the_graph_is_measured_against_the_scan_on_moved_copies() {
        let vectors: Vec<Vec<f32>> = (0..40)
            .map(|i| {
                let a = i as f32 * 0.15;
                vec![a.cos(), a.sin(), 0.0, 0.0]
            })
            .collect();
        let queries = vec![vec![1.0, 0.0, 0.0, 0.0], vec![0.0, 0.0, 1.0, 0.0]];
        let rows = graph_rows(&vectors, &queries, &[100, 300]);
        let sizes: Vec<usize> = rows.iter().map(|r| r.vectors).collect();
        assert_eq!(sizes, [100, 300]);
        for r in &rows {
            // A wide search over a few hundred vectors reaches them all.
            assert_eq!((r.recall10, r.recall_depth), (1.0, 1.0), "{}", r.vectors);
            #[cfg(target_os = "linux")]
            assert!(r.grew.is_some(), "resident memory read on Linux");
        }
        assert!(graph_rows(&[], &queries, &[100]).is_empty());
    }

    #[test]
    fn scores_count_files_in_the_top_k_and_the_first_rank() {
        let root = Path::new("/t");
        let ranked: Vec<Arc<Path>> = ["/t/a.py", "/t/b.py", "/t/c.py"]
            .iter()
            .map(|p| Arc::from(Path::new(p)))
            .collect();
        let s = score(&ranked, root, &["b.py".into(), "z.py".into()]);
        assert_eq!((s.recall5, s.recall10, s.mrr), (0.5, 0.5, 0.5));
        let s = score(&ranked, root, &["z.py".into()]);
        assert_eq!(s.mrr, 0.0);
    }

    #[test]
    fn the_best_lexical_ranking_is_chosen_among_those_without_vectors() {
        let modes = [
            ("grep-only", None, 0.0),
            ("BM25 alone", Some(Mode::Bm25), 0.0),
            ("lexical", Some(Mode::Lexical), 0.0),
            ("vector", Some(Mode::Vector), 1.0),
            ("hybrid", Some(Mode::Hybrid), 0.5),
        ];
        let totals: Vec<Scores> = [10.0, 30.0, 20.0, 50.0, 40.0]
            .iter()
            .map(|&recall10| Scores {
                recall10,
                ..Scores::default()
            })
            .collect();
        assert_eq!(best_lexical(&modes, &totals), (30.0, "BM25 alone"));
    }

    #[test]
    fn grep_ranks_by_distinct_words_then_count() {
        let files: Vec<(Arc<Path>, String)> = vec![
            (Arc::from(Path::new("/t/a.py")), "retry retry retry".into()),
            (Arc::from(Path::new("/t/b.py")), "retry upload".into()),
            (Arc::from(Path::new("/t/c.py")), "nothing".into()),
        ];
        let got = grep_rank(&files, "Retry the upload");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref(), Path::new("/t/b.py"));
    }
}
