//! What a client's settings cost the edit path, and which settings lift it: said in the
//! log and to the client at startup, and listed by `agentls doctor`.

use crate::state::ClientCaps;

/// Client settings that give exact, fast edits, per editor, for `agentls doctor`.
pub const SETTINGS: &[(&str, &str)] = &[
    (
        "Neovim",
        "capabilities.workspace.workspaceEdit.documentChanges = true and flags = { debounce_text_changes = 0 } (the agentls plugin sets both)",
    ),
    (
        "Helix",
        "nothing to set: it sends versioned edits and its changes at once",
    ),
    (
        "VS Code",
        "nothing to set: vscode-languageclient sends versioned edits and its changes at once",
    ),
];

/// Why this client's edits take the slower path and how to lift it, if they do.
pub fn slow_path(caps: ClientCaps, client_name: Option<&str>) -> Option<String> {
    let neovim = client_name.is_some_and(|n| n.eq_ignore_ascii_case("neovim"));
    if caps.document_changes {
        return neovim.then(|| {
            "Neovim holds didChange back 150 ms by default: an agent edit the user types across is noticed late and sent again; set flags = { debounce_text_changes = 0 } (the agentls Neovim plugin does)".to_owned()
        });
    }
    let lift = if neovim {
        "set capabilities.workspace.workspaceEdit.documentChanges = true and flags = { debounce_text_changes = 0 } (the agentls Neovim plugin does both)"
    } else {
        "advertise workspace.workspaceEdit.documentChanges (versioned edits)"
    };
    Some(format!(
        "this client cannot refuse a stale edit (no workspaceEdit.documentChanges): agent edits wait for the buffer to be quiet (up to 190 ms) and are checked and repaired after they land; to lift this, {lift}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_names_the_settings_that_lift_it() {
        let plain = ClientCaps::default();
        let advice = slow_path(plain, Some("Neovim")).unwrap_or_default();
        assert!(advice.contains("documentChanges = true"), "{advice}");
        assert!(advice.contains("debounce_text_changes = 0"), "{advice}");
        let versioned = ClientCaps {
            document_changes: true,
            ..ClientCaps::default()
        };
        assert_eq!(slow_path(versioned, Some("helix")), None);
        assert!(slow_path(versioned, Some("Neovim")).is_some());
        assert!(slow_path(plain, Some("helix")).is_some());
    }
}
