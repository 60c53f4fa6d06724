//! The agent in the editor, end to end: the built server over stdio, the fixture model
//! over HTTP, an editor emulation that refuses stale versions and types during runs.
//! Standard LSP only (code actions, executeCommand, `$/progress`, applyEdit,
//! showMessageRequest) for Helix- and Neovim-like clients; the `agent/*` extension for
//! richer ones.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentls_testkit::editor::Editor;
use agentls_testkit::model_server::{ModelServer, Turn};
use agentls_text::PositionEncoding;
use serde_json::{Value, json};

use crate::support::{agent_workspace, bin};

const STUB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    todo!()\n}\n";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    editor: Editor,
    uri: String,
    model: ModelServer,
}

fn url(path: &std::path::Path) -> String {
    format!("file://{}", path.display())
}

/// The `initialize` capabilities Helix 25.07 sends (helix-lsp/src/client.rs): versioned
/// edits with resource operations and `failureHandling: abort`, no change annotations,
/// progress, no `showDocument`, no experimental methods.
fn helix_caps() -> Value {
    json!({
        "workspace": {
            "configuration": true,
            "didChangeConfiguration": { "dynamicRegistration": false },
            "workspaceFolders": true,
            "applyEdit": true,
            "symbol": { "dynamicRegistration": false },
            "executeCommand": { "dynamicRegistration": false },
            "inlayHint": { "refreshSupport": false },
            "workspaceEdit": {
                "documentChanges": true,
                "resourceOperations": ["create", "rename", "delete"],
                "failureHandling": "abort",
                "normalizesLineEndings": false
            },
            "didChangeWatchedFiles": { "dynamicRegistration": true, "relativePatternSupport": false },
            "fileOperations": { "willRename": true, "didRename": true }
        },
        "textDocument": {
            "completion": { "completionItem": {
                "snippetSupport": true,
                "resolveSupport": { "properties": ["documentation", "detail", "additionalTextEdits"] },
                "insertReplaceSupport": true,
                "deprecatedSupport": true,
                "tagSupport": { "valueSet": [1] }
            }, "completionItemKind": {} },
            "hover": { "contentFormat": ["markdown"] },
            "signatureHelp": { "signatureInformation": {
                "documentationFormat": ["markdown"],
                "parameterInformation": { "labelOffsetSupport": true },
                "activeParameterSupport": true
            } },
            "rename": { "dynamicRegistration": false, "prepareSupport": true, "honorsChangeAnnotations": false },
            "formatting": { "dynamicRegistration": false },
            "codeAction": {
                "codeActionLiteralSupport": { "codeActionKind": { "valueSet": [
                    "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                    "refactor.rewrite", "source", "source.organizeImports"
                ] } },
                "isPreferredSupport": true,
                "disabledSupport": true,
                "dataSupport": true,
                "resolveSupport": { "properties": ["edit", "command"] }
            },
            "publishDiagnostics": { "versionSupport": true, "tagSupport": { "valueSet": [1, 2] } },
            "inlayHint": { "dynamicRegistration": false }
        },
        "window": { "workDoneProgress": true },
        "general": { "positionEncodings": ["utf-8", "utf-32", "utf-16"] }
    })
}

/// A server on a workspace holding `src/lib.rs` = `text`, open in the editor, with the
/// fixture model configured, and `settings` as initializationOptions.
async fn setup(caps: Value, settings: Value, text: &str) -> Fixture {
    setup_as(caps, settings, text, Value::Null).await
}

/// [`setup`] with the client's `clientInfo`.
async fn setup_as(caps: Value, settings: Value, text: &str, client_info: Value) -> Fixture {
    setup_configured(caps, settings, text, client_info, "").await
}

/// [`setup_as`] with `extra` appended to the config file (more models, a `[stats]`
/// table).
async fn setup_configured(
    caps: Value,
    settings: Value,
    text: &str,
    client_info: Value,
    extra: &str,
) -> Fixture {
    let model = ModelServer::start().await.unwrap();
    let (dir, root, config) = agent_workspace(&model.url(), text);
    if !extra.is_empty() {
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(extra);
        std::fs::write(&config, text).unwrap();
    }
    let mut editor = start_editor(dir.path(), &root, caps, settings, client_info);
    let uri = url(&root.join("src/lib.rs"));
    editor.open(&uri, text).unwrap();
    Fixture {
        _dir: dir,
        root,
        editor,
        uri,
        model,
    }
}

/// A server on `root`, with the config, data and cache directories of `dir` (as
/// [`agent_workspace`] lays them out), initialized with `caps` and `settings`.
fn start_editor(
    dir: &std::path::Path,
    root: &std::path::Path,
    caps: Value,
    settings: Value,
    client_info: Value,
) -> Editor {
    let client = agentls_testkit::lsp::LspClient::start(
        bin(),
        &[],
        &[
            ("AGENTLS_LOG", "debug"),
            ("AGENTLS_CONFIG", dir.join("config.toml").to_str().unwrap()),
            ("AGENTLS_EMBEDDER", "none"),
            ("XDG_DATA_HOME", dir.join("data").to_str().unwrap()),
            ("XDG_CACHE_HOME", dir.join("cache").to_str().unwrap()),
            // Keep Rate looks 3 s after an edit lands (30 s, 5 min, 1 h otherwise).
            ("AGENTLS_KEEP_RATE_SECS", "3"),
        ],
    )
    .unwrap();
    let mut editor = Editor::new(client, PositionEncoding::Utf8);
    let init = editor
        .client
        .initialize(
            caps,
            json!({
                "workspaceFolders": [{ "uri": url(root), "name": "ws" }],
                "initializationOptions": settings,
                "clientInfo": client_info,
            }),
        )
        .unwrap();
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    editor
}

impl Fixture {
    /// The code actions at `line`, retried until `wanted` is among them (the index
    /// catches up with the buffer in the background).
    fn action(&mut self, line: u32, diagnostics: Value, wanted: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let actions = self
                .editor
                .client
                .request_ok(
                    "textDocument/codeAction",
                    json!({
                        "textDocument": { "uri": self.uri },
                        "range": { "start": { "line": line, "character": 4 }, "end": { "line": line, "character": 4 } },
                        "context": { "diagnostics": diagnostics }
                    }),
                )
                .unwrap();
            if let Some(a) = actions
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["title"].as_str().unwrap().starts_with(wanted))
            {
                return a.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no action {wanted:?} among {actions:#}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn execute(&mut self, command: &Value) -> (Value, Duration) {
        let t0 = Instant::now();
        let reply = self
            .editor
            .client
            .request_ok(
                "workspace/executeCommand",
                json!({ "command": command["command"], "arguments": command["arguments"] }),
            )
            .unwrap();
        (reply, t0.elapsed())
    }

    /// `$/progress` notifications for `token` up to and including `end`.
    fn progress_until_end(&mut self, token: &str) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let n = self.editor.client.wait_notification("$/progress").unwrap();
            if n["params"]["token"] != token {
                continue;
            }
            let kind = n["params"]["value"]["kind"].as_str().unwrap().to_owned();
            seen.push(n["params"]["value"].clone());
            if kind == "end" {
                return seen;
            }
        }
    }

    fn text(&self) -> String {
        self.editor.text(&self.uri).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn helix_code_action_on_a_stub_lands_the_implementation_while_the_user_types() {
    let mut f = setup(helix_caps(), json!({}), STUB).await;
    // The model is slow to start: the command must answer before it says anything.
    f.model.push_turn(
        Turn::default()
            .tool_call(
                "c1",
                "str_replace",
                json!({"path": "src/lib.rs", "old_string": "    todo!()", "new_string": "    a + b"}),
            )
            .frame_delay(Duration::from_millis(300)),
    );
    f.model.push_turn(Turn::text("Implemented `add`."));
    let action = f.action(1, json!([]), "Agent: implement `add`");
    assert_eq!(action["command"]["command"], "agentls.implement");
    let args = &action["command"]["arguments"][0];
    assert_eq!(args["version"], 1);
    assert_eq!(args["range"]["start"]["line"], 0);

    // The user adds a line at the top while the agent's edit is on its way.
    f.editor
        .buffers
        .lock()
        .unwrap()
        .type_before_next_apply
        .push((f.uri.clone(), 0, 0, 0, 0, "// mine\n".to_owned()));
    let (reply, took) = f.execute(&action["command"]);
    eprintln!("executeCommand answered in {took:?}");
    assert!(
        f.model.requests().is_empty() || took < Duration::from_millis(300),
        "the reply waited for the model"
    );
    let token = reply["progressToken"].as_str().unwrap().to_owned();
    assert!(reply["session"].as_str().is_some());

    let progress = f.progress_until_end(&token);
    assert_eq!(progress[0]["kind"], "begin");
    assert_eq!(progress[0]["cancellable"], true);
    assert!(progress.iter().any(|p| {
        p["message"]
            .as_str()
            .is_some_and(|m| m.contains("✓ str_replace"))
    }));
    let end = progress.last().unwrap();
    assert!(
        end["message"].as_str().unwrap().contains("Implemented"),
        "{end}"
    );

    // The server asked for the progress token first; the edit was retried once
    // (the editor refused the stale version) and rebased over the user's line.
    let requests: Vec<&str> = f
        .editor
        .client
        .server_requests
        .iter()
        .filter(|(r, _)| {
            r["method"] != "window/workDoneProgress/create" || r["params"]["token"] == token
        })
        // Helix registers for file watching: the server asks that at startup.
        .filter(|(r, _)| r["method"] != "client/registerCapability")
        .map(|(r, _)| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        requests[0], "window/workDoneProgress/create",
        "{requests:?}"
    );
    assert_eq!(
        requests
            .iter()
            .filter(|m| **m == "workspace/applyEdit")
            .count(),
        2
    );
    assert_eq!(
        f.text(),
        "// mine\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    );
    // The model saw the stub and where it is.
    let first = f.model.requests()[0].body.to_string();
    assert!(first.contains("src/lib.rs lines 1-3"), "{first}");
    assert!(first.contains("todo!()"));
    // Helix has no panel: the transcript goes to the log, the outcome to a message,
    // and no custom notification is ever sent.
    let methods: Vec<String> = f
        .editor
        .client
        .notifications
        .iter()
        .map(|n| n["method"].as_str().unwrap().to_owned())
        .collect();
    assert!(methods.iter().all(|m| m != "agent/event"), "{methods:?}");
    let shown = f
        .editor
        .client
        .wait_notification("window/showMessage")
        .unwrap();
    assert!(
        shown["params"]["message"]
            .as_str()
            .unwrap()
            .contains("Implemented")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn neovim_cancels_through_progress_and_the_session_stops() {
    let mut caps = helix_caps();
    caps["general"]["positionEncodings"] = json!(["utf-8", "utf-16"]);
    let mut f = setup(caps, json!({}), STUB).await;
    // A model that streams slowly: the cancel reaches it mid-stream.
    f.model.push_turn(
        Turn::text("Thinking about it for a long while ...")
            .chunked(2)
            .frame_delay(Duration::from_millis(200)),
    );
    let action = f.action(1, json!([]), "Agent: explain");
    // Neovim passes its own token with the request.
    let t0 = Instant::now();
    let reply = f
        .editor
        .client
        .request_ok(
            "workspace/executeCommand",
            json!({ "command": action["command"]["command"], "arguments": action["command"]["arguments"], "workDoneToken": "nvim-1" }),
        )
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert_eq!(reply["progressToken"], "nvim-1");
    let begin = f.editor.client.wait_notification("$/progress").unwrap();
    assert_eq!(begin["params"]["value"]["kind"], "begin");
    // Cancel once the model is streaming.
    let deadline = Instant::now() + Duration::from_secs(10);
    while f.model.requests().is_empty() {
        assert!(Instant::now() < deadline, "the model was never called");
        std::thread::sleep(Duration::from_millis(20));
    }
    f.editor
        .client
        .notify(
            "window/workDoneProgress/cancel",
            json!({ "token": "nvim-1" }),
        )
        .unwrap();
    let progress = f.progress_until_end("nvim-1");
    assert_eq!(progress.last().unwrap()["message"], "cancelled");
    // The client's token is used as is: no token created for this session.
    let session = reply["session"].as_str().unwrap();
    assert!(
        f.editor
            .client
            .server_requests
            .iter()
            .filter(|(r, _)| r["method"] == "window/workDoneProgress/create")
            .all(|(r, _)| !r["params"]["token"]
                .as_str()
                .unwrap_or("")
                .contains(session))
    );
    // Explaining is read-only: the model was offered no editing tool.
    let body = &f.model.requests()[0].body;
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read_file") && !tools.contains(&"str_replace"),
        "{tools:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fix_this_carries_the_diagnostic_and_review_mode_rejects_without_losing_typing() {
    let text =
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\npub fn one() -> i32 {\n    2\n}\n";
    let mut f = setup(
        helix_caps(),
        json!({ "agent": { "review": "review" } }),
        text,
    )
    .await;
    f.model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "    a - b", "new_string": "    a + b"}),
    ));
    f.model.push_turn(Turn::default().tool_call(
        "c2",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "    2\n", "new_string": "    1\n"}),
    ));
    f.model.push_turn(Turn::text("Fixed both."));
    let diagnostic = json!({
        "range": { "start": { "line": 1, "character": 4 }, "end": { "line": 1, "character": 9 } },
        "severity": 1, "source": "test", "message": "add subtracts"
    });
    let action = f.action(1, json!([diagnostic]), "Agent: fix this: add subtracts");
    assert_eq!(action["kind"], "quickfix");
    assert_eq!(action["diagnostics"][0]["message"], "add subtracts");
    let (reply, _) = f.execute(&action["command"]);
    let token = reply["progressToken"].as_str().unwrap().to_owned();
    f.progress_until_end(&token);
    assert_eq!(
        f.text(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn one() -> i32 {\n    1\n}\n"
    );
    assert!(
        f.model.requests()[0]
            .body
            .to_string()
            .contains("add subtracts (test)")
    );

    // Both changes wait for review. The user types between them, then rejects the
    // second and accepts the first, each through a code action.
    f.editor
        .type_text(&f.uri, (3, 0), (3, 0), "// typed later\n")
        .unwrap();
    let reject = f.action(6, json!([]), "Agent: reject change");
    let (reply, _) = f.execute(&reject["command"]);
    assert_eq!(reply["rejected"].as_array().unwrap().len(), 1, "{reply}");
    assert_eq!(
        f.text(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n// typed later\n\npub fn one() -> i32 {\n    2\n}\n"
    );
    let accept = f.action(1, json!([]), "Agent: accept change");
    let (reply, _) = f.execute(&accept["command"]);
    assert_eq!(reply["accepted"].as_array().unwrap().len(), 1, "{reply}");
    let actions = f
        .editor
        .client
        .request_ok(
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": f.uri },
                "range": { "start": { "line": 1, "character": 0 }, "end": { "line": 7, "character": 0 } },
                "context": { "diagnostics": [] }
            }),
        )
        .unwrap();
    assert!(
        !actions.to_string().contains("accept change"),
        "nothing is pending any more: {actions}"
    );
    // Keep Rate: of the two lines the agent added, the rejected one is gone when the
    // server looks 3 s after each edit landed.
    let keep = stats_until(f._dir.path(), |v| {
        v["keep_rate"][0]["lines"].as_u64().unwrap_or(0) >= 2
    });
    assert_eq!(keep["keep_rate"][0]["after_secs"], 3, "{keep}");
    assert_eq!(keep["keep_rate"][0]["lines"], 2, "{keep}");
    assert_eq!(keep["keep_rate"][0]["kept"], 1, "{keep}");
}

/// `agentls stats --json` on a fixture's database, polled until `done` holds (runs and
/// looks are written just after they happen), at most 10 s.
fn stats_until(dir: &std::path::Path, done: impl Fn(&Value) -> bool) -> Value {
    let db = dir.join("data/agentls/stats.sqlite3");
    let mut stats = Value::Null;
    for _ in 0..100 {
        let out = std::process::Command::new(bin())
            .args(["stats", "--json", "--stats-db"])
            .arg(&db)
            .output()
            .unwrap();
        stats = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if done(&stats) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    stats
}

#[tokio::test(flavor = "multi_thread")]
async fn annotated_review_edits_need_confirmation_and_a_decline_reaches_the_model() {
    let mut caps = helix_caps();
    caps["workspace"]["workspaceEdit"]["changeAnnotationSupport"] =
        json!({ "groupsOnLabel": true });
    let mut f = setup(caps, json!({ "agent": { "review": "review" } }), STUB).await;
    f.editor.buffers.lock().unwrap().decline_confirmations = true;
    f.model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "    todo!()", "new_string": "    a + b"}),
    ));
    f.model
        .push_turn(Turn::text("The user declined; leaving it."));
    let action = f.action(1, json!([]), "Agent: implement `add`");
    let (reply, _) = f.execute(&action["command"]);
    let token = reply["progressToken"].as_str().unwrap().to_owned();
    f.progress_until_end(&token);
    assert_eq!(f.text(), STUB, "declined: nothing changed");
    let edits = f.editor.buffers.lock().unwrap().edits.clone();
    assert_eq!(edits.len(), 1, "a declined edit is not retried");
    let annotation = &edits[0]["changeAnnotations"]["agentls"];
    assert_eq!(annotation["needsConfirmation"], true);
    assert_eq!(
        edits[0]["documentChanges"][0]["edits"][0]["annotationId"],
        "agentls"
    );
    let second = f.model.requests()[1].body.to_string();
    assert!(
        second.contains("UserAborted") || second.contains("rejected"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn commands_the_policy_asks_about_go_to_the_user() {
    let mut f = setup(helix_caps(), json!({}), STUB).await;
    for (answer, call) in [(json!({ "title": "Allow" }), "c1"), (Value::Null, "c2")] {
        f.editor
            .buffers
            .lock()
            .unwrap()
            .message_answers
            .push_back(answer);
        f.model.push_turn(Turn::default().tool_call(
            call,
            "run_command",
            json!({"command": "git push origin main"}),
        ));
        f.model.push_turn(Turn::text("ok"));
        let (reply, _) = f.execute(&json!({
            "command": "agentls.ask",
            "arguments": [{ "instruction": "check the tool version" }]
        }));
        let token = reply["progressToken"].as_str().unwrap().to_owned();
        f.progress_until_end(&token);
    }
    let asked: Vec<&Value> = f
        .editor
        .client
        .server_requests
        .iter()
        .filter(|(r, _)| r["method"] == "window/showMessageRequest")
        .map(|(r, _)| r)
        .collect();
    assert_eq!(asked.len(), 2);
    assert!(
        asked[0]["params"]["message"]
            .as_str()
            .unwrap()
            .contains("git push origin main")
    );
    let requests = f.model.requests();
    // Allowed: the command ran (and failed: the tool does not exist). Only the tool
    // result counts: tool descriptions may say "refused" too.
    let last_message = |i: usize| {
        let m = &requests[i].body["messages"];
        m[m.as_array().map_or(0, |a| a.len().saturating_sub(1))].to_string()
    };
    let allowed = last_message(1);
    assert!(!allowed.contains("refused"), "{allowed}");
    // Dismissed: refused, and the model is told so.
    let denied = last_message(3);
    assert!(
        denied.contains("UserAborted")
            || denied.contains("refused")
            || denied.contains("not allowed"),
        "{denied}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_extension_streams_a_whole_session() {
    let mut caps = helix_caps();
    caps["experimental"] = json!({ "agent": { "version": 1 } });
    let mut f = setup(caps, json!({}), STUB).await;
    f.model.push_turn(
        Turn::default()
            .tool_call(
                "c1",
                "str_replace",
                json!({"path": "src/lib.rs", "old_string": "    todo!()", "new_string": "    a + b"}),
            )
            .usage(120, 0, 20),
    );
    f.model
        .push_turn(Turn::text("Done: add adds.").chunked(4).usage(160, 100, 8));

    let models = f
        .editor
        .client
        .request_ok("agent/listModels", Value::Null)
        .unwrap();
    assert_eq!(models["models"][0]["name"], "fixture");
    assert_eq!(models["default"], "fixture");
    let session = f
        .editor
        .client
        .request_ok("agent/newSession", json!({}))
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    assert_eq!(session["status"], "idle");
    let bad = f
        .editor
        .client
        .request("agent/setModel", json!({ "session": id, "model": "nope" }))
        .unwrap();
    assert!(bad.is_err());
    let running = f
        .editor
        .client
        .request_ok(
            "agent/prompt",
            json!({ "session": id, "text": "Implement add in src/lib.rs" }),
        )
        .unwrap();
    assert_eq!(running["status"], "running");
    let busy = f
        .editor
        .client
        .request("agent/prompt", json!({ "session": id, "text": "again" }))
        .unwrap();
    assert!(busy.is_err(), "one run at a time");

    let events = session_events(&mut f, &id);
    assert_the_stream(&events);
    assert!(f.text().contains("a + b"));
    assert_transcript_list_and_cancel(&mut f, &id);
    assert_compaction(&mut f, &id);
    // The panel shows the outcome: a panel prompt raises no notification besides it
    // (a stale one would crowd out the next run's progress in VS Code's three toasts).
    let shown: Vec<&Value> = f
        .editor
        .client
        .notifications
        .iter()
        .filter(|n| n["method"] == "window/showMessage")
        .collect();
    assert!(shown.is_empty(), "{shown:?}");
    // The run was recorded for `agentls stats` (written just after it ends), and the
    // line the agent added was still there when the server looked 3 s later.
    let stats = stats_until(f._dir.path(), |v| v["keep_rate"][0]["lines"] == 1);
    assert_eq!(stats["runs"], 1, "{stats}");
    assert_eq!(stats["keep_rate"][0]["kept"], 1, "{stats}");
    assert_eq!(stats["models"][0]["input_tokens"], 280);
    assert_eq!(stats["models"][0]["edits_landed"], 1);
    assert_eq!(
        stats["keep_rate_by_tool"][0]["tool"], "str_replace",
        "{stats}"
    );
    // The user rewrites the agent's line, unsaved, and closes the editor: the look at
    // session end, taken before `shutdown` is answered, reads the buffer and finds the
    // line gone.
    let uri = f.uri.clone();
    f.editor.type_text(&uri, (1, 4), (1, 9), "b + a").unwrap();
    f.editor.client.request_ok("shutdown", Value::Null).unwrap();
    let stats = stats_until(f._dir.path(), |v| v["keep_rate"][1]["at_end"] == true);
    let end = &stats["keep_rate"][1];
    assert_eq!(end["after_secs"], Value::Null, "{stats}");
    assert_eq!(
        (&end["lines"], &end["kept"]),
        (&json!(1), &json!(0)),
        "{stats}"
    );
    let by_tool = &stats["keep_rate_by_tool"][1];
    assert_eq!(by_tool["tool"], "str_replace", "{stats}");
    assert_eq!(by_tool["at_end"], true, "{stats}");
}

/// The session's `agent/event` notifications up to `finished`, each checked to name it.
fn session_events(f: &mut Fixture, id: &str) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let n = f.editor.client.wait_notification("agent/event").unwrap();
        assert_eq!(n["params"]["session"], id);
        events.push(n["params"].clone());
        if n["params"]["event"]["type"] == "finished" {
            break;
        }
    }
    events
}

/// The stream: numbered without gaps, every kind of event present, the edit's diff,
/// the text deltas adding up to the answer, the totals at the end.
fn assert_the_stream(events: &[Value]) {
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "no gaps");
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event"]["type"].as_str().unwrap())
        .collect();
    for t in [
        "status",
        "step",
        "toolStarted",
        "toolFinished",
        "edit",
        "usage",
        "textDelta",
        "finished",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    let edit = events
        .iter()
        .find(|e| e["event"]["type"] == "edit")
        .unwrap();
    assert!(
        edit["event"]["diff"]
            .as_str()
            .unwrap()
            .contains("+    a + b")
    );
    let text: String = events
        .iter()
        .filter(|e| e["event"]["type"] == "textDelta")
        .map(|e| e["event"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Done: add adds.");
    let finished = &events.last().unwrap()["event"];
    assert_eq!(finished["status"], "done");
    assert_eq!(finished["tokens"], json!([280, 100, 28]));
}

/// The transcript's roles, the session listed as done with its title, and a cancel
/// with nothing running.
fn assert_transcript_list_and_cancel(f: &mut Fixture, id: &str) {
    let transcript = f
        .editor
        .client
        .request_ok("agent/getTranscript", json!({ "session": id }))
        .unwrap();
    let roles: Vec<&str> = transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(transcript["messages"][1]["parts"][0]["type"], "toolCall");
    let list = f
        .editor
        .client
        .request_ok("agent/listSessions", Value::Null)
        .unwrap();
    assert_eq!(list["sessions"][0]["status"], "done");
    assert_eq!(list["sessions"][0]["title"], "Implement add in src/lib.rs");
    let cancel = f
        .editor
        .client
        .request_ok("agent/cancel", json!({ "session": id }))
        .unwrap();
    assert_eq!(cancel["cancelled"], false, "nothing was running");
    assert!(f.root.join("src/lib.rs").exists());
}

/// `agent/compact` on the idle session: the turn before its last answer folded into
/// a summary (no model asked: none is configured to summarize); a second finds nothing
/// more; a session that does not exist is an error.
fn assert_compaction(f: &mut Fixture, id: &str) {
    let calls = f.model.requests().len();
    let compact = |f: &mut Fixture| {
        f.editor
            .client
            .request_ok("agent/compact", json!({ "session": id }))
            .unwrap()
    };
    let first = compact(f);
    assert!(first["summarized"].as_u64().unwrap() > 0, "{first}");
    let second = compact(f);
    assert_eq!(second["summarized"], 0, "{second}");
    assert_eq!(f.model.requests().len(), calls);
    let none = f
        .editor
        .client
        .request("agent/compact", json!({ "session": "nonesuch" }))
        .unwrap();
    assert!(none.is_err());
}

#[test]
fn without_a_model_the_command_fails_at_once_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = crate::support::start(&[]);
    client
        .initialize(
            helix_caps(),
            json!({ "workspaceFolders": [{ "uri": url(dir.path()), "name": "ws" }] }),
        )
        .unwrap();
    let err = client
        .request(
            "workspace/executeCommand",
            json!({ "command": "agentls.ask", "arguments": [{ "instruction": "hi" }] }),
        )
        .unwrap()
        .unwrap_err();
    assert_eq!(err["code"], -32803, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no model configured"),
        "{err}"
    );
    let bad = client
        .request(
            "workspace/executeCommand",
            json!({ "command": "agentls.ask", "arguments": [{ "instruction": "hi", "extra": 1 }] }),
        )
        .unwrap()
        .unwrap_err();
    assert_eq!(bad["code"], -32602, "{bad}");
}

#[tokio::test(flavor = "multi_thread")]
async fn diagnostics_the_editor_forwards_reach_the_agent() {
    let mut caps = helix_caps();
    caps["experimental"] = json!({ "agent": { "version": 1 } });
    let mut f = setup(caps, json!({}), STUB).await;
    // Another server's type error, as the VS Code and Neovim clients forward it.
    let params = json!({
        "uri": f.uri,
        "version": 1,
        "diagnostics": [{
            "range": { "start": { "line": 1, "character": 4 }, "end": { "line": 1, "character": 11 } },
            "severity": 1, "source": "rustc", "code": "E0308",
            "message": "mismatched types: expected `i32`, found `()`"
        }]
    });
    f.editor.client.notify("agent/diagnostics", params).unwrap();
    f.model.push_turn(Turn::default().tool_call(
        "d1",
        "diagnostics",
        json!({"path": "src/lib.rs"}),
    ));
    f.model.push_turn(Turn::text("There is a type error."));
    let (reply, _) = f.execute(&json!({
        "command": "agentls.ask",
        "arguments": [{ "instruction": "what is wrong?" }]
    }));
    let token = reply["progressToken"].as_str().unwrap().to_owned();
    f.progress_until_end(&token);
    let second = f.model.requests()[1].body.to_string();
    assert!(second.contains("mismatched types"), "{second}");
    // An empty list clears it.
    let clear = json!({ "uri": f.uri, "version": 2, "diagnostics": [] });
    f.editor.client.notify("agent/diagnostics", clear).unwrap();
    f.model.push_turn(Turn::default().tool_call(
        "d2",
        "diagnostics",
        json!({"path": "src/lib.rs"}),
    ));
    f.model.push_turn(Turn::text("Clean."));
    let (reply, _) = f.execute(&json!({
        "command": "agentls.ask",
        "arguments": [{ "instruction": "and now?" }]
    }));
    let token = reply["progressToken"].as_str().unwrap().to_owned();
    f.progress_until_end(&token);
    let requests = f.model.requests();
    let last = requests.last().unwrap();
    let m = &last.body["messages"];
    let tool = m[m.as_array().unwrap().len() - 1].to_string();
    assert!(!tool.contains("mismatched types"), "{tool}");
}

/// Code actions at `range` (`[start line, start col, end line, end col]`), their titles.
fn titles_at(f: &mut Fixture, range: [u32; 4]) -> Vec<String> {
    let actions = f
        .editor
        .client
        .request_ok(
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": f.uri },
                "range": { "start": { "line": range[0], "character": range[1] }, "end": { "line": range[2], "character": range[3] } },
                "context": { "diagnostics": [] }
            }),
        )
        .unwrap();
    actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap().to_owned())
        .collect()
}

/// Helix shows no ghost text: with `[completion] completion_items = true` (its
/// `config` in languages.toml, sent as initializationOptions) `textDocument/completion`
/// answers one item inserting the model's whole multi-line completion at the cursor.
#[tokio::test(flavor = "multi_thread")]
async fn helix_gets_the_completion_as_one_completion_item() {
    let settings = json!({ "completion": { "completion_items": true, "model": "fixture" } });
    // The cursor on the body's blank line: a block may follow.
    let text = "pub fn add(a: i32, b: i32) -> i32 {\n    \n}\n";
    let mut f = setup(helix_caps(), settings, text).await;
    f.model
        .push_turn(Turn::text("let s = a + b;\n    s\n}\n\nfn more() {}\n"));
    let answer = f
        .editor
        .client
        .request_ok(
            "textDocument/completion",
            json!({
                "textDocument": { "uri": f.uri },
                "position": { "line": 1, "character": 4 },
                "context": { "triggerKind": 1 }
            }),
        )
        .unwrap();
    assert_eq!(answer["isIncomplete"], true, "{answer:#}");
    let items = answer["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{answer:#}");
    let item = &items[0];
    let at = json!({ "line": 1, "character": 4 });
    assert_eq!(
        item["textEdit"],
        json!({ "range": { "start": at, "end": at }, "newText": "let s = a + b;\n    s" })
    );
    assert_eq!(item["label"], "let s = a + b; … (+1 lines)");
    assert_eq!(item["insertTextFormat"], 1);
    // The fixture's legacy completions endpoint was asked, with the buffer around
    // the cursor.
    let requests = f.model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/completions");
    assert_eq!(requests[0].body["suffix"], "\n}\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn helix_one_character_cursor_is_a_place_not_a_selection() {
    let mut f = setup(helix_caps(), json!({}), STUB).await;
    // Wait for the index (the stub's function) as `action` does.
    f.action(1, json!([]), "Agent: implement `add`");
    // Helix sends its cursor as the character under it: (1,4)-(1,5).
    let titles = titles_at(&mut f, [1, 4, 1, 5]);
    assert!(
        titles.iter().any(|t| t == "Agent: implement `add`"),
        "{titles:?}"
    );
    assert!(
        !titles.iter().any(|t| t == "Agent: implement this"),
        "{titles:?}"
    );
    assert!(
        titles.iter().any(|t| t == "Agent: explain `add`"),
        "{titles:?}"
    );
    // A real selection is still one.
    let titles = titles_at(&mut f, [1, 4, 1, 11]);
    assert!(
        titles.iter().any(|t| t == "Agent: implement this"),
        "{titles:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_offers_questions_and_cancel_is_offered_while_a_run_goes_on() {
    let mut f = setup(helix_caps(), json!({}), STUB).await;
    f.editor
        .buffers
        .lock()
        .unwrap()
        .message_answers
        .push_back(json!({ "title": "Are there bugs in this code?" }));
    // A slow answer, so the run is still going when the menu is asked again.
    f.model.push_turn(
        Turn::text("Looking closely at every line of it ...")
            .chunked(2)
            .frame_delay(Duration::from_millis(200)),
    );
    let ask = f.action(1, json!([]), "Agent: ask…");
    let (reply, _) = f.execute(&ask["command"]);
    let session = reply["session"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}: {:?}", f.editor.client.server_requests))
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    while f.model.requests().is_empty() {
        assert!(Instant::now() < deadline, "the model was never called");
        // A request keeps the client reading: the run waits for its progress token.
        titles_at(&mut f, [1, 4, 1, 4]);
        std::thread::sleep(Duration::from_millis(20));
    }
    let asked = f.model.requests()[0].body.to_string();
    assert!(asked.contains("Are there bugs in this code?"), "{asked}");
    // The question was put through window/showMessageRequest.
    let request = f
        .editor
        .client
        .server_requests
        .iter()
        .find(|(r, _)| r["method"] == "window/showMessageRequest")
        .map(|(r, _)| r.clone())
        .expect("no showMessageRequest");
    let offered: Vec<&str> = request["params"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert!(offered.len() >= 3, "{offered:?}");
    // While it runs, the menu offers to cancel it, and that stops it.
    let cancel = f.action(1, json!([]), "Agent: cancel");
    assert_eq!(cancel["command"]["arguments"][0]["session"], session);
    let (cancelled, _) = f.execute(&cancel["command"]);
    assert_eq!(cancelled["cancelled"][0], session);
    let token = reply["progressToken"].as_str().unwrap().to_owned();
    let progress = f.progress_until_end(&token);
    assert_eq!(progress.last().unwrap()["message"], "cancelled");
    // Dismissing the question starts nothing.
    let (none, _) = f.execute(&ask["command"]);
    assert_eq!(none["started"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_explanation_is_shown_whole_in_a_document() {
    // Helix answers window/showDocument without advertising it; it says who it is.
    let helix = json!({ "name": "helix", "version": "25.07.1" });
    let mut f = setup_as(helix_caps(), json!({}), STUB, helix).await;
    let answer = format!(
        "`add` is a stub. {}The end.",
        "It returns nothing yet. ".repeat(40)
    );
    f.model.push_turn(Turn::text(answer.clone()));
    let explain = f.action(1, json!([]), "Agent: explain");
    f.execute(&explain["command"]);
    let shown = f
        .editor
        .client
        .wait_notification("window/showMessage")
        .unwrap();
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(
        message.contains("the whole answer is open in a document"),
        "{message}"
    );
    assert!(
        message.chars().count() < answer.chars().count(),
        "{message}"
    );
    let docs = f.editor.buffers.lock().unwrap().shown_documents.clone();
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(docs[0]["takeFocus"], true);
    let path = docs[0]["uri"]
        .as_str()
        .unwrap()
        .strip_prefix("file://")
        .unwrap()
        .to_owned();
    let whole = std::fs::read_to_string(&path).unwrap();
    assert!(whole.contains(answer.trim()), "{whole}");
    assert!(path.contains("/cache/agentls/answers/"), "{path}");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_show_document_a_long_answer_stays_a_message() {
    let mut f = setup(helix_caps(), json!({}), STUB).await;
    f.model.push_turn(Turn::text("Long. ".repeat(120)));
    let explain = f.action(1, json!([]), "Agent: explain");
    f.execute(&explain["command"]);
    let shown = f
        .editor
        .client
        .wait_notification("window/showMessage")
        .unwrap();
    let message = shown["params"]["message"].as_str().unwrap();
    assert!(!message.contains("open in a document"), "{message}");
    assert!(f.editor.buffers.lock().unwrap().shown_documents.is_empty());
}

/// Editor sessions get the tools of the user's MCP servers too (here from the client's
/// settings, a user layer): the Python package's MCPServer over stdio, its allowed
/// tool called without asking.
#[tokio::test(flavor = "multi_thread")]
async fn editor_sessions_get_the_mcp_servers_tools() {
    if !crate::support::python_module("mcp", "mcp==2.3.0") {
        return;
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/notes_server.py");
    let settings = json!({ "mcp": { "servers": { "notes": {
        "command": "python3", "args": [script], "allow": ["lookup"]
    } } } });
    let mut f = setup(helix_caps(), settings, STUB).await;
    f.model
        .push_turn(Turn::default().tool_call("m1", "notes__lookup", json!({"key": "deploy"})));
    f.model.push_turn(Turn::text("Tuesdays."));
    let (reply, _) = f.execute(&json!({
        "command": "agentls.ask",
        "arguments": [{ "instruction": "when do we deploy?" }]
    }));
    let token = reply["progressToken"].as_str().unwrap().to_owned();
    f.progress_until_end(&token);
    let second = f.model.requests()[1].body.to_string();
    assert!(second.contains("Deploys go out on Tuesdays."), "{second}");
}

/// Waits for the `finished` event of `session`.
fn until_finished(editor: &mut Editor, session: &str) -> Value {
    loop {
        let n = editor.client.wait_notification("agent/event").unwrap();
        if n["params"]["session"] == session && n["params"]["event"]["type"] == "finished" {
            return n["params"]["event"].clone();
        }
    }
}

/// Sessions persist (issue 21): a restarted server lists the saved session with its
/// pending review change, shows its transcript, rejects the change (keeping what the
/// user typed since) and goes on from the saved conversation.
#[tokio::test(flavor = "multi_thread")]
async fn a_restarted_server_keeps_sessions_and_their_review_state() {
    let text = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n";
    let mut caps = helix_caps();
    caps["experimental"] = json!({ "agent": { "version": 1 } });
    let settings = json!({ "agent": { "review": "review" } });
    let mut f = setup(caps.clone(), settings.clone(), text).await;
    f.model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "    a - b", "new_string": "    a + b"}),
    ));
    f.model.push_turn(Turn::text("Fixed add."));
    let session = f
        .editor
        .client
        .request_ok("agent/newSession", json!({}))
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    f.editor
        .client
        .request_ok(
            "agent/prompt",
            json!({ "session": id, "text": "Fix add (first prompt)" }),
        )
        .unwrap();
    let finished = until_finished(&mut f.editor, &id);
    assert_eq!(finished["status"], "done", "{finished}");
    let fixed = f.text();
    assert!(fixed.contains("a + b"), "{fixed}");
    // The user saves and quits; the server goes with the editor.
    std::fs::write(f.root.join("src/lib.rs"), &fixed).unwrap();
    let Fixture {
        _dir: dir,
        root,
        editor,
        uri,
        model,
    } = f;
    editor.client.shutdown().unwrap();

    let mut editor = start_editor(dir.path(), &root, caps, settings, Value::Null);
    editor.open(&uri, &fixed).unwrap();
    let listed = editor
        .client
        .request_ok("agent/listSessions", Value::Null)
        .unwrap();
    let saved = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not listed: {listed}"))
        .clone();
    assert_eq!(saved["status"], "idle");
    assert_eq!(saved["pendingChanges"], 1, "{saved}");
    assert_eq!(saved["model"], "fixture");
    let transcript = editor
        .client
        .request_ok("agent/getTranscript", json!({ "session": id }))
        .unwrap()
        .to_string();
    assert!(
        transcript.contains("(first prompt)") && transcript.contains("Fixed add."),
        "{transcript}"
    );

    // The user typed above the change since; rejecting it restores `a - b` there and
    // keeps the typing.
    editor.type_text(&uri, (0, 0), (0, 0), "// mine\n").unwrap();
    let reply = editor
        .client
        .request_ok("agent/review", json!({ "session": id, "action": "reject" }))
        .unwrap();
    assert_eq!(reply["rejected"].as_array().unwrap().len(), 1, "{reply}");
    assert_eq!(
        editor.text(&uri).unwrap(),
        "// mine\npub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n"
    );

    // And the session goes on from its saved conversation.
    model.push_turn(Turn::text("Back to a - b, as you chose."));
    editor
        .client
        .request_ok(
            "agent/prompt",
            json!({ "session": id, "text": "What changed? (second prompt)" }),
        )
        .unwrap();
    let finished = until_finished(&mut editor, &id);
    assert_eq!(finished["status"], "done", "{finished}");
    let body = model.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("(first prompt)")
            && body.contains("Fixed add.")
            && body.contains("(second prompt)"),
        "{body}"
    );
    let listed = editor
        .client
        .request_ok("agent/listSessions", Value::Null)
        .unwrap();
    assert_eq!(
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["id"] == id.as_str())
            .count(),
        1,
        "listed once: {listed}"
    );
}

/// A tool failing far above its baseline is told to the user as it happens, with what
/// its failures said, once per server however many runs go on failing; the log and
/// `agentls stats` keep every one.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_failing_far_above_its_baseline_is_shown_once_per_server() {
    let mut f = setup(helix_caps(), json!({}), STUB).await;
    for run in 0..2 {
        // Seven str_replace calls whose old text is nowhere in the file, each a
        // different one (a repeated failing call is caught as a repeat instead).
        let mut turn = Turn::default();
        for i in 0..7 {
            turn = turn.tool_call(
                &format!("r{run}c{i}"),
                "str_replace",
                json!({"path": "src/lib.rs", "old_string": format!("missing_{run}_{i}()"), "new_string": "x"}),
            );
        }
        f.model.push_turn(turn);
        f.model.push_turn(Turn::text("Could not find it."));
        let action = f.action(1, json!([]), "Agent: implement `add`");
        let (reply, _) = f.execute(&action["command"]);
        let token = reply["progressToken"].as_str().unwrap().to_owned();
        f.progress_until_end(&token);
        if run == 0 {
            // Shown before the run's end; a fresh database's baseline is 50% (1 of 2,
            // smoothed), and 7 of 7 failing has a chance of 0.5^7 < 1%.
            let shown = crate::support::wait_message(
                &mut f.editor.client,
                "window/showMessage",
                "failing more than usual",
            );
            assert!(
                shown.contains("tool `str_replace` under model `fixture`: 7 of 7 calls failed"),
                "{shown}"
            );
            assert!(shown.contains("Lately: "), "{shown}");
            assert!(shown.contains("lib.rs"), "the failure's own words: {shown}");
            assert!(shown.contains("agentls stats"), "{shown}");
        }
    }
    // The second run failed as badly (14 of 14 in the day now), and said nothing more.
    let again: Vec<&Value> = f
        .editor
        .client
        .notifications
        .iter()
        .filter(|n| {
            n["method"] == "window/showMessage"
                && n["params"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("failing more than usual"))
        })
        .collect();
    assert!(again.is_empty(), "{again:?}");
    let stats = stats_until(f._dir.path(), |v| v["runs"] == 2);
    assert_eq!(stats["alerts"][0]["failures"], 14, "{stats}");
}

/// [`setup`] with the agent extension declared and `extra` appended to the config file
/// (more models, a `[stats]` table).
async fn setup_extension_with(extra: &str) -> Fixture {
    let mut caps = helix_caps();
    caps["experimental"] = json!({ "agent": { "version": 1 } });
    setup_configured(caps, json!({}), STUB, Value::Null, extra).await
}

const PANICS: &str =
    "that's wrong, it panics: thread 'main' panicked at src/lib.rs:2:5:\nnot yet implemented";

/// A panel session: "Implement add" answered by the agent, then the user's `second`
/// prompt in the same session, run to its end. The session id.
fn two_prompts(f: &mut Fixture, second: &str) -> String {
    let session = f
        .editor
        .client
        .request_ok("agent/newSession", json!({}))
        .unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    for text in ["Implement add in src/lib.rs", second] {
        f.editor
            .client
            .request_ok("agent/prompt", json!({ "session": id, "text": text }))
            .unwrap();
        let finished = until_finished(&mut f.editor, &id);
        assert_eq!(finished["status"], "done", "{finished}");
    }
    id
}

/// Marks the classifier's request (its system prompt).
const CLASSIFIER: &str = "You classify how a user reacts to a coding agent";

/// Satisfaction (`[stats] satisfaction = true`, privacy on by default): the user's
/// second prompt in a panel session is judged by the configured `judge` model against
/// the agent's answer, off the run's path; `agentls stats` shows the label for the
/// agent's model, and no reason is stored.
#[tokio::test(flavor = "multi_thread")]
async fn a_follow_up_prompt_is_judged_and_only_its_label_is_stored() {
    let judge = ModelServer::start().await.unwrap();
    let mut f = setup_extension_with(&format!(
        "[models.judge]\nwire = \"openai_chat\"\nbase_url = \"{}\"\n\
         [stats]\nsatisfaction = true\nsatisfaction_model = \"judge\"\n",
        judge.url()
    ))
    .await;
    f.model.push_turn(Turn::text("Done: add adds."));
    f.model.push_turn(Turn::text("Fixed: no more todo."));
    judge.push_turn(Turn::text(
        "Sure:\n```json\n{\"label\": \"corrects\", \"reason\": \"The user reports a panic in the new code.\"}\n```",
    ));
    let id = two_prompts(&mut f, PANICS);
    let stats = stats_until(f._dir.path(), |v| v["satisfaction"][0]["n"] == 1);
    let judged = &stats["satisfaction_messages"][0];
    assert_eq!(
        judged["model"], "fixture",
        "the judged turn's model: {stats}"
    );
    assert_eq!(judged["label"], "corrects", "{stats}");
    assert_eq!(judged["session_id"], id.as_str(), "{stats}");
    assert_eq!(
        judged["reason"],
        Value::Null,
        "privacy keeps the reason out"
    );
    assert_eq!(stats["satisfaction"][0]["labels"][1]["share"], 1.0);
    // One request, to the judge: the four labels, the agent's answer and the message.
    let asked = judge.requests();
    assert_eq!(asked.len(), 1);
    let body = asked[0].body.to_string();
    assert!(body.contains(CLASSIFIER), "{body}");
    for label in ["continues", "corrects", "rejects", "frustrated"] {
        assert!(body.contains(label), "{label} missing: {body}");
    }
    assert!(body.contains("Done: add adds."), "{body}");
    assert!(body.contains("it panics: thread 'main' panicked at src/lib.rs:2:5"));
    // The session's model served the two runs and nothing else.
    assert_eq!(f.model.requests().len(), 2);
    let out = std::process::Command::new(bin())
        .args(["stats", "--stats-db"])
        .arg(f._dir.path().join("data/agentls/stats.sqlite3"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "satisfaction: continues 0% · corrects 100% · rejects 0% · frustrated 0%  (n=1)"
        ),
        "{text}"
    );
}

/// With `[stats] privacy = false` the classifier's reason is stored too; with no
/// `satisfaction_model` (and no embedded model in this build) the session's own model
/// judges.
#[tokio::test(flavor = "multi_thread")]
async fn with_privacy_off_the_reason_is_stored_and_the_session_s_model_judges() {
    let mut f = setup_extension_with("[stats]\nsatisfaction = true\nprivacy = false\n").await;
    let verdict = "{\"label\": \"frustrated\", \"reason\": \"Still broken, pasted back.\"}";
    f.model.push_turn(Turn::text("Done: add adds."));
    // The second run and the classifier ask the same model at once, in either order:
    // both get the same answer.
    f.model.push_turn(Turn::text(verdict));
    f.model.push_turn(Turn::text(verdict));
    two_prompts(&mut f, "still broken!! same panic again");
    let stats = stats_until(f._dir.path(), |v| v["satisfaction"][0]["n"] == 1);
    let judged = &stats["satisfaction_messages"][0];
    assert_eq!(
        (&judged["model"], &judged["label"]),
        (&json!("fixture"), &json!("frustrated")),
        "{stats}"
    );
    assert_eq!(judged["reason"], "Still broken, pasted back.", "{stats}");
    let classifier: Vec<String> = f
        .model
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains(CLASSIFIER))
        .collect();
    assert_eq!(classifier.len(), 1);
    assert!(classifier[0].contains("still broken!! same panic again"));
}

/// Satisfaction is off by default: a follow-up prompt makes no classifier request and
/// stores no label.
#[tokio::test(flavor = "multi_thread")]
async fn without_satisfaction_no_classifier_request_is_made() {
    let mut f = setup_extension_with("").await;
    f.model.push_turn(Turn::text("Done: add adds."));
    f.model.push_turn(Turn::text("Fixed."));
    // A spare answer a classifier would take.
    f.model.push_turn(Turn::text("{\"label\": \"corrects\"}"));
    two_prompts(&mut f, PANICS);
    stats_until(f._dir.path(), |v| v["runs"] == 2);
    // A classifier starts with the run, before its model call: it would be in by now.
    std::thread::sleep(Duration::from_millis(500));
    let bodies: Vec<String> = f
        .model
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        bodies.iter().all(|b| !b.contains(CLASSIFIER)),
        "a classifier request was made"
    );
    assert_eq!(bodies.len(), 2, "the two runs' requests only");
    let stats = stats_until(f._dir.path(), |v| v["runs"] == 2);
    assert_eq!(stats["satisfaction"], json!([]), "{stats}");
}

/// `agent/listChanges` (issue 44): after an agent edit in review mode, the pending change
/// is listed with its id (the one the `edit` event carried), its session, the document's
/// current version and its range in the negotiated encoding (UTF-8 here: the `é` before
/// it counts two); it follows the user's typing; the filters work; accepted, it is gone.
#[tokio::test(flavor = "multi_thread")]
async fn list_changes_gives_pending_changes_where_they_are_until_accepted() {
    let text = "pub fn greet() -> usize {\n    let s = \"é\"; todo!()\n}\n";
    let mut caps = helix_caps();
    caps["experimental"] = json!({ "agent": { "version": 1 } });
    let mut f = setup(caps, json!({ "agent": { "review": "review" } }), text).await;
    f.model.push_turn(Turn::default().tool_call(
        "c1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "todo!()", "new_string": "42"}),
    ));
    f.model.push_turn(Turn::text("Done."));
    let list = |f: &mut Fixture, params: Value| {
        f.editor
            .client
            .request_ok("agent/listChanges", params)
            .unwrap()["changes"]
            .as_array()
            .unwrap()
            .clone()
    };
    assert!(list(&mut f, json!({})).is_empty(), "nothing pending yet");

    let session = f
        .editor
        .client
        .request_ok("agent/newSession", json!({}))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    f.editor
        .client
        .request_ok(
            "agent/prompt",
            json!({ "session": session, "text": "Implement greet" }),
        )
        .unwrap();
    let mut change_ids = Vec::new();
    loop {
        let n = f.editor.client.wait_notification("agent/event").unwrap();
        let event = &n["params"]["event"];
        if event["type"] == "edit" {
            change_ids.extend(event["changeIds"].as_array().unwrap().clone());
        }
        if event["type"] == "finished" {
            break;
        }
    }
    assert_eq!(
        f.text(),
        "pub fn greet() -> usize {\n    let s = \"é\"; 42\n}\n"
    );
    assert_eq!(change_ids.len(), 1, "one pending change");
    let (_, version, _) = crate::support::view(&mut f.editor.client, &f.uri);

    let changes = list(&mut f, json!({}));
    assert_eq!(changes.len(), 1, "{changes:#?}");
    let c = &changes[0];
    assert_eq!(c["id"], change_ids[0]);
    assert_eq!(c["session"], session.as_str());
    assert_eq!(c["uri"], f.uri.as_str());
    assert_eq!(c["version"], version);
    // `    let s = "é"; ` is 18 bytes (17 UTF-16 units): `42` spans bytes 18-20.
    assert_eq!(
        c["ranges"],
        json!([{ "start": { "line": 1, "character": 18 }, "end": { "line": 1, "character": 20 } }])
    );
    assert_eq!(
        (&c["kind"], &c["linesAdded"], &c["linesRemoved"]),
        (&json!("replace"), &json!(1), &json!(1))
    );
    // The filters: by document, by session; an unknown session is an error.
    let uri = f.uri.clone();
    assert_eq!(
        list(&mut f, json!({ "uri": uri, "session": session })).len(),
        1
    );
    let other = url(&f.root.join("src/other.rs"));
    assert!(list(&mut f, json!({ "uri": other })).is_empty());
    let unknown = f
        .editor
        .client
        .request("agent/listChanges", json!({ "session": "nope" }))
        .unwrap();
    assert_eq!(unknown.unwrap_err()["code"], -32602);

    // The user types a line above: the change is listed where it is now.
    f.editor
        .type_text(&uri, (0, 0), (0, 0), "// mine\n")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let moved = loop {
        let changes = list(&mut f, json!({ "uri": uri }));
        if changes[0]["ranges"][0]["start"]["line"] == 2 || Instant::now() > deadline {
            break changes;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (_, typed_version, _) = crate::support::view(&mut f.editor.client, &f.uri);
    assert_eq!(
        moved[0]["ranges"],
        json!([{ "start": { "line": 2, "character": 18 }, "end": { "line": 2, "character": 20 } }])
    );
    assert_eq!(moved[0]["version"], typed_version);
    assert!(typed_version > version);

    // Accepted by id: no longer listed, and the text stays.
    let reply = f
        .editor
        .client
        .request_ok(
            "agent/review",
            json!({ "session": session, "change": c["id"], "action": "accept" }),
        )
        .unwrap();
    assert_eq!(reply["accepted"], json!([c["id"]]));
    assert!(list(&mut f, json!({})).is_empty());
    assert!(f.text().contains("\"é\"; 42"));
}

/// Next-edit suggestions for Helix, which has no UI for them: the code action "Apply
/// next edit" at the cursor carries the rest of a rename (then the calls of a function
/// that gained a parameter) as a versioned `WorkspaceEdit`, which the editor applies as
/// it applies any; an edit for a version the user has typed past is refused whole.
#[tokio::test(flavor = "multi_thread")]
async fn helix_applies_the_next_edit_as_a_code_action() {
    const TEXT: &str = "fn area(w: u32) -> u32 {\n    w * 2\n}\n\nfn main() {\n    let count = area(1);\n    println!(\"{count}\");\n    let _ = count + area(count);\n}\n";
    let mut f = setup(helix_caps(), json!({}), TEXT).await;
    // `count` -> `total` where it is assigned.
    f.editor
        .type_text(&f.uri, (5, 8), (5, 13), "total")
        .unwrap();
    let action = f.action(5, json!([]), "Apply next edit");
    assert_eq!(
        action["title"],
        "Apply next edit: rename `count` to `total` (3 places)"
    );
    assert_eq!(action["kind"], "refactor.rewrite");
    let (_, version, _) = crate::support::view(&mut f.editor.client, &f.uri);
    assert_eq!(
        action["edit"]["documentChanges"][0]["textDocument"]["version"],
        version
    );
    assert_eq!(
        f.editor.apply_edit(&action["edit"]).unwrap()["applied"],
        true
    );
    let renamed = TEXT.replace("count", "total");
    assert_eq!(f.text(), renamed);
    // A parameter added: the calls get a placeholder.
    f.editor
        .type_text(&f.uri, (0, 14), (0, 14), ", h: u32")
        .unwrap();
    let action = f.action(0, json!([]), "Apply next edit");
    assert_eq!(
        action["title"],
        "Apply next edit: pass `h` to `area` (2 places)"
    );
    assert_eq!(
        f.editor.apply_edit(&action["edit"]).unwrap()["applied"],
        true
    );
    let passed = renamed
        .replace("area(w: u32)", "area(w: u32, h: u32)")
        .replace("area(1)", "area(1, h)")
        .replace("area(total);", "area(total, h);");
    assert_eq!(f.text(), passed);
    // Typed past: the edit is refused whole, and what was typed stays.
    f.editor.type_text(&f.uri, (5, 8), (5, 13), "sum").unwrap();
    let action = f.action(5, json!([]), "Apply next edit");
    f.editor.type_text(&f.uri, (8, 1), (8, 1), "\n").unwrap();
    let refused = f.editor.apply_edit(&action["edit"]).unwrap();
    assert_eq!(refused["applied"], false, "{refused}");
    assert_eq!(f.text(), passed.replacen("let total", "let sum", 1) + "\n");
}
