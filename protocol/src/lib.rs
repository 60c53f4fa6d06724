//! The LSP extensions agentls speaks beyond the standard protocol.
//!
//! This crate depends on nothing of agentls, so editor clients and other servers can use
//! it alone. `PROTOCOL.md` beside it documents every method; `schema.json` is the JSON
//! Schema of every type, generated from these definitions by [`json_schema`] (a test
//! fails when the committed file is stale; `UPDATE_SCHEMA=1 cargo test -p
//! agentls-protocol` rewrites it). The schema also lists every method by name
//! ([`REQUESTS`], [`NOTIFICATIONS`]); the editor clients' method constants are generated
//! from it: the VS Code extension's by `editor-clients/vscode/scripts/gen-protocol.mjs`,
//! the Neovim plugin's `lua/agentls/protocol.lua` by [`lua_module`] (checked and
//! rewritten by the same test as `schema.json`).
//!
//! - [`agent`]: the `agent/*` extension (sessions, prompts, `agent/event`, review), and
//!   [`agent::ops`], the operations of a session's submission queue (`session.Submission`
//!   in the schema).
//! - [`commands`]: the `workspace/executeCommand` commands any client can send.
//! - [`view_file_text`]: a debugging request.
//! - [`inline_completion`]: LSP 3.18's `textDocument/inlineCompletion` (ghost text),
//!   which the LSP crates agentls builds on (tower-lsp 0.20, lsp-types 0.94) predate.
//! - [`copilot_inline_edit`]: `textDocument/copilotInlineEdit`, next-edit suggestions as
//!   Copilot's language server answers them.

use serde::{Deserialize, Serialize};

pub mod agent;
pub mod commands;
pub mod copilot_inline_edit;
pub mod inline_completion;

pub use agent::TextDocumentIdentifier;

/// The JSON Schema of every type of the protocol, under `$defs`, keyed by a name that
/// says where it belongs (`agent/prompt.Params`, `agent/event.Event`, ...).
pub fn json_schema() -> serde_json::Value {
    use schemars::SchemaGenerator;
    let mut generator = SchemaGenerator::default();
    let mut roots = serde_json::Map::new();
    macro_rules! add {
        ($($name:literal => $ty:ty),* $(,)?) => {
            $( roots.insert($name.to_owned(), generator.subschema_for::<$ty>().to_value()); )*
        };
    }
    add!(
        "agent/newSession.Params" => agent::new_session::Params,
        "agent/newSession.Result" => agent::new_session::Result,
        "agent/prompt.Params" => agent::prompt::Params,
        "agent/prompt.Result" => agent::prompt::Result,
        "agent/compact.Params" => agent::compact::Params,
        "agent/compact.Result" => agent::compact::Result,
        "agent/cancel.Params" => agent::cancel::Params,
        "agent/cancel.Result" => agent::cancel::Result,
        "agent/listSessions.Result" => agent::list_sessions::Result,
        "agent/getTranscript.Params" => agent::get_transcript::Params,
        "agent/getTranscript.Result" => agent::get_transcript::Result,
        "agent/setModel.Params" => agent::set_model::Params,
        "agent/setModel.Result" => agent::set_model::Result,
        "agent/listModels.Result" => agent::list_models::Result,
        "agent/review.Params" => agent::review::Params,
        "agent/review.Result" => agent::review::Result,
        "agent/listChanges.Params" => agent::list_changes::Params,
        "agent/listChanges.Result" => agent::list_changes::Result,
        "agent/event.Params" => agent::EventParams,
        "agent/diagnostics.Params" => agent::diagnostics::Params,
        "agentls/semanticSearch.Params" => semantic_search::Params,
        "agentls/semanticSearch.Result" => semantic_search::Result,
        "agentls/viewFileText.Params" => view_file_text::Params,
        "agentls/viewFileText.Result" => view_file_text::Result,
        "textDocument/inlineCompletion.Params" => inline_completion::Params,
        "textDocument/inlineCompletion.Result" => inline_completion::Result,
        "textDocument/copilotInlineEdit.Params" => copilot_inline_edit::Params,
        "textDocument/copilotInlineEdit.Result" => copilot_inline_edit::Result,
        "command.TaskArgs" => commands::TaskArgs,
        "command.Started" => commands::Started,
        "command.SessionArgs" => commands::SessionArgs,
        "session.Submission" => agent::ops::Submission,
    );
    let mut requests = REQUESTS.to_vec();
    requests.sort_unstable();
    let mut notifications = NOTIFICATIONS.to_vec();
    notifications.sort_unstable();
    sorted(serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agentls LSP extensions",
        "capability": { "key": agent::CAPABILITY, "version": agent::VERSION },
        "requests": requests,
        "notifications": notifications,
        "methods": roots,
        "$defs": generator.definitions(),
    }))
}

/// Every request method beyond what tower-lsp serves that a client can send (the
/// debug-only `agentls/debugPanic` aside): the extensions, LSP 3.18's
/// `textDocument/inlineCompletion` and Copilot's `textDocument/copilotInlineEdit`.
pub const REQUESTS: &[&str] = &[
    agent::new_session::METHOD,
    agent::prompt::METHOD,
    agent::cancel::METHOD,
    agent::list_sessions::METHOD,
    agent::get_transcript::METHOD,
    agent::set_model::METHOD,
    agent::list_models::METHOD,
    agent::review::METHOD,
    agent::list_changes::METHOD,
    agent::compact::METHOD,
    semantic_search::METHOD,
    view_file_text::METHOD,
    inline_completion::METHOD,
    copilot_inline_edit::METHOD,
];

/// Every notification beyond standard LSP, either way: `agent/event` (server to client)
/// and `agent/diagnostics` (client to server).
pub const NOTIFICATIONS: &[&str] = &[agent::EVENT, agent::diagnostics::METHOD];

/// The constant's name of a method in generated client code: the part after the last
/// `/` (`agent/listChanges` -> `listChanges`). [`json_schema`]'s test checks that no
/// two methods share one.
pub fn method_key(method: &str) -> &str {
    method.rsplit('/').next().unwrap_or(method)
}

/// The Neovim plugin's `lua/agentls/protocol.lua`, from `schema` (the value
/// [`json_schema`] returns): the extension's capability key and version, and every
/// method by [`method_key`], so the plugin never spells a method name itself. Laid out
/// as stylua leaves it.
pub fn lua_module(schema: &serde_json::Value) -> String {
    let names = |key: &str| -> Vec<String> {
        schema[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut methods: Vec<String> = names("requests");
    methods.extend(names("notifications"));
    methods.sort_by(|a, b| method_key(a).cmp(method_key(b)));
    let capability = &schema["capability"];
    let mut out = String::from(
        "-- Generated from protocol/schema.json by agentls-protocol (lua_module): do not edit;\n\
         -- run `UPDATE_SCHEMA=1 cargo test -p agentls-protocol`.\n\
         return {\n",
    );
    out += &format!(
        "  capability = {},\n  version = {},\n  methods = {{\n",
        capability["key"], capability["version"]
    );
    for m in &methods {
        out += &format!(
            "    {} = {},\n",
            method_key(m),
            serde_json::Value::from(m.as_str())
        );
    }
    out += "  },\n}\n";
    out
}

/// Object keys in sorted order at every depth. serde_json keeps insertion order when
/// any crate in the build turns on its `preserve_order` feature (a workspace build
/// does, this crate alone does not), so the committed file must not depend on it.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

/// `agentls/viewFileText`: the server's text of a document, for debugging text sync
/// (as rust-analyzer's `rust-analyzer/viewFileText`).
pub mod view_file_text {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agentls/viewFileText";

    /// Parameters: which document.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Params {
        /// The document's URI, as in `TextDocumentIdentifier`.
        pub text_document: TextDocumentIdentifier,
    }

    /// The result: the text as the server holds it, and its version.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// The text.
        pub text: String,
        /// The client version the text corresponds to.
        pub version: i32,
        /// `false` when a change could not be applied and the server is waiting for the
        /// client to send the full text again.
        pub in_sync: bool,
    }
}

/// `agentls/semanticSearch`: code found by what it does (a question or description),
/// ranked by words in identifiers and comments and, with an embedding model, by meaning.
/// Standard clients get the same through `workspace/symbol` with a query that starts
/// with `?`.
pub mod semantic_search {
    use super::*;

    /// The method name.
    pub const METHOD: &str = "agentls/semanticSearch";

    /// Parameters.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Params {
        /// What to find, in words.
        pub query: String,
        /// How many hits (default 10, at most 100).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub limit: Option<u32>,
        /// Only files whose path relative to the workspace root matches this glob.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub path: Option<String>,
    }

    /// The result.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Result {
        /// Best first.
        pub hits: Vec<Hit>,
        /// Chunks searched.
        pub chunks: u32,
        /// Of those, chunks with a vector (the rest are matched by words only until the
        /// background embedding reaches them).
        pub embedded: u32,
        /// Files searched.
        pub files: u32,
        /// `hybrid` when vectors took part, `lexical` otherwise.
        pub ranking: String,
        /// The embedding model whose vectors took part (`minilm-l6-v2-static-1`,
        /// `minilm-l6-v2-full-1`); absent when none did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub model: Option<String>,
    }

    /// One piece of code.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Hit {
        /// The file.
        pub uri: String,
        /// First line, 0-based.
        pub start_line: u32,
        /// Last line, 0-based, inclusive.
        pub end_line: u32,
        /// The definition it holds (`Class.method`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub symbol: Option<String>,
        /// What that definition is (`function`, `class`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub kind: Option<String>,
        /// Fused score, higher is better (comparable within one result only).
        pub score: f32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares a generated file (`path` relative to this crate) with `fresh`, after
    /// writing it under `UPDATE_SCHEMA=1`.
    fn check_generated(path: &str, fresh: &str) {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        if std::env::var("UPDATE_SCHEMA").as_deref() == Ok("1") {
            std::fs::write(&full, fresh).unwrap();
        }
        let committed = std::fs::read_to_string(&full).unwrap_or_default();
        assert!(
            committed == fresh,
            "{path} is stale: run `UPDATE_SCHEMA=1 cargo test -p agentls-protocol`"
        );
    }

    /// `schema.json` is generated: it must match the types, or clients build on a lie.
    #[test]
    fn committed_schema_is_current() {
        check_generated(
            "schema.json",
            &(serde_json::to_string_pretty(&json_schema()).unwrap() + "\n"),
        );
    }

    /// The Neovim plugin's method names are generated too: stale means a name it sends
    /// that the server does not know.
    #[test]
    fn committed_lua_module_is_current() {
        check_generated(
            "../editor-clients/neovim/lua/agentls/protocol.lua",
            &lua_module(&json_schema()),
        );
    }

    /// Every type in the schema belongs to a listed method (or a command), every listed
    /// method has its types, and no two methods share a generated constant's name.
    #[test]
    fn the_method_lists_match_the_types() {
        let schema = json_schema();
        let mut listed: Vec<&str> = REQUESTS.iter().chain(NOTIFICATIONS).copied().collect();
        let typed: std::collections::BTreeSet<&str> = schema["methods"]
            .as_object()
            .unwrap()
            .keys()
            .filter_map(|k| k.split_once('.').map(|(m, _)| m))
            // Not methods: the commands' arguments, and the session's submission queue
            // (what front ends over the session host send it).
            .filter(|m| *m != "command" && *m != "session")
            .collect();
        for m in &typed {
            assert!(listed.contains(m), "{m} has types but is not listed");
        }
        for m in &listed {
            assert!(typed.contains(m), "{m} is listed but has no types");
        }
        for m in agent::METHODS {
            assert!(REQUESTS.contains(m), "{m} is advertised but not listed");
        }
        let before = listed.len();
        listed.sort_by_key(|m| method_key(m));
        listed.dedup_by_key(|m| method_key(m));
        assert_eq!(listed.len(), before, "two methods share a constant's name");
        let lua = lua_module(&schema);
        assert!(
            lua.contains("    listChanges = \"agent/listChanges\",\n"),
            "{lua}"
        );
        assert!(
            lua.contains("  capability = \"agent\",\n  version = 1,\n"),
            "{lua}"
        );
    }

    #[test]
    fn list_changes_params_may_be_empty_and_refuse_unknown_fields() {
        let empty: agent::list_changes::Params =
            serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(empty, agent::list_changes::Params::default());
        let bad = serde_json::json!({"uri": "file:///a", "line": 1});
        assert!(serde_json::from_value::<agent::list_changes::Params>(bad).is_err());
    }

    #[test]
    fn events_are_tagged_camel_case() {
        let ev = agent::Event::ToolFinished {
            id: "c1".into(),
            name: "grep".into(),
            summary: "3 matches".into(),
            error: None,
            failed: false,
            ms: 4,
        };
        assert_eq!(
            serde_json::to_value(&ev).unwrap(),
            serde_json::json!({"type": "toolFinished", "id": "c1", "name": "grep", "summary": "3 matches", "ms": 4})
        );
        let ev = agent::Event::Usage {
            input: 1,
            cached_input: 2,
            output: 3,
        };
        assert_eq!(serde_json::to_value(&ev).unwrap()["cachedInput"], 2);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let bad = serde_json::json!({"session": "s", "text": "hi", "extra": 1});
        assert!(serde_json::from_value::<agent::prompt::Params>(bad).is_err());
    }
}
