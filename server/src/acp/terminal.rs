//! The client's terminals (`terminal/*`): where a command the policy asks about runs
//! when the user answers "Run in my terminal". It runs outside the sandbox, in the
//! user's view; the agent waits for it to exit, reads its output and releases it.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, TerminalOutputRequest,
    WaitForTerminalExitRequest,
};
use agentls_model::CancellationToken;
use agentls_tools::{TerminalRun, UserTerminal};
use async_trait::async_trait;

/// Most output the client keeps for the agent (it drops the start beyond this).
const OUTPUT_LIMIT: u64 = 64 * 1024;

/// The terminals of one ACP session's client.
pub struct ClientTerminal {
    pub cx: ConnectionTo<Client>,
    /// The session id, set once the session is built.
    pub session: Arc<OnceLock<String>>,
}

#[async_trait]
impl UserTerminal for ClientTerminal {
    async fn run(
        &self,
        command: &str,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> Result<TerminalRun, String> {
        let session = self.session.get().ok_or("no session yet")?.clone();
        let created = self
            .cx
            .send_request(
                CreateTerminalRequest::new(session.clone(), "bash")
                    .args(vec!["-c".to_owned(), command.to_owned()])
                    .cwd(cwd.to_path_buf())
                    .output_byte_limit(OUTPUT_LIMIT),
            )
            .block_task()
            .await
            .map_err(|e| format!("terminal/create failed: {e}"))?;
        let id = created.terminal_id;
        let waited = {
            let wait = self
                .cx
                .send_request(WaitForTerminalExitRequest::new(session.clone(), id.clone()))
                .block_task();
            tokio::select! {
                r = wait => Some(r),
                () = cancel.cancelled() => None,
            }
        };
        if waited.is_none() {
            let killed = self
                .cx
                .send_request(KillTerminalRequest::new(session.clone(), id.clone()))
                .block_task()
                .await;
            if let Err(e) = killed {
                tracing::warn!("acp: terminal/kill failed: {e}");
            }
        }
        let output = self
            .cx
            .send_request(TerminalOutputRequest::new(session.clone(), id.clone()))
            .block_task()
            .await;
        // Released whatever happened above: the client frees it, its view may stay.
        let released = self
            .cx
            .send_request(ReleaseTerminalRequest::new(session, id))
            .block_task()
            .await;
        if let Err(e) = released {
            tracing::warn!("acp: terminal/release failed: {e}");
        }
        let output = output.map_err(|e| format!("terminal/output failed: {e}"))?;
        let status = match waited {
            Some(Ok(r)) => Some(r.exit_status),
            Some(Err(e)) => return Err(format!("terminal/wait_for_exit failed: {e}")),
            None => output.exit_status.clone(),
        };
        Ok(TerminalRun {
            output: output.output,
            truncated: output.truncated,
            exit_code: status.as_ref().and_then(|s| s.exit_code),
            signal: status.and_then(|s| s.signal),
        })
    }
}
