//! The driver of `agentls bench heavy` (the `bench-heavy` feature): this executable
//! started as a language server, spoken to with the test kit's LSP client.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use agentls_testkit::lsp::LspClient;
use anyhow::Context;
use serde_json::json;

use super::options::Options;

/// Runs the benchmark and prints its report on stdout.
pub(super) fn main(options: Options) -> anyhow::Result<ExitCode> {
    let bin = std::env::current_exe().context("finding this executable")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "agentls bench heavy (agentls {}, {} cores)",
        env!("CARGO_PKG_VERSION"),
        std::thread::available_parallelism().map_or(1, |n| n.get())
    )?;
    if options.only == "all" || options.only == "latency" {
        writeln!(stdout, "{}", latency(&bin, &options)?)?;
    }
    if options.only == "all" || options.only == "memory" {
        for embedder in &options.embedders {
            match memory(&bin, &options, embedder)? {
                Some(report) => writeln!(stdout, "{report}")?,
                None => writeln!(
                    stdout,
                    "memory, embedder {embedder}: skipped (the model is not fetched: `agentls model fetch all-minilm-l6-v2`)"
                )?,
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A workspace of `files` small Python files (so that `workspace/symbol` has an index
/// to search), crawled by the server it returns, initialized and ready. The server's
/// cache directory is `cache` (the stored vectors of a temporary workspace do not stay
/// in the user's).
fn server(
    bin: &Path,
    root: &Path,
    cache: &Path,
    files: usize,
    embedder: &str,
) -> anyhow::Result<LspClient> {
    for f in 0..files {
        let text: String = (0..40)
            .map(|i| format!("def handler_{f}_{i}(request):\n    return route_{i}(request)\n\n"))
            .collect();
        std::fs::write(root.join(format!("mod_{f}.py")), text)?;
    }
    let mut client = LspClient::start(
        bin,
        &[],
        &[
            ("AGENTLS_LOG", "warn"),
            ("AGENTLS_CONFIG", "/nonexistent/agentls.toml"),
            ("AGENTLS_EMBEDDER", embedder),
            ("XDG_CACHE_HOME", &*cache.to_string_lossy()),
        ],
    )?;
    client.timeout = Duration::from_secs(600);
    let uri = url(root);
    client.initialize(
        json!({}),
        json!({ "rootUri": uri, "workspaceFolders": [{ "uri": uri, "name": "bench" }] }),
    )?;
    // The crawl is done once a file's symbols answer.
    let last = format!("handler_{}_39", files.saturating_sub(1));
    wait_until(&mut client, Duration::from_secs(120), |c| {
        Ok(symbol_count(c, &last)? > 0)
    })?;
    Ok(client)
}

fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// `workspace/symbol` for `query`: how many answers.
fn symbol_count(client: &mut LspClient, query: &str) -> anyhow::Result<usize> {
    let r = client.request_ok("workspace/symbol", json!({ "query": query }))?;
    Ok(r.as_array().map_or(0, Vec::len))
}

fn wait_until(
    client: &mut LspClient,
    bound: Duration,
    mut done: impl FnMut(&mut LspClient) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + bound;
    while !done(client)? {
        anyhow::ensure!(Instant::now() < deadline, "waited {bound:?} in vain");
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// A Python file of about `bytes` bytes whose names all carry `tag`.
fn python(tag: &str, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 256);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "class Item_{tag}_{i}:\n    def run_{tag}_{i}(self, x):\n        return helper_{tag}_{i}(x) + self.value\n\n"
        ));
        i += 1;
    }
    text
}

/// Latencies of `n` `workspace/symbol` requests, in ms; `between` runs before each.
fn query_latencies(
    client: &mut LspClient,
    n: usize,
    mut between: impl FnMut(&mut LspClient, usize) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(n);
    for q in 0..n {
        between(client, q)?;
        let started = Instant::now();
        symbol_count(client, &format!("handler_{}_{}", q % 50, q % 40))?;
        ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn latency(bin: &Path, options: &Options) -> anyhow::Result<String> {
    let dir = tempfile::tempdir()?;
    let root = std::path::absolute(dir.path())?;
    let cache = tempfile::tempdir()?;
    let mut client = server(bin, &root, cache.path(), 200, "none")?;
    let big = root.join("big_generated.py");
    let text = python("big", options.big_mb * 1024 * 1024);
    let lines = text.lines().count() as u32;
    let uri = url(&big);
    let doc = json!({ "uri": uri, "languageId": "python", "version": 1, "text": text });
    let started = Instant::now();
    client.notify("textDocument/didOpen", json!({ "textDocument": doc }))?;
    // Indexed once its last class answers.
    let last = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("class ").and_then(|l| l.strip_suffix(':')))
        .unwrap_or("Item_big_0")
        .to_owned();
    wait_until(&mut client, Duration::from_secs(600), |c| {
        Ok(symbol_count(c, &last)? > 0)
    })?;
    let first_index = started.elapsed();
    drop(text);
    // Warm-up, then the reference: the buffer open, nothing parsing.
    query_latencies(&mut client, 20, |_, _| Ok(()))?;
    let idle = query_latencies(&mut client, options.queries, |_, _| Ok(()))?;
    // A one-line change every 50 ms, spread over the file: the server re-parses the
    // buffer after each (changes that arrive during a parse are taken by the next one),
    // so a parse is under way for most of the queries.
    let mut version = 1;
    let mut last_change = Instant::now() - Duration::from_secs(1);
    let busy = query_latencies(&mut client, options.queries, |c, q| {
        if last_change.elapsed() >= Duration::from_millis(50) {
            version += 1;
            let line = (q as u32 * 7919) % lines.max(1);
            let change = json!({
                "range": { "start": { "line": line, "character": 0 },
                           "end": { "line": line, "character": 0 } },
                "text": format!("# edit {version}\n")
            });
            c.notify(
                "textDocument/didChange",
                json!({ "textDocument": { "uri": uri, "version": version },
                        "contentChanges": [change] }),
            )?;
            last_change = Instant::now();
        }
        Ok(())
    })?;
    let (idle95, busy95) = (percentile(&idle, 0.95), percentile(&busy, 0.95));
    let report = format!(
        "latency: workspace/symbol over {n} requests, {mb} MB Python buffer ({lines} lines, first index {first:.1?}), {changes} one-line didChanges\n\
         \x20 no parse running:   p50 {i50:.2} ms, p95 {idle95:.2} ms\n\
         \x20 re-parse after each change: p50 {b50:.2} ms, p95 {busy95:.2} ms\n\
         \x20 ratio p95: {ratio:.2}x (goal: within 2x)",
        n = options.queries,
        mb = options.big_mb,
        first = first_index,
        changes = version - 1,
        i50 = percentile(&idle, 0.5),
        b50 = percentile(&busy, 0.5),
        ratio = busy95 / idle95.max(1e-9),
    );
    let _ = client.shutdown();
    Ok(report)
}

/// The semantic index's chunks, chunks with a vector, and files (`agentls/semanticSearch`).
fn semantic_counts(client: &mut LspClient) -> anyhow::Result<(u64, u64, u64)> {
    let r = client.request_ok(
        "agentls/semanticSearch",
        json!({ "query": "item run helper", "limit": 1 }),
    )?;
    let n = |k: &str| r.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    Ok((n("chunks"), n("embedded"), n("files")))
}

/// What [`semantic_counts`] says, in words; nothing without a model.
fn semantic_line(client: &mut LspClient, embedder: &str) -> anyhow::Result<String> {
    if embedder == "none" {
        return Ok(String::new());
    }
    let (chunks, embedded, files) = semantic_counts(client)?;
    Ok(format!(
        " [semantic: {chunks} chunks, {embedded} with vectors, {files} files]"
    ))
}

/// How long the memory run waits for the documents to be indexed, embedded or closed.
const BOUND: Duration = Duration::from_secs(4 * 3600);

/// Resident memory of `pid` in MiB (`VmRSS`).
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    crate::bench_search::vm_rss(&status).map_or(0.0, |b| b as f64 / 1048576.0)
}

fn memory(bin: &Path, options: &Options, embedder: &str) -> anyhow::Result<Option<String>> {
    if embedder != "none" && agentls_host::embedding::load(embedder).is_err() {
        return Ok(None);
    }
    let dir = tempfile::tempdir()?;
    let root = std::path::absolute(dir.path())?;
    let cache = tempfile::tempdir()?;
    let mut client = server(bin, &root, cache.path(), 50, embedder)?;
    let pid = client.pid();
    // Settled: the embedder loaded and the workspace embedded.
    std::thread::sleep(Duration::from_secs(3));
    let fresh = rss_mib(pid);
    let fresh_semantic = semantic_line(&mut client, embedder)?;
    let docs: Vec<PathBuf> = (0..options.docs)
        .map(|d| root.join(format!("open_{d}.py")))
        .collect();
    let started = Instant::now();
    for (d, path) in docs.iter().enumerate() {
        let doc = json!({ "uri": url(path), "languageId": "python", "version": 1,
                          "text": python(&format!("d{d}"), options.doc_kb * 1024) });
        client.notify("textDocument/didOpen", json!({ "textDocument": doc }))?;
    }
    let last = format!("Item_d{}_0", options.docs.saturating_sub(1));
    // Hours, not minutes: on two cores shared with other builds, 2,000 documents with
    // a model took more than 30 minutes to index.
    wait_until(&mut client, BOUND, |c| Ok(symbol_count(c, &last)? > 0))?;
    let opened_in = started.elapsed();
    let mut embedded_in = String::new();
    if options.embed_first && embedder != "none" {
        wait_until(&mut client, BOUND, |c| {
            let (chunks, embedded, _) = semantic_counts(c)?;
            Ok(chunks > 0 && embedded >= chunks)
        })?;
        embedded_in = format!(", all embedded in {:.1?}", started.elapsed());
    }
    let open = rss_mib(pid);
    let open_semantic = semantic_line(&mut client, embedder)?;
    let started = Instant::now();
    for path in &docs {
        client.notify(
            "textDocument/didClose",
            json!({ "textDocument": { "uri": url(path) } }),
        )?;
    }
    wait_until(&mut client, BOUND, |c| Ok(symbol_count(c, &last)? == 0))?;
    let closed_in = started.elapsed();
    let closed = rss_mib(pid);
    std::thread::sleep(Duration::from_secs(options.settle));
    // One request, so that anything the server does on its next message has happened.
    symbol_count(&mut client, "handler_0_0")?;
    let settled = rss_mib(pid);
    let settled_semantic = semantic_line(&mut client, embedder)?;
    let threads = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:").map(|t| t.trim().to_owned()))
        .unwrap_or_default();
    let _ = client.shutdown();
    Ok(Some(format!(
        "memory, embedder {embedder}: {docs} documents of {kb} KB opened (indexed in {opened_in:.1?}{embedded_in}) and closed (in {closed_in:.1?})\n\
         \x20 fresh {fresh:.0} MiB{fresh_semantic}\n\
         \x20 all open {open:.0} MiB{open_semantic}\n\
         \x20 just closed {closed:.0} MiB, {settle} s later {settled:.0} MiB ({threads} threads){settled_semantic}\n\
         \x20 after close - fresh: {delta:+.0} MiB (goal: within 50 MiB)",
        docs = options.docs,
        kb = options.doc_kb,
        settle = options.settle,
        delta = settled - fresh,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_sorted_samples() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&samples, 0.5), 51.0);
        assert_eq!(percentile(&samples, 0.95), 95.0);
        assert_eq!(percentile(&[], 0.95), 0.0);
    }

    #[test]
    fn python_files_are_about_their_size_with_tagged_names() {
        let text = python("t", 10_000);
        assert!(text.len() >= 10_000 && text.len() < 10_200);
        assert!(text.starts_with("class Item_t_0:"));
    }
}
