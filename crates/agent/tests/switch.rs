//! Handing a session to another model mid-way: the new model gets its own tool set,
//! a note that it takes over, and the calls it could not have made become text.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use agentls_agent::{Session, SessionConfig, StaticContext, Status, ToolSet};
use agentls_model::{
    ClientOptions, EditFormat, HttpProvider, ModelProfile, ProviderSpec, RetryPolicy, WireFormat,
};
use agentls_testkit::model_server::{ModelServer, Turn};
use common::{call, workspace};
use serde_json::{Value, json};

fn named_provider(server: &ModelServer, name: &str, edit: EditFormat) -> Arc<HttpProvider> {
    let spec = ProviderSpec {
        name: name.into(),
        wire: WireFormat::OpenaiChat,
        base_url: server.url(),
        model_id: format!("{name}-id"),
        key: None,
        profile: ModelProfile {
            edit_format: edit,
            ..ModelProfile::default()
        },
    };
    let options = ClientOptions {
        retry: RetryPolicy::fast(0),
        ..ClientOptions::default()
    };
    Arc::new(HttpProvider::new(spec, options).unwrap())
}

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Names of the tool calls in the request's assistant messages.
fn called(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_new_model_gets_its_tools_a_note_and_foreign_calls_as_text() {
    let a = ModelServer::start().await.unwrap();
    let b = ModelServer::start().await.unwrap();
    let ws = workspace();
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@ pub fn add(a: i32, b: i32) -> i32 {\n-    a - b\n+    a * b\n }\n*** End Patch\n";
    a.push_turn(call("a1", "read_file", json!({"path": "src/lib.rs"})));
    a.push_turn(call("a2", "apply_patch", json!({"patch": patch})));
    a.push_turn(Turn::text("Changed the operator."));
    b.push_turn(call(
        "b1",
        "str_replace",
        json!({"path": "src/lib.rs", "old_string": "a * b", "new_string": "a + b"}),
    ));
    b.push_turn(Turn::text("Now it adds."));

    let tools = ToolSet::from_registry(&agentls_tools::Registry::standard());
    let static_ctx = StaticContext::gather(ws.path(), &[]).await;
    let mut s = Session::new(
        named_provider(&a, "model-a", EditFormat::ApplyPatch),
        tools,
        agentls_tools::ToolContext::on_disk(ws.path()),
        SessionConfig::default(),
        static_ctx,
    );
    assert_eq!(
        s.run("Fix add.").await,
        Status::Done {
            answer: "Changed the operator.".into()
        }
    );
    assert!(offered(&a.requests()[0].body).contains(&"apply_patch".to_owned()));
    let lib = ws.path().join("src/lib.rs");
    assert!(std::fs::read_to_string(&lib).unwrap().contains("a * b"));

    s.switch_model(named_provider(&b, "model-b", EditFormat::StrReplace));
    assert_eq!(
        s.run("It must add, not multiply.").await,
        Status::Done {
            answer: "Now it adds.".into()
        }
    );
    assert!(std::fs::read_to_string(&lib).unwrap().contains("a + b"));

    let reqs = b.requests();
    assert_eq!(reqs.len(), 2);
    let first = &reqs[0].body;
    // B's own tool set: its edit tool, not A's.
    let tools = offered(first);
    assert!(tools.contains(&"str_replace".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"apply_patch".to_owned()), "{tools:?}");
    // No call in the history refers to a tool B lacks; the one it has stays a call.
    assert_eq!(called(first), vec!["read_file".to_owned()]);
    let text = first.to_string();
    assert!(
        text.contains("[earlier call by model-a: apply_patch("),
        "A's patch as text: {text}"
    );
    assert!(text.contains("[result of that call:"), "{text}");
    assert!(!text.contains("\"tool_call_id\":\"a2\""), "{text}");
    // The takeover note comes with the user's message.
    let messages = first["messages"].as_array().unwrap();
    let last_user = messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        last_user.contains("taking over this session from the model model-a")
            && last_user.ends_with("is above.]\n\nIt must add, not multiply."),
        "{last_user}"
    );
    // The prefix B sees stays B's on its second request.
    assert_eq!(reqs[1].body["messages"][0], first["messages"][0]);
    assert_eq!(reqs[1].body["tools"], first["tools"]);
    assert!(
        b.pairing_violations().is_empty(),
        "{:?}",
        b.pairing_violations()
    );
    assert!(
        a.pairing_violations().is_empty(),
        "{:?}",
        a.pairing_violations()
    );
}
