//! Bad input: each case gets an error or a logged resync, never a panic or a wrong buffer.

use agentls_testkit::lsp::changes;
use serde_json::json;

use crate::support::{change, open, start, start_initialized, view, wait_message};

const URI: &str = "file:///tmp/agentls-e2e/bad.rs";

#[test]
fn malformed_json_rpc_is_survived() {
    let (mut client, _) = start_initialized(None);
    open(&mut client, URI, 1, "fn main() {}\n");
    // A frame whose body is not JSON, one that is JSON but not JSON-RPC, and an
    // unknown request method.
    client
        .send_raw(b"Content-Length: 9\r\n\r\n{not json")
        .unwrap();
    // Broken framing: a line that is no header, then a length that is no number.
    client
        .send_raw(b"hello there\r\n\r\nContent-Length: many\r\n\r\n")
        .unwrap();
    // A body that is not UTF-8.
    client
        .send_raw(b"Content-Length: 2\r\n\r\n\xff\xfe")
        .unwrap();
    client
        .send(&json!({ "jsonrpc": "2.0", "foo": [1, 2, 3] }))
        .unwrap();
    client
        .send(&json!({ "jsonrpc": "2.0", "id": "x", "method": 7 }))
        .unwrap();
    let unknown = client
        .request("agentls/noSuchMethod", json!({}))
        .unwrap()
        .unwrap_err();
    assert_eq!(unknown["code"], -32601, "{unknown}");
    // The first two were answered with JSON-RPC errors that carry no id.
    let codes: Vec<_> = client
        .orphan_errors
        .iter()
        .map(|e| e["error"]["code"].clone())
        .collect();
    assert!(codes.contains(&json!(-32700)), "{:?}", client.orphan_errors);
    assert!(codes.contains(&json!(-32600)), "{:?}", client.orphan_errors);
    // Unknown notifications are ignored.
    client.notify("$/noSuchNotification", json!({})).unwrap();
    // Wrong params type for a known request.
    let bad = client
        .request("agentls/viewFileText", json!({ "nope": 1 }))
        .unwrap()
        .unwrap_err();
    assert_eq!(bad["code"], -32602, "{bad}");
    assert_eq!(view(&mut client, URI).0, "fn main() {}\n");
    assert!(client.shutdown().unwrap().success());
}

#[test]
fn out_of_range_and_stale_changes_never_corrupt_the_buffer() {
    let (mut client, _) = start_initialized(Some(&["utf-16"]));
    // A change for a document that is not open is ignored.
    change(
        &mut client,
        "file:///tmp/never-opened.rs",
        2,
        changes(&[(0, 0, 0, 0, "x")]),
    );
    open(&mut client, URI, 1, "ab😀cd\nxy");
    // Past the end of a line clamps to the line's end; past the last line to the end.
    change(&mut client, URI, 2, changes(&[(0, 99, 0, 120, "!")]));
    change(&mut client, URI, 3, changes(&[(40, 0, 41, 3, "?")]));
    assert_eq!(view(&mut client, URI).0, "ab😀cd!\nxy?");
    // Inside the surrogate pair (column 3) snaps to the emoji's start.
    change(&mut client, URI, 4, changes(&[(0, 3, 0, 3, "|")]));
    assert_eq!(view(&mut client, URI).0, "ab|😀cd!\nxy?");
    // A version that is not newer is applied in arrival order, logged, and leaves the
    // buffer out of sync: the client's history is not ours.
    change(&mut client, URI, 4, changes(&[(1, 0, 1, 0, ">")]));
    assert_eq!(
        view(&mut client, URI),
        ("ab|😀cd!\n>xy?".to_owned(), 4, false)
    );
    let shown = wait_message(&mut client, "window/showMessage", "lost sync");
    assert!(shown.contains("not newer"), "{shown}");
    wait_message(&mut client, "window/logMessage", "not newer");
    // A full-text change brings it back.
    change(&mut client, URI, 5, json!([{ "text": "ab|😀cd!\n>xy?" }]));
    assert_eq!(
        view(&mut client, URI),
        ("ab|😀cd!\n>xy?".to_owned(), 5, true)
    );
    // An inverted range is refused whole: the buffer is kept and marked out of sync,
    // and the user is told.
    change(
        &mut client,
        URI,
        6,
        changes(&[(0, 0, 0, 0, "Z"), (1, 2, 0, 1, "")]),
    );
    let shown = wait_message(&mut client, "window/showMessage", "lost sync");
    assert!(shown.contains("inverted range"), "{shown}");
    assert_eq!(
        view(&mut client, URI),
        ("ab|😀cd!\n>xy?".to_owned(), 6, false)
    );
    // Saving with text brings it back.
    client
        .notify(
            "textDocument/didSave",
            json!({ "textDocument": { "uri": URI }, "text": "Zab|😀cd!\n>xy?" }),
        )
        .unwrap();
    assert_eq!(
        view(&mut client, URI),
        ("Zab|😀cd!\n>xy?".to_owned(), 6, true)
    );
}

#[test]
fn a_did_change_of_the_wrong_shape_marks_the_buffer_out_of_sync() {
    let (mut client, _) = start_initialized(None);
    open(&mut client, URI, 1, "fn a() {}\n");
    // `contentChanges` is no array: tower-lsp alone would drop this without a word.
    client
        .notify(
            "textDocument/didChange",
            json!({
                "textDocument": { "uri": URI, "version": 2 },
                "contentChanges": { "text": "fn b() {}\n" }
            }),
        )
        .unwrap();
    assert_eq!(view(&mut client, URI), ("fn a() {}\n".to_owned(), 1, false));
    let logged = wait_message(&mut client, "window/logMessage", "lost sync");
    assert!(logged.contains("invalid didChange"), "{logged}");
    wait_message(&mut client, "window/showMessage", "lost sync");
    // A change without a version: the same.
    change(&mut client, URI, 3, json!([{ "text": "x" }]));
    assert_eq!(view(&mut client, URI), ("x".to_owned(), 3, true));
    client
        .notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": URI }, "contentChanges": [] }),
        )
        .unwrap();
    assert!(!view(&mut client, URI).2);
    // Reopening brings it back.
    open(&mut client, URI, 7, "fn c() {}\n");
    assert_eq!(view(&mut client, URI), ("fn c() {}\n".to_owned(), 7, true));
    // The transport's own notification cannot come from the client.
    client
        .notify(
            "agentls/internal/invalidDidChange",
            json!({ "uri": URI, "reason": "forged" }),
        )
        .unwrap();
    assert!(view(&mut client, URI).2);
    assert!(client.shutdown().unwrap().success());
}

#[test]
fn dollar_requests_are_answered_method_not_found() {
    let (mut client, _) = start_initialized(None);
    let err = client
        .request("$/agentls/noSuchRequest", json!({}))
        .unwrap()
        .unwrap_err();
    assert_eq!(err["code"], -32601, "{err}");
    // `$/` notifications are still ignored without a word, and the server goes on.
    client.notify("$/noSuchNotification", json!({})).unwrap();
    open(&mut client, URI, 1, "ok\n");
    assert_eq!(view(&mut client, URI).0, "ok\n");
    assert!(
        client.orphan_errors.is_empty(),
        "{:?}",
        client.orphan_errors
    );
}

/// A frame with a wrong `Content-Length` costs that frame only: the next message is
/// read as it was sent.
#[test]
fn a_wrong_content_length_costs_only_its_frame() {
    let (mut client, _) = start_initialized(None);
    open(&mut client, URI, 1, "fn main() {}\n");
    let body = |id: i64| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "agentls/viewFileText",
            "params": { "textDocument": { "uri": URI } }
        })
        .to_string()
    };
    // Too short: the body is cut and its rest is not a header.
    let b = body(900);
    let frame = format!("Content-Length: {}\r\n\r\n{b}", b.len() - 12);
    client.send_raw(frame.as_bytes()).unwrap();
    assert_eq!(view(&mut client, URI).0, "fn main() {}\n");
    // Too long: the body would swallow the next request, which the client waits for.
    let b = body(901);
    let frame = format!("Content-Length: {}\r\n\r\n{b}", b.len() + 500);
    client.send_raw(frame.as_bytes()).unwrap();
    assert_eq!(view(&mut client, URI).0, "fn main() {}\n");
    // Two lengths: refused, with the request's id.
    let b = body(902);
    let frame = format!(
        "Content-Length: {0}\r\nContent-Length: {0}\r\n\r\n{b}",
        b.len()
    );
    client.send_raw(frame.as_bytes()).unwrap();
    assert_eq!(view(&mut client, URI).0, "fn main() {}\n");
    let errors: Vec<_> = client
        .orphan_errors
        .iter()
        .map(|e| (e["id"].clone(), e["error"]["code"].clone()))
        .collect();
    assert!(errors.contains(&(json!(null), json!(-32700))), "{errors:?}");
    assert!(errors.contains(&(json!(901), json!(-32700))), "{errors:?}");
    assert!(errors.contains(&(json!(902), json!(-32700))), "{errors:?}");
    assert!(client.shutdown().unwrap().success());
}

#[test]
fn a_panicking_handler_does_not_take_the_server_down() {
    let mut client = start(&[("AGENTLS_DEBUG_PANIC", "1")]);
    client.initialize(json!({}), json!({})).unwrap();
    open(&mut client, URI, 1, "still here\n");
    let err = client
        .request("agentls/debugPanic", json!(null))
        .unwrap()
        .unwrap_err();
    assert_eq!(err["code"], -32603, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("panicked"),
        "{err}"
    );
    assert_eq!(view(&mut client, URI).0, "still here\n");
    // The panic is in the log, with the method it hit (the pipe drains on its own
    // thread, so give it a moment).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !client.stderr_tail().contains("handler panicked") {
        assert!(
            std::time::Instant::now() < deadline,
            "no panic in the log:\n{}",
            client.stderr_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(client.stderr_tail().contains("agentls/debugPanic"));
    assert!(client.shutdown().unwrap().success());
}

#[test]
fn the_debug_panic_method_does_not_exist_by_default() {
    let (mut client, _) = start_initialized(None);
    let err = client
        .request("agentls/debugPanic", json!(null))
        .unwrap()
        .unwrap_err();
    assert_eq!(err["code"], -32601, "{err}");
}

#[test]
fn closing_stdin_ends_the_server() {
    let (client, _) = start_initialized(None);
    // No shutdown: the editor crashed. The server must still exit by itself.
    let status = client.wait_exit().unwrap();
    assert!(status.code().is_some(), "{status:?}");
}

#[test]
fn info_lines_go_to_the_client_log_and_stderr_keeps_plain_warnings() {
    let mut client = start(&[("AGENTLS_LOG", "info")]);
    // No documentChanges: the server warns about it (a WARN, so stderr).
    client.initialize(json!({}), json!({})).unwrap();
    let logged = client.wait_notification("window/logMessage").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut seen = vec![logged];
    while !seen.iter().any(|n| {
        n["params"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("initialized")
    }) {
        assert!(std::time::Instant::now() < deadline, "{seen:?}");
        if let Ok(n) = client.wait_notification("window/logMessage") {
            seen.push(n);
        }
    }
    let info = seen
        .iter()
        .find(|n| {
            n["params"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("initialized")
        })
        .unwrap();
    assert_eq!(
        info["params"]["type"], 3,
        "an INFO line is MessageType.Info: {info}"
    );
    // The warning reached stderr, in plain text; no INFO line did.
    while !client.stderr_tail().contains("cannot refuse a stale edit") {
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            client.stderr_tail()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stderr = client.stderr_tail();
    assert!(
        !stderr.contains('\u{1b}'),
        "ANSI codes on a pipe: {stderr:?}"
    );
    assert!(!stderr.contains(" INFO "), "{stderr}");
    assert!(client.shutdown().unwrap().success());
}
