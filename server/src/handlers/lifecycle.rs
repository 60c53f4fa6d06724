//! `initialize` and configuration.

use tower_lsp::lsp_types as lsp;

use crate::config::{self, Source};
use crate::convert::{from_lsp, to_lsp};
use crate::state::State;

/// `initialize`: negotiates the encoding, finds the workspace, loads the configuration,
/// and advertises only what works.
pub fn initialize(state: &State, params: lsp::InitializeParams) -> lsp::InitializeResult {
    let encoding = from_lsp::position_encoding(&params);
    state.set_encoding(encoding);
    let mut caps = from_lsp::client_caps(&params.capabilities);
    // Helix opens documents a server names (it answers window/showDocument) but does
    // not say so in its capabilities (25.07).
    if params
        .client_info
        .as_ref()
        .is_some_and(|c| c.name == "helix")
    {
        caps.show_document = true;
    }
    state.set_client_caps(caps);
    let root = from_lsp::workspace_root(&params);
    let mut merged = config::load_files(root.as_deref());
    if let Some(options) = params.initialization_options {
        merged.set_layer(Source::InitializationOptions, options);
    }
    for problem in &merged.problems {
        tracing::warn!("configuration: {problem}");
    }
    let completion = merged.config.completion.clone();
    let inline_completion = completion.enabled || completion.languages.values().any(|on| *on);
    state.update_config(|c| *c = merged);
    tracing::info!(?root, %encoding, "initialized");
    state.set_root(root);

    lsp::InitializeResult {
        capabilities: lsp::ServerCapabilities {
            position_encoding: Some(to_lsp::position_encoding(encoding)),
            text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
                lsp::TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                    // The saved text lets a buffer that drifted resynchronise.
                    save: Some(lsp::TextDocumentSyncSaveOptions::SaveOptions(
                        lsp::SaveOptions {
                            include_text: Some(true),
                        },
                    )),
                    ..Default::default()
                },
            )),
            document_symbol_provider: Some(lsp::OneOf::Left(true)),
            execute_command_provider: Some(lsp::ExecuteCommandOptions {
                commands: crate::handlers::commands::COMMANDS
                    .iter()
                    .map(|c| (*c).to_owned())
                    .collect(),
                work_done_progress_options: Default::default(),
            }),
            workspace_symbol_provider: Some(lsp::OneOf::Left(true)),
            definition_provider: Some(lsp::OneOf::Left(true)),
            references_provider: Some(lsp::OneOf::Left(true)),
            code_action_provider: Some(lsp::CodeActionProviderCapability::Options(
                lsp::CodeActionOptions {
                    code_action_kinds: Some(vec![
                        lsp::CodeActionKind::QUICKFIX,
                        lsp::CodeActionKind::REFACTOR_REWRITE,
                        lsp::CodeActionKind::EMPTY,
                    ]),
                    ..Default::default()
                },
            )),
            // Helix shows no ghost text: one completion item instead, when asked for.
            completion_provider: completion
                .completion_items
                .then(lsp::CompletionOptions::default),
            experimental: Some(serde_json::json!({
                "agentls": { "viewFileText": agentls_protocol::view_file_text::METHOD },
                // LSP 3.18 capabilities lsp-types 0.94 has no field for: the transport
                // moves them up into `capabilities` (see transport::LIFTED).
                (crate::transport::LIFTED): {
                    (agentls_protocol::inline_completion::CAPABILITY): inline_completion,
                },
                (agentls_protocol::agent::CAPABILITY): {
                    "version": agentls_protocol::agent::VERSION,
                    "methods": agentls_protocol::agent::METHODS,
                    "notifications": [agentls_protocol::agent::EVENT],
                }
            })),
            ..Default::default()
        },
        server_info: Some(lsp::ServerInfo {
            name: "agentls".to_owned(),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        }),
    }
}

/// `workspace/didChangeConfiguration`: the client's settings become the top layer.
pub fn did_change_configuration(
    state: &State,
    params: lsp::DidChangeConfigurationParams,
) -> Vec<String> {
    let settings = config::client_settings(params.settings);
    let problems = state.update_config(|c| c.set_layer(Source::Client, settings));
    for problem in &problems {
        tracing::warn!("configuration: {problem}");
    }
    problems
}
