//! Memory over a long session: what closed documents held must be given back.

use serde_json::json;

use crate::support::{open, proc_status, rss_kib, start};

/// A Rust file of about `bytes` bytes, different for each `seed`, with symbols for the
/// index to hold.
fn rust_file(seed: usize, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 200);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "/// Doc {seed} {i}.\npub fn item_{seed}_{i}(x: u32) -> u32 {{\n    let y = x.wrapping_mul({i});\n    y + {seed}\n}}\n\n"
        ));
        i += 1;
    }
    text
}

/// Opens and closes `docs` files of `bytes` bytes, numbered from `first`, then waits
/// until the server has handled them all.
fn open_close(
    client: &mut agentls_testkit::lsp::LspClient,
    first: usize,
    docs: usize,
    bytes: usize,
) {
    for n in first..first + docs {
        let uri = format!("file:///tmp/agentls-e2e-memory/f{n}.rs");
        open(client, &uri, 1, &rust_file(n, bytes));
        client
            .notify(
                "textDocument/didClose",
                json!({ "textDocument": { "uri": uri } }),
            )
            .unwrap();
    }
    // Requests are answered after the notifications before them are handled; the
    // index jobs they spawned run on the blocking pool, so let those finish too.
    client
        .request_ok("workspace/symbol", json!({ "query": "item_0_0" }))
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    client
        .request_ok("workspace/symbol", json!({ "query": "item_0_0" }))
        .unwrap();
}

#[test]
fn closed_documents_give_their_memory_back() {
    const DOCS: usize = 2_000;
    const BYTES: usize = 100 * 1024;
    // Quiet logs: 2,000 debug lines per second are not what is measured here.
    let mut client = start(&[("AGENTLS_LOG", "warn")]);
    client.initialize(json!({}), json!({})).unwrap();
    // A debug build indexes 200 MB of Rust slowly on a shared machine.
    client.timeout = std::time::Duration::from_secs(600);
    let pid = client.pid();
    let start = rss_kib(pid);
    let began = std::time::Instant::now();
    open_close(&mut client, 0, 100, BYTES);
    let warm = rss_kib(pid);
    eprintln!("memory: first 100 documents took {:?}", began.elapsed());
    open_close(&mut client, 100, DOCS - 100, BYTES);
    let end = rss_kib(pid);
    let growth = end.saturating_sub(warm);
    eprintln!(
        "memory: start {} MiB, after 100 docs {} MiB, after {DOCS} docs of {} KiB {} MiB (+{} MiB), {} threads",
        start / 1024,
        warm / 1024,
        BYTES / 1024,
        end / 1024,
        growth / 1024,
        proc_status(pid, "Threads:")
    );
    assert!(
        growth < 60 * 1024,
        "RSS grew by {} MiB after opening and closing {DOCS} documents",
        growth / 1024
    );
    assert!(client.shutdown().unwrap().success());
}

/// A client that sends many requests and stops reading stdout: the server stops reading
/// too (its outgoing queue is bounded) instead of queueing answers without end, and
/// answers everything once the client reads again.
#[test]
fn a_client_that_stops_reading_holds_the_server_back_not_its_memory() {
    use std::io::{BufReader, Write};
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use agentls_testkit::lsp::read_frame;

    const REQUESTS: usize = 2_000;
    const DOC_BYTES: usize = 200 * 1024;
    let mut child = Command::new(crate::support::bin())
        .env("AGENTLS_LOG", "warn")
        .env("AGENTLS_CONFIG", "/nonexistent/agentls.toml")
        .env("AGENTLS_EMBEDDER", "none")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let frame = move |msg: serde_json::Value| {
        let body = msg.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    };
    let uri = "untitled:agentls-e2e/backpressure.rs";
    let view = move |id: usize| {
        frame(
            json!({ "jsonrpc": "2.0", "id": id, "method": "agentls/viewFileText",
                      "params": { "textDocument": { "uri": uri } } }),
        )
    };
    stdin
        .write_all(&frame(
            json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
                                  "params": { "capabilities": {} } }),
        ))
        .unwrap();
    stdin
        .write_all(&frame(
            json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }),
        ))
        .unwrap();
    let text = "x".repeat(DOC_BYTES);
    stdin
        .write_all(&frame(json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen",
            "params": { "textDocument": { "uri": uri, "languageId": "rust", "version": 1, "text": text } } })))
        .unwrap();
    stdin.write_all(&view(1)).unwrap();
    // Read until the answer to the first view: the server is warm.
    let answered = |stdout: &mut BufReader<_>, id: usize| loop {
        let msg = read_frame(stdout).unwrap().unwrap();
        if msg["id"] == id && msg.get("method").is_none() {
            return msg;
        }
    };
    assert_eq!(
        answered(&mut stdout, 1)["result"]["text"]
            .as_str()
            .map(str::len),
        Some(DOC_BYTES)
    );
    let before = rss_kib(pid);

    // Send the requests from a thread (it blocks once the server stops reading) and
    // read nothing meanwhile.
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let writer = std::thread::spawn(move || {
        for id in 2..REQUESTS + 2 {
            stdin.write_all(&view(id)).unwrap();
            counter.fetch_add(1, Ordering::Relaxed);
        }
        stdin
    });
    // Watch until the server neither reads nor grows for 3 s (held back), reads every
    // request, or grows past the bound. A debug build answers slowly, so a server that
    // queued without bound would show it by growing, not by reading at once.
    const LIMIT_KIB: u64 = 100 * 1024;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let (mut peak, mut last_sent, mut last_rss, mut quiet) = (before, 0, before, 0);
    while std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let (rss, now) = (rss_kib(pid), sent.load(Ordering::Relaxed));
        peak = peak.max(rss);
        if now >= REQUESTS || peak > before + LIMIT_KIB {
            break;
        }
        quiet = if now == last_sent && rss <= last_rss + 1024 {
            quiet + 1
        } else {
            0
        };
        if quiet >= 6 {
            break;
        }
        (last_sent, last_rss) = (now, rss);
    }
    let stalled_at = sent.load(Ordering::Relaxed);
    eprintln!(
        "backpressure: the client stopped reading; the server took {stalled_at} of {REQUESTS} \
         requests of {} KiB answers, RSS {} -> {} MiB",
        DOC_BYTES / 1024,
        before / 1024,
        peak / 1024
    );
    assert!(
        stalled_at < REQUESTS,
        "the server read every request although nobody read its answers"
    );
    assert!(
        peak < before + LIMIT_KIB,
        "RSS grew by {} MiB while the client did not read",
        (peak - before) / 1024
    );

    // Reading again: every request is answered, in full.
    for id in 2..REQUESTS + 2 {
        let msg = answered(&mut stdout, id);
        assert_eq!(
            msg["result"]["text"].as_str().map(str::len),
            Some(DOC_BYTES)
        );
    }
    let mut stdin = writer.join().unwrap();
    stdin
        .write_all(&frame(
            json!({ "jsonrpc": "2.0", "id": REQUESTS + 2, "method": "shutdown" }),
        ))
        .unwrap();
    answered(&mut stdout, REQUESTS + 2);
    stdin
        .write_all(&frame(json!({ "jsonrpc": "2.0", "method": "exit" })))
        .unwrap();
    assert!(child.wait().unwrap().success());
}
