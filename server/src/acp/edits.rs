//! Where an ACP session's edits land. When the client can read and write text files
//! (`fs/read_text_file`, `fs/write_text_file`: the editor's buffers, unsaved changes
//! included), every file of a plan is first read through the client and compared with
//! the text the edit was computed on; if any differs (the user typed since the agent
//! read it) nothing is written and the model is told to read again. Only then is each
//! file written through the client. Plans that delete or move files, and clients
//! without both capabilities, go to the disk sink, which checks disk the same way.
//!
//! Every landed change is also recorded as an ACP diff for the running tool call's
//! update.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest,
};
use agentls_edit::{FileChange, Plan};
use agentls_tools::{EditSink, ToolError};
use async_trait::async_trait;

/// One landed change: path, text before (`None` for a new file), text after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landed {
    pub path: PathBuf,
    pub old_text: Option<String>,
    pub new_text: String,
}

/// Changes landed since the last [`Recorded::take`].
#[derive(Debug, Default, Clone)]
pub struct Recorded(Arc<Mutex<Vec<Landed>>>);

impl Recorded {
    fn push(&self, landed: Landed) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(landed);
    }

    /// Everything recorded so far, emptied.
    pub fn take(&self) -> Vec<Landed> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The sink of one ACP session.
pub struct ClientSink {
    /// The disk sink: plans the client cannot take, or every plan without a client fs.
    pub disk: Arc<dyn EditSink>,
    pub cx: ConnectionTo<Client>,
    /// The session id, set once the session is built.
    pub session: Arc<OnceLock<String>>,
    /// The client reads and writes text files.
    pub client_fs: bool,
    /// "Ask before edits": each plan waits for the user's permission.
    pub ask_edits: Arc<AtomicBool>,
    pub recorded: Recorded,
}

#[async_trait]
impl EditSink for ClientSink {
    async fn apply(&self, tool: &str, plan: Plan) -> Result<(), ToolError> {
        let Some(session) = self.session.get() else {
            return Err(ToolError::bug("edit before the session was built"));
        };
        if self.ask_edits.load(Ordering::Relaxed) && !self.allowed(session, &plan).await {
            return Err(ToolError::aborted(
                "the user did not allow this edit; nothing was changed. Ask what they want instead",
            ));
        }
        let through_client = self.client_fs
            && plan
                .changes
                .iter()
                .all(|c| matches!(c, FileChange::Edit(_) | FileChange::Create { .. }));
        if !through_client {
            let landed = landed_of(&plan);
            self.disk.apply(tool, plan).await?;
            for l in landed {
                self.recorded.push(l);
            }
            return Ok(());
        }
        let cx = &self.cx;
        // Every file checked before any is written: a stale plan lands nowhere.
        for change in &plan.changes {
            if let FileChange::Edit(t) = change {
                let now = read(cx, session, &t.path).await.map_err(|e| {
                    ToolError::environment(format!(
                        "{}: the editor could not read it ({e}); nothing was changed",
                        t.path.display()
                    ))
                })?;
                if t.base != now.as_str() {
                    return Err(ToolError::environment(format!(
                        "{}: changed in the editor since it was read; nothing was changed. Read it again and redo the edit",
                        t.path.display()
                    )));
                }
            }
        }
        let mut written: Vec<String> = Vec::new();
        for l in landed_of(&plan) {
            let request =
                WriteTextFileRequest::new(session.clone(), l.path.clone(), l.new_text.clone());
            if let Err(e) = cx.send_request(request).block_task().await {
                let done = if written.is_empty() {
                    "nothing was changed".to_owned()
                } else {
                    format!("already written: {}", written.join(", "))
                };
                return Err(ToolError::environment(format!(
                    "{}: the editor refused the write ({e}); {done}",
                    l.path.display()
                )));
            }
            written.push(l.path.display().to_string());
            self.recorded.push(l);
        }
        Ok(())
    }
}

impl ClientSink {
    /// Asks the user about `plan`, showing its diffs.
    async fn allowed(&self, session: &str, plan: &Plan) -> bool {
        let landed = landed_of(plan);
        let mut paths: Vec<String> = landed
            .iter()
            .map(|l| l.path.display().to_string())
            .collect();
        for c in &plan.changes {
            match c {
                FileChange::Delete { path } => paths.push(format!("delete {}", path.display())),
                FileChange::Rename { from, to } => {
                    paths.push(format!("move {} to {}", from.display(), to.display()))
                }
                _ => {}
            }
        }
        let call = serde_json::json!({
            "toolCallId": super::permission::request_id("edit"),
            "title": format!("Edit {}", paths.join(", ")),
            "kind": "edit",
            "content": landed.iter().map(|l| serde_json::json!({
                "type": "diff", "path": l.path, "oldText": l.old_text, "newText": l.new_text,
            })).collect::<Vec<_>>(),
            "locations": landed.iter().map(|l| serde_json::json!({ "path": l.path })).collect::<Vec<_>>(),
        });
        super::permission::ask(&self.cx, session, call).await
    }
}

/// The tools' reads through the client (`fs/read_text_file`): its buffers, unsaved
/// typing included.
pub struct ClientReads {
    pub cx: ConnectionTo<Client>,
    /// The session id, set once the session is built.
    pub session: Arc<OnceLock<String>>,
}

#[async_trait]
impl agentls_tools::ClientFiles for ClientReads {
    async fn read(&self, path: &std::path::Path) -> Result<String, String> {
        let session = self.session.get().ok_or("no session yet")?;
        read(&self.cx, session, path)
            .await
            .map_err(|e| e.to_string())
    }
}

async fn read(
    cx: &ConnectionTo<Client>,
    session: &str,
    path: &std::path::Path,
) -> Result<String, agent_client_protocol::Error> {
    let response: ReadTextFileResponse = cx
        .send_request(ReadTextFileRequest::new(
            session.to_owned(),
            path.to_path_buf(),
        ))
        .block_task()
        .await?;
    Ok(response.content)
}

/// The files a plan leaves changed, as diffs.
fn landed_of(plan: &Plan) -> Vec<Landed> {
    plan.changes
        .iter()
        .filter_map(|c| match c {
            FileChange::Edit(t) => Some(Landed {
                path: t.path.clone(),
                old_text: Some(t.base.to_string()),
                new_text: t.new_text.clone(),
            }),
            FileChange::Create { path, text } => Some(Landed {
                path: path.clone(),
                old_text: None,
                new_text: text.clone(),
            }),
            FileChange::Rename { .. } | FileChange::Delete { .. } => None,
        })
        .collect()
}
