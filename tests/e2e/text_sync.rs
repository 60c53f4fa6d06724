//! Text sync over the wire: every encoding, emoji, ordering under load.

use agentls_testkit::lsp::changes;
use serde_json::json;

use crate::support::{change, open, start_initialized, view};

const URI: &str = "file:///tmp/agentls-e2e/main.rs";

/// Edits a line holding an emoji, a CJK character and a combining mark, with columns
/// computed in each negotiated encoding.
#[test]
fn each_encoding_edits_after_an_emoji() {
    // "a😀b日e\u{301}c": where 'b', '日' and 'c' sit, per encoding.
    /// What the client offers, what must be chosen, and the columns of 'b', '日', 'c'.
    type Case = (Option<&'static [&'static str]>, &'static str, [u32; 3]);
    let cases: [Case; 5] = [
        (Some(&["utf-8"]), "utf-8", [5, 6, 12]),
        (Some(&["utf-16"]), "utf-16", [3, 4, 7]),
        (Some(&["utf-32", "utf-16"]), "utf-32", [2, 3, 6]),
        (Some(&["latin-1", "utf-32"]), "utf-32", [2, 3, 6]),
        (None, "utf-16", [3, 4, 7]),
    ];
    for (offered, expected, [b, cjk, c]) in cases {
        let (mut client, init) = start_initialized(offered);
        assert_eq!(
            init["capabilities"]["positionEncoding"], expected,
            "{offered:?}"
        );
        assert_eq!(init["capabilities"]["textDocumentSync"]["change"], 2);
        open(&mut client, URI, 1, "a😀b日e\u{301}c\nline two\n");
        // Replace 'b', insert before 'c', then delete '日': three changes in one batch,
        // each against the text the previous one produced.
        change(
            &mut client,
            URI,
            2,
            changes(&[
                (0, b, 0, b + 1, "B"),
                (0, c, 0, c, "🎉"),
                (0, cjk, 0, c, ""),
            ]),
        );
        let (text, version, in_sync) = view(&mut client, URI);
        assert_eq!(text, "a😀B🎉c\nline two\n", "encoding {expected}");
        assert_eq!((version, in_sync), (2, true));
        assert!(client.shutdown().unwrap().success());
    }
}

/// Hundreds of changes sent without waiting must apply in arrival order even though
/// tower-lsp polls handlers concurrently.
#[test]
fn rapid_changes_apply_in_order() {
    let (mut client, _) = start_initialized(Some(&["utf-16"]));
    open(&mut client, URI, 0, "");
    let mut expected = String::new();
    for i in 0..500u32 {
        let ch = char::from(b'a' + (i % 26) as u8);
        // Alternate appending and inserting at the start, so any reordering shows.
        let col = if i % 2 == 0 { expected.len() as u32 } else { 0 };
        if i % 2 == 0 {
            expected.push(ch);
        } else {
            expected.insert(0, ch);
        }
        change(
            &mut client,
            URI,
            i as i32 + 1,
            changes(&[(0, col, 0, col, &ch.to_string())]),
        );
    }
    let (text, version, _) = view(&mut client, URI);
    assert_eq!(text, expected);
    assert_eq!(version, 500);
}

#[test]
fn full_sync_replaces_and_crlf_is_kept() {
    let (mut client, _) = start_initialized(None);
    open(&mut client, URI, 1, "one\r\ntwo\r\n");
    change(&mut client, URI, 2, changes(&[(1, 0, 1, 3, "2")]));
    assert_eq!(view(&mut client, URI).0, "one\r\n2\r\n");
    change(&mut client, URI, 3, json!([{ "text": "fresh\n" }]));
    assert_eq!(view(&mut client, URI).0, "fresh\n");
    client
        .notify(
            "textDocument/didClose",
            json!({ "textDocument": { "uri": URI } }),
        )
        .unwrap();
    let err = client
        .request(
            "agentls/viewFileText",
            json!({ "textDocument": { "uri": URI } }),
        )
        .unwrap()
        .unwrap_err();
    assert_eq!(err["code"], -32602);
    assert!(
        err["message"].as_str().unwrap().contains("not open"),
        "{err}"
    );
}
