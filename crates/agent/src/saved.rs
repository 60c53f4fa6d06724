//! Sessions saved between runs: the transcript and what it was about, one JSON file per
//! session, written whole after each turn (to a temporary file renamed over the old
//! one, so a crash leaves the previous turn's file, never half of one). Front ends load
//! them to go on where a session stopped (`session/load` in `agentls acp`).

use std::path::{Path, PathBuf};

use agentls_model::Message;
use serde::{Deserialize, Serialize};

/// The format's version; a file of another version is not loaded.
const VERSION: u32 = 1;

/// One saved session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedSession {
    /// Format version.
    pub version: u32,
    /// Session id.
    pub id: String,
    /// The workspace it ran in.
    pub cwd: PathBuf,
    /// Its first prompt, cut to a line: what lists show.
    pub title: String,
    /// Milliseconds since the epoch.
    pub updated_ms: u64,
    /// The conversation (the system prompt is rebuilt on load).
    pub messages: Vec<Message>,
}

/// Where sessions are saved unless configured: the user data directory.
pub fn default_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("agentls").join("sessions"))
}

/// A directory of saved sessions.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

/// Why a session could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No saved session has this id.
    #[error("no saved session {0}")]
    NotFound(String),
    /// The id cannot name a file (it came from a client).
    #[error("invalid session id {0:?}")]
    BadId(String),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file is not a saved session of this version.
    #[error("{path}: not a saved session ({why})")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl SessionStore {
    /// Sessions under `dir` (made when the first one is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> Result<PathBuf, StoreError> {
        // Ids are ours (`new_session_id`), but a loading client names them: only plain
        // names, so no id reaches outside the directory.
        let plain = !id.is_empty()
            && id.len() <= 128
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !plain {
            return Err(StoreError::BadId(id.to_owned()));
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// Saves `session`, replacing its previous save.
    pub fn save(&self, session: &SavedSession) -> Result<(), StoreError> {
        let path = self.path(&session.id)?;
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let text = serde_json::to_vec(session).map_err(|e| StoreError::Format {
            path: path.clone(),
            why: e.to_string(),
        })?;
        let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    /// The saved session `id`.
    pub fn load(&self, id: &str) -> Result<SavedSession, StoreError> {
        let path = self.path(id)?;
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound(id.to_owned()));
            }
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        let saved: SavedSession =
            serde_json::from_slice(&text).map_err(|e| StoreError::Format {
                path: path.clone(),
                why: e.to_string(),
            })?;
        if saved.version != VERSION || saved.id != id {
            return Err(StoreError::Format {
                path,
                why: format!("version {} id {}", saved.version, saved.id),
            });
        }
        Ok(saved)
    }
}

impl SavedSession {
    /// A save of `messages` in `cwd`, stamped now.
    pub fn new(id: &str, cwd: &Path, messages: &[Message]) -> Self {
        let title = messages
            .iter()
            .find(|m| m.role == agentls_model::Role::User)
            .and_then(|m| {
                m.parts.iter().find_map(|p| match p {
                    agentls_model::Part::Text(t) => Some(t.as_str()),
                    _ => None,
                })
            })
            .unwrap_or_default()
            .lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(80)
            .collect();
        let updated_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Self {
            version: VERSION,
            id: id.to_owned(),
            cwd: cwd.to_path_buf(),
            title,
            updated_ms,
            messages: messages.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use agentls_model::{Part, Role, ToolCall, ToolResult};

    use super::*;

    #[test]
    fn a_saved_session_loads_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("s"));
        let messages = vec![
            Message::user("Fix add\nin calc.py"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Text("Reading.".into()),
                    Part::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"calc.py\"}".into(),
                    }),
                ],
            },
            Message {
                role: Role::User,
                parts: vec![Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    content: "def add".into(),
                    is_error: false,
                })],
            },
        ];
        let saved = SavedSession::new("s-1", Path::new("/ws"), &messages);
        assert_eq!(saved.title, "Fix add");
        store.save(&saved).unwrap();
        // A second save replaces the first.
        let mut more = messages.clone();
        more.push(Message::assistant("Done."));
        store
            .save(&SavedSession::new("s-1", Path::new("/ws"), &more))
            .unwrap();
        let loaded = store.load("s-1").unwrap();
        assert_eq!(loaded.messages, more);
        assert_eq!(loaded.cwd, Path::new("/ws"));
        assert!(matches!(store.load("s-2"), Err(StoreError::NotFound(_))));
    }

    #[test]
    fn ids_that_name_other_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        for bad in ["../x", "a/b", "", ".hidden", "x\0y"] {
            assert!(
                matches!(store.load(bad), Err(StoreError::BadId(_))),
                "{bad:?}"
            );
        }
        std::fs::write(dir.path().join("junk.json"), "{not json").unwrap();
        assert!(matches!(store.load("junk"), Err(StoreError::Format { .. })));
    }
}
