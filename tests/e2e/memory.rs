//! Memory over a long session: what closed documents held must be given back.

use serde_json::json;

use crate::support::{open, rss_kib, start};

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
        let scheme = std::env::var("XMEM_SCHEME").unwrap_or("file:///tmp/".into());
        let uri = format!("{scheme}agentls-e2e-memory/f{n}.rs");
        let seed = if std::env::var_os("XMEM_SAME").is_some() {
            0
        } else {
            n
        };
        open(client, &uri, 1, &rust_file(seed, bytes));
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
    let docs_env: usize = std::env::var("XMEM_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let DOCS: usize = docs_env;
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
        "memory: start {} MiB, after 100 docs {} MiB, after {DOCS} docs of {} KiB {} MiB (+{} MiB)",
        start / 1024,
        warm / 1024,
        BYTES / 1024,
        end / 1024,
        growth / 1024
    );
    assert!(
        growth < 60 * 1024,
        "RSS grew by {} MiB after opening and closing {DOCS} documents",
        growth / 1024
    );
    assert!(client.shutdown().unwrap().success());
}
