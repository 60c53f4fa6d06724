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
    /// The model name it ran on, when the front end keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its mode (`agent`, `ask`, `plan`), when the front end keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What the front end keeps with the session besides the conversation (the
    /// editor's changes pending review), in the front end's own format.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub front_end: serde_json::Value,
}

/// How long saved sessions are kept: `[sessions]` in the user config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Sessions not updated for this long are removed.
    pub max_age: std::time::Duration,
    /// Past this many bytes in all, the least recently updated are removed.
    pub max_bytes: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_age: std::time::Duration::from_secs(30 * 24 * 3600),
            max_bytes: 256 * 1024 * 1024,
        }
    }
}

/// What [`SessionStore::prune`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Ids removed for their age.
    pub expired: Vec<String>,
    /// Ids removed to bring the store under its size.
    pub evicted: Vec<String>,
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

impl SessionStore {
    /// The ids of every saved session, with the file's size and last write, least
    /// recently written first. Files that are not sessions are passed over.
    fn files(&self) -> Vec<(String, u64, std::time::SystemTime)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<_> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?;
                self.path(id).ok()?;
                // Never follow a link planted in the directory.
                let meta = e.path().symlink_metadata().ok()?;
                meta.is_file()
                    .then(|| (id.to_owned(), meta.len(), meta.modified().ok()))
                    .and_then(|(id, len, at)| Some((id, len, at?)))
            })
            .collect();
        out.sort_by_key(|(id, _, at)| (*at, id.clone()));
        out
    }

    /// Every saved session whose workspace is `cwd`, most recently updated first.
    /// Files that do not load are logged and passed over.
    pub fn list_in(&self, cwd: &Path) -> Vec<SavedSession> {
        let mut out: Vec<SavedSession> = self
            .files()
            .into_iter()
            .filter_map(|(id, _, _)| match self.load(&id) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!("saved session passed over: {e}");
                    None
                }
            })
            .filter(|s| s.cwd == cwd)
            .collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
        out
    }

    /// Removes sessions past `retention`'s age, then the least recently written until
    /// the rest fit its size; never one of `keep` (the sessions in use). Leftover
    /// temporary files of interrupted saves go too.
    pub fn prune(&self, retention: Retention, keep: &[&str]) -> Pruned {
        let now = std::time::SystemTime::now();
        let mut pruned = Pruned::default();
        let remove = |id: &str| match self.path(id).map(std::fs::remove_file) {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::warn!("{}: not removed: {e}", self.dir.display());
                false
            }
            Err(_) => false,
        };
        let mut kept = Vec::new();
        for (id, len, at) in self.files() {
            let age = now.duration_since(at).unwrap_or_default();
            if age > retention.max_age && !keep.contains(&id.as_str()) && remove(&id) {
                pruned.expired.push(id);
            } else {
                kept.push((id, len));
            }
        }
        let mut total: u64 = kept.iter().map(|(_, len)| len).sum();
        for (id, len) in kept {
            if total <= retention.max_bytes {
                break;
            }
            if !keep.contains(&id.as_str()) && remove(&id) {
                total -= len;
                pruned.evicted.push(id);
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let stale = e.file_name().to_str().is_some_and(|n| n.ends_with(".tmp"))
                    && e.metadata()
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .is_some_and(|at| {
                            now.duration_since(at).unwrap_or_default().as_secs() > 3600
                        });
                if stale {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        pruned
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
            model: None,
            mode: None,
            front_end: serde_json::Value::Null,
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

    fn set_age(store: &SessionStore, id: &str, days: u64) {
        let at = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 24 * 3600);
        let f = std::fs::File::options()
            .write(true)
            .open(store.dir().join(format!("{id}.json")))
            .unwrap();
        f.set_modified(at).unwrap();
    }

    #[test]
    fn old_sessions_expire_and_the_oldest_go_when_the_store_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let big = Message::user("x".repeat(10_000));
        for (id, days) in [
            ("old", 40),
            ("older-kept", 50),
            ("a", 3),
            ("b", 2),
            ("c", 1),
        ] {
            store
                .save(&SavedSession::new(
                    id,
                    Path::new("/ws"),
                    std::slice::from_ref(&big),
                ))
                .unwrap();
            set_age(&store, id, days);
        }
        std::fs::write(dir.path().join("notes.txt"), "not a session").unwrap();
        let retention = Retention {
            max_age: std::time::Duration::from_secs(30 * 24 * 3600),
            max_bytes: 25_000,
        };
        let pruned = store.prune(retention, &["older-kept"]);
        assert_eq!(pruned.expired, ["old"]);
        // Three of ~10 KB each over 25 KB, with one kept whatever its age: the least
        // recently written of the others goes.
        assert_eq!(pruned.evicted, ["a", "b"]);
        assert!(store.load("c").is_ok() && store.load("older-kept").is_ok());
        assert!(
            dir.path().join("notes.txt").exists(),
            "not ours, not touched"
        );
        assert_eq!(store.prune(retention, &["older-kept"]), Pruned::default());
    }

    #[test]
    fn listing_gives_a_workspace_s_sessions_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut first = SavedSession::new("one", Path::new("/ws"), &[Message::user("first")]);
        first.updated_ms = 1;
        let mut second = SavedSession::new("two", Path::new("/ws"), &[Message::user("second")]);
        second.updated_ms = 2;
        second.front_end = serde_json::json!({"pending": []});
        let other = SavedSession::new("three", Path::new("/elsewhere"), &[]);
        for s in [&first, &second, &other] {
            store.save(s).unwrap();
        }
        std::fs::write(dir.path().join("broken.json"), "{").unwrap();
        let listed = store.list_in(Path::new("/ws"));
        let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["two", "one"]);
        assert_eq!(listed[0].front_end, second.front_end);
    }
}
