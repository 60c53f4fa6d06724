//! The diagnostics the client showed us. LSP has no request to read a client's
//! diagnostics, but code action requests carry the ones under the cursor, and clients
//! of the `agent/*` extension forward whole files with `agent/diagnostics`: we keep the
//! latest per file for the agent's `diagnostics` tool.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One diagnostic: 1-based line, severity, message.
type Diagnostic = (usize, String, String);

/// The diagnostics per file, shared with the tools.
#[derive(Debug, Clone, Default)]
pub struct ClientDiagnostics(Arc<Mutex<HashMap<PathBuf, Vec<Diagnostic>>>>);

impl ClientDiagnostics {
    /// Replaces what we know of `path`'s diagnostics on the lines `lines` (0-based,
    /// inclusive) with `found`: a code action request sees only part of a file.
    pub fn record(&self, path: &Path, lines: (u32, u32), found: Vec<Diagnostic>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map.entry(path.to_path_buf()).or_default();
        let (first, last) = (lines.0 as usize + 1, lines.1 as usize + 1);
        entry.retain(|(line, _, _)| *line < first || *line > last);
        entry.extend(found);
        entry.sort();
        entry.dedup();
    }
}

impl ClientDiagnostics {
    /// Replaces all of `path`'s diagnostics (an `agent/diagnostics` notification).
    pub fn replace(&self, path: &Path, mut found: Vec<Diagnostic>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        found.sort();
        found.dedup();
        if found.is_empty() {
            map.remove(path);
        } else {
            map.insert(path.to_path_buf(), found);
        }
    }
}

impl agentls_tools::DiagnosticsSource for ClientDiagnostics {
    fn diagnostics(&self, path: &Path) -> Vec<(usize, String, String)> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentls_tools::DiagnosticsSource;

    #[test]
    fn a_request_replaces_only_its_lines() {
        let d = ClientDiagnostics::default();
        let p = Path::new("/w/a.rs");
        d.record(
            p,
            (0, 9),
            vec![
                (2, "error".into(), "a".into()),
                (8, "warning".into(), "b".into()),
            ],
        );
        d.record(p, (1, 1), vec![]);
        assert_eq!(d.diagnostics(p), vec![(8, "warning".into(), "b".into())]);
    }
}
