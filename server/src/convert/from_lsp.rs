//! LSP → library.

use agentls_text::{ContentChange, DocUri, Position, PositionEncoding, Range};
use tower_lsp::lsp_types as lsp;

/// A document URI.
pub fn uri(url: &lsp::Url) -> DocUri {
    DocUri::new(url.as_str())
}

/// A position; its column stays in the session's encoding.
pub fn position(p: lsp::Position) -> Position {
    Position::new(p.line, p.character)
}

/// A range.
pub fn range(r: lsp::Range) -> Range {
    Range::new(position(r.start), position(r.end))
}

/// One `didChange` content change.
pub fn content_change(change: lsp::TextDocumentContentChangeEvent) -> ContentChange {
    ContentChange {
        range: change.range.map(range),
        text: change.text,
    }
}

/// The encoding to use: the client's first supported preference, else UTF-16.
pub fn position_encoding(params: &lsp::InitializeParams) -> PositionEncoding {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref())
        .map(|kinds| {
            kinds
                .iter()
                .map(|k| k.as_str().to_owned())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    PositionEncoding::negotiate(offered)
}

/// The workspace root: the first workspace folder, else the deprecated `rootUri`.
pub fn workspace_root(params: &lsp::InitializeParams) -> Option<std::path::PathBuf> {
    let folder = params
        .workspace_folders
        .as_ref()
        .and_then(|f| f.first())
        .map(|f| &f.uri);
    #[allow(deprecated)] // rootUri is deprecated but older clients send only it.
    let url = folder.or(params.root_uri.as_ref())?;
    url.to_file_path().ok()
}

/// What the user is told when the client opened several workspace folders: the server
/// works in the first ([`workspace_root`]) only, and an agent that silently could not
/// see or edit the others would look broken. `None` with one folder or none.
pub fn other_folders_note(params: &lsp::InitializeParams) -> Option<String> {
    let folders = params.workspace_folders.as_ref()?;
    let (first, rest) = folders.split_first()?;
    // A first folder that is not on disk gives no workspace at all (`workspace_root`):
    // then there is nothing to say about the first.
    if rest.is_empty() || first.uri.to_file_path().is_err() {
        return None;
    }
    let name = |f: &lsp::WorkspaceFolder| match f.uri.to_file_path() {
        Ok(p) => p.display().to_string(),
        Err(()) => f.uri.to_string(),
    };
    let others: Vec<String> = rest.iter().map(name).collect();
    let which = if others.len() == 1 {
        "the other folder".to_owned()
    } else {
        format!("the other {} folders", others.len())
    };
    Some(format!(
        "agentls works in the first workspace folder, {}; it does not index or search {which} ({}), and the agent reads and edits beneath the first only. Open a folder on its own to work in it.",
        name(first),
        others.join(", ")
    ))
}

/// The client capabilities the server acts on.
pub fn client_caps(caps: &lsp::ClientCapabilities) -> crate::state::ClientCaps {
    let edit_caps = caps
        .workspace
        .as_ref()
        .and_then(|w| w.workspace_edit.as_ref());
    crate::state::ClientCaps {
        work_done_progress: caps
            .window
            .as_ref()
            .and_then(|w| w.work_done_progress)
            .unwrap_or(false),
        watched_files_registration: caps
            .workspace
            .as_ref()
            .and_then(|w| w.did_change_watched_files.as_ref())
            .and_then(|d| d.dynamic_registration)
            .unwrap_or(false),
        document_changes: edit_caps.and_then(|e| e.document_changes).unwrap_or(false),
        resource_operations: edit_caps
            .and_then(|e| e.resource_operations.as_ref())
            .is_some_and(|ops| {
                [
                    lsp::ResourceOperationKind::Create,
                    lsp::ResourceOperationKind::Rename,
                    lsp::ResourceOperationKind::Delete,
                ]
                .iter()
                .all(|k| ops.contains(k))
            }),
        change_annotations: edit_caps
            .and_then(|e| e.change_annotation_support.as_ref())
            .is_some(),
        atomic_edits: edit_caps
            .and_then(|e| e.failure_handling.as_ref())
            .is_some_and(|f| {
                matches!(
                    f,
                    lsp::FailureHandlingKind::Transactional | lsp::FailureHandlingKind::Undo
                )
            }),
        agent_extension: caps
            .experimental
            .as_ref()
            .and_then(|e| e.get(agentls_protocol::agent::CAPABILITY))
            .is_some_and(|v| !v.is_null() && *v != serde_json::Value::Bool(false)),
        show_document: caps
            .window
            .as_ref()
            .and_then(|w| w.show_document.as_ref())
            .is_some_and(|d| d.support),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(folders: &[&str]) -> lsp::InitializeParams {
        lsp::InitializeParams {
            workspace_folders: Some(
                folders
                    .iter()
                    .map(|u| lsp::WorkspaceFolder {
                        uri: lsp::Url::parse(u).expect("a test URL"),
                        name: "f".to_owned(),
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn the_folders_note_names_the_first_and_the_others() {
        assert_eq!(other_folders_note(&params(&["file:///a"])), None);
        assert_eq!(other_folders_note(&lsp::InitializeParams::default()), None);
        let two = other_folders_note(&params(&["file:///a", "file:///b"])).unwrap_or_default();
        assert!(
            two.starts_with("agentls works in the first workspace folder, /a; it does not index or search the other folder (/b),"),
            "{two}"
        );
        let three = other_folders_note(&params(&["file:///a", "file:///b", "file:///c"]))
            .unwrap_or_default();
        assert!(three.contains("the other 2 folders (/b, /c)"), "{three}");
        // A first folder not on disk gives no workspace: nothing to say about it.
        assert_eq!(
            other_folders_note(&params(&["untitled:x", "file:///b"])),
            None
        );
    }
}
