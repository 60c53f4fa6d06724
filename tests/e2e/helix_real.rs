//! Real Helix under tmux: `hx` (25.07, built from source: see DEVELOPERS.md) opens a
//! stub with agentls as its language server, `space a` lists the agent's actions, the
//! implement action runs, and the fixture model's edit appears on Helix's screen.
//!
//! Helix is not packaged for apt, pip or npm, so CI does not have it and this test
//! prints SKIPPED there; CI covers Helix through `agent_lsp.rs`, whose client sends
//! Helix's exact capabilities. Runs where `hx` is on PATH (or `AGENTLS_HX` names it)
//! and tmux is installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentls_testkit::model_server::{ModelServer, Turn};
use serde_json::json;

use crate::support::{agent_workspace, bin};

const STUB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    todo!()\n}\n";

fn hx() -> Option<PathBuf> {
    let named = std::env::var_os("AGENTLS_HX").map(PathBuf::from);
    let candidate = named.unwrap_or_else(|| PathBuf::from("hx"));
    let works = |p: &Path| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let tmux = Command::new("tmux").arg("-V").output().is_ok();
    (tmux && works(&candidate)).then_some(candidate)
}

/// A tmux server of this test's own, so nothing else's sessions are touched.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "hx"])
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.run(&["send-keys", "-t", "hx", k]);
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    fn wait_for(&self, what: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let screen = self.screen();
            if screen.contains(what) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{what:?} never appeared on Helix's screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn real_helix_runs_the_implement_action_and_shows_the_edit() {
    let Some(hx) = hx() else {
        eprintln!("SKIPPED: no hx (Helix 25.07 built from source, see DEVELOPERS.md) or no tmux");
        return;
    };
    let model = ModelServer::start().await.unwrap();
    model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "    todo!()", "new_string": "    a + b"}),
    ));
    model.push_turn(Turn::text("Implemented add."));
    let (dir, root, config) = agent_workspace(&model.url(), STUB);
    // Helix's workspace root is the nearest directory holding .git.
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let helix_config = dir.path().join("hxconfig/helix");
    std::fs::create_dir_all(&helix_config).unwrap();
    std::fs::write(
        helix_config.join("languages.toml"),
        format!(
            "[language-server.agentls]\ncommand = \"{}\"\n\n[[language]]\nname = \"rust\"\nlanguage-servers = [\"agentls\"]\n",
            bin().display()
        ),
    )
    .unwrap();
    let tmux = Tmux {
        socket: format!("agentls-hx-{}", std::process::id()),
    };
    let command = format!(
        "env XDG_CONFIG_HOME={} XDG_CACHE_HOME={} XDG_DATA_HOME={} AGENTLS_CONFIG={} {} src/lib.rs",
        dir.path().join("hxconfig").display(),
        dir.path().join("cache").display(),
        dir.path().join("data").display(),
        config.display(),
        hx.display()
    );
    let root_s = root.display().to_string();
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "hx",
        "-x",
        "120",
        "-y",
        "40",
        "-c",
        &root_s,
        &command,
    ]);
    tmux.wait_for("pub fn add", Duration::from_secs(20));
    // Onto the stub's body, then the code action menu; the index may lag the first
    // time, so the menu is asked again until the action is there.
    tmux.keys(&["j"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let menu = loop {
        tmux.keys(&["Space", "a"]);
        std::thread::sleep(Duration::from_millis(800));
        let screen = tmux.screen();
        if screen.contains("Agent: implement `add`") {
            break screen;
        }
        tmux.keys(&["Escape"]);
        assert!(
            Instant::now() < deadline,
            "no agent action in Helix's menu:\n{screen}"
        );
    };
    // Helix's menu starts on its first row: one Down per row above the action.
    let rows: Vec<&str> = menu.lines().filter(|l| l.contains("Agent: ")).collect();
    let at = rows
        .iter()
        .position(|l| l.contains("Agent: implement `add`"))
        .unwrap();
    for _ in 0..at {
        tmux.keys(&["Down"]);
    }
    let started = Instant::now();
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("a + b", Duration::from_secs(30));
    eprintln!(
        "FIGURE helix_action_to_edit_on_screen {} ms\n{screen}",
        started.elapsed().as_millis()
    );
    assert!(!screen.contains("todo!()"), "{screen}");
    // The outcome reaches Helix's status line.
    tmux.wait_for("Implemented add.", Duration::from_secs(10));
    tmux.keys(&[":q!", "Enter"]);
}
