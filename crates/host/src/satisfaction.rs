//! Satisfaction (`[stats] satisfaction = true`; off by default): when the user's prompt
//! arrives in a session whose previous turn was the agent's (an editor panel's
//! `agent/prompt`, an ACP `session/prompt` on a session that already answered), one
//! model call judges how the message reads after that turn (continues, corrects,
//! rejects, frustrated; see `agentls_stats::satisfaction`) and the label is stored for
//! `agentls stats`, with the model whose turn it judged.
//!
//! The judgement runs in a task of its own: it never delays nor fails the user's run,
//! and a classifier that fails or answers nonsense is a warning in the log, nothing
//! stored. Under `[stats] privacy` (the default) only the label is stored; with it off,
//! the classifier's short reason too. The agent's answer and the user's message go to
//! the classifier model, never to the database.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentls_model::{
    CancellationToken, ChatRequest, ClientOptions, Message, ModelsConfig, Part, Provider, Role,
};
use agentls_stats::SatisfactionRecord;
use agentls_stats::satisfaction::{SYSTEM_PROMPT, parse, request_text};
use tokio::task::JoinHandle;

use crate::config::StatsSettings;

/// The longest a judgement may take before it is given up (a warning).
const TIMEOUT: Duration = Duration::from_secs(120);

/// What judging needs from the settings: where to store, which model, what to keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judge {
    db: PathBuf,
    model: Option<String>,
    privacy: bool,
}

impl Judge {
    /// The judge of these settings; `None` when satisfaction is off or runs are not
    /// recorded (`db` is the stats database, `None` when recording is off).
    pub fn new(settings: &StatsSettings, db: Option<PathBuf>) -> Option<Self> {
        if !settings.satisfaction {
            return None;
        }
        Some(Self {
            db: db?,
            model: settings.satisfaction_model.clone(),
            privacy: settings.privacy,
        })
    }

    /// The model that judges a turn of `agent_model`: `satisfaction_model`, else the
    /// first configured local model when this build has the embedded engine, else the
    /// agent's own model (the router's fast one for `auto`).
    pub fn model_for(&self, models: &ModelsConfig, agent_model: &str) -> String {
        if let Some(m) = &self.model {
            return m.clone();
        }
        if agentls_model::local::is_registered()
            && let Some((name, _)) = models.models.iter().find(|(_, m)| !m.wire.is_http())
        {
            return name.clone();
        }
        if agent_model == "auto"
            && let Some(r) = &models.router
        {
            return r.fast.clone();
        }
        agent_model.to_owned()
    }

    /// Judges `message`, the user's prompt in `session`, if the previous turn of
    /// `transcript` (the conversation before it) was the agent's, by `agent_model`.
    /// Returns at once; the judgement's task, when one started.
    pub fn follow_up(
        &self,
        models: ModelsConfig,
        session: &str,
        agent_model: &str,
        transcript: &[Message],
        message: &str,
    ) -> Option<JoinHandle<()>> {
        let answer = last_answer(transcript)?;
        let name = self.model_for(&models, agent_model);
        let text = request_text(&answer, message);
        let judge = self.clone();
        let record = SatisfactionRecord {
            session_id: session.to_owned(),
            model: agent_model.to_owned(),
            ..SatisfactionRecord::default()
        };
        Some(tokio::spawn(async move {
            if let Err(e) = judge.judge(models, name, text, record).await {
                tracing::warn!("satisfaction not recorded: {e}");
            }
        }))
    }

    async fn judge(
        self,
        models: ModelsConfig,
        name: String,
        text: String,
        mut record: SatisfactionRecord,
    ) -> Result<(), String> {
        // Off the async threads: a local model loads its weights the first time.
        let provider: Arc<dyn Provider> = tokio::task::spawn_blocking({
            let name = name.clone();
            move || {
                models
                    .provider(&name, ClientOptions::default(), |k| std::env::var(k).ok())
                    .map_err(|e| e.to_string())
            }
        })
        .await
        .map_err(|e| e.to_string())??;
        let req = ChatRequest::new(Some(SYSTEM_PROMPT.to_owned()), text);
        let cancel = CancellationToken::new();
        let answer = tokio::time::timeout(
            TIMEOUT,
            agentls_model::collect(provider.stream(&req, cancel.clone())),
        )
        .await;
        cancel.cancel();
        let answer = match answer {
            Ok(Ok(a)) => a.text,
            Ok(Err(e)) => return Err(format!("classifier {name}: {e}")),
            Err(_) => return Err(format!("classifier {name}: no answer in {TIMEOUT:?}")),
        };
        let verdict = parse(&answer).map_err(|e| format!("classifier {name}: {e}"))?;
        record.label = verdict.label.as_str().to_owned();
        record.reason = if self.privacy { None } else { verdict.reason };
        record.at_ms = agentls_stats::now_ms();
        let db = self.db;
        tokio::task::spawn_blocking(move || {
            agentls_stats::StatsDb::open(&db)?.record_satisfaction(&record)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
    }
}

/// The agent's last answer in `transcript`: its last text since the user last wrote
/// (a placeholder when it only called tools), or `None` when the agent has not had a
/// turn since.
fn last_answer(transcript: &[Message]) -> Option<String> {
    let since = transcript
        .iter()
        .rposition(|m| {
            m.role == Role::User && !m.parts.iter().any(|p| matches!(p, Part::ToolResult(_)))
        })
        .map_or(0, |i| i + 1);
    let turn = &transcript[since..];
    if !turn.iter().any(|m| m.role == Role::Assistant) {
        return None;
    }
    let text = turn
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .map(Message::text)
        .find(|t| !t.trim().is_empty());
    Some(text.map_or_else(
        || "(no text: the agent only called tools)".to_owned(),
        |t| t.trim().to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use agentls_testkit::model_server::{ModelServer, Turn};

    use super::*;

    fn settings(on: bool, privacy: bool) -> StatsSettings {
        StatsSettings {
            satisfaction: on,
            privacy,
            ..StatsSettings::default()
        }
    }

    fn models(url: &str) -> ModelsConfig {
        ModelsConfig::from_toml(&format!(
            "[models.fixture]\nwire = \"openai_chat\"\nbase_url = \"{url}\"\n\
             [models.judge]\nwire = \"openai_chat\"\nbase_url = \"{url}\"\n"
        ))
        .unwrap()
    }

    #[test]
    fn off_by_default_and_without_a_database() {
        assert_eq!(
            Judge::new(&StatsSettings::default(), Some("/x".into())),
            None
        );
        assert_eq!(Judge::new(&settings(true, true), None), None);
        assert!(Judge::new(&settings(true, true), Some("/x".into())).is_some());
    }

    #[test]
    fn the_model_is_the_configured_one_else_the_agent_s() {
        let m = models("http://127.0.0.1:1/v1");
        let mut s = settings(true, true);
        let judge = Judge::new(&s, Some("/x".into())).unwrap();
        // This test binary has no embedded engine registered.
        assert_eq!(judge.model_for(&m, "fixture"), "fixture");
        s.satisfaction_model = Some("judge".into());
        let judge = Judge::new(&s, Some("/x".into())).unwrap();
        assert_eq!(judge.model_for(&m, "fixture"), "judge");
    }

    #[test]
    fn only_a_session_the_agent_answered_is_judged() {
        assert_eq!(last_answer(&[]), None);
        assert_eq!(last_answer(&[Message::user("hi")]), None);
        let t = [
            Message::user("do it"),
            Message::assistant("First answer."),
            Message::user("more"),
            Message::assistant("Done: add adds."),
        ];
        assert_eq!(last_answer(&t).as_deref(), Some("Done: add adds."));
        let calls_only = [
            Message::user("do it"),
            Message::assistant_calls(None, Vec::new()),
        ];
        assert!(
            last_answer(&calls_only)
                .unwrap()
                .contains("only called tools")
        );
    }

    #[tokio::test]
    async fn a_judgement_is_stored_with_the_agent_s_model_and_privacy_drops_the_reason() {
        for privacy in [true, false] {
            let server = ModelServer::start().await.unwrap();
            server.push_turn(Turn::text(
                "Here you go:\n```json\n{\"label\": \"corrects\", \"reason\": \"it panics\"}\n```",
            ));
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("s.sqlite3");
            let mut s = settings(true, privacy);
            s.satisfaction_model = Some("judge".into());
            let judge = Judge::new(&s, Some(db.clone())).unwrap();
            let transcript = [Message::user("add"), Message::assistant("Done.")];
            judge
                .follow_up(
                    models(&server.url()),
                    "s1",
                    "fixture",
                    &transcript,
                    "wrong, it panics",
                )
                .unwrap()
                .await
                .unwrap();
            let body = server.requests()[0].body.to_string();
            assert!(body.contains("wrong, it panics") && body.contains("frustrated"));
            assert!(body.contains("\"model\":\"judge\""), "{body}");
            let rows = agentls_stats::StatsDb::open(&db)
                .unwrap()
                .satisfactions(None, None)
                .unwrap();
            assert_eq!(rows.len(), 1);
            assert_eq!(
                (rows[0].model.as_str(), rows[0].label.as_str()),
                ("fixture", "corrects")
            );
            let reason = (!privacy).then(|| "it panics".to_owned());
            assert_eq!(rows[0].reason, reason);
        }
    }

    #[tokio::test]
    async fn a_nonsense_answer_stores_nothing() {
        let server = ModelServer::start().await.unwrap();
        server.push_turn(Turn::text("{\"label\": \"delighted\"}"));
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.sqlite3");
        let judge = Judge::new(&settings(true, true), Some(db.clone())).unwrap();
        judge
            .follow_up(
                models(&server.url()),
                "s1",
                "fixture",
                &[Message::assistant("Done.")],
                "ok",
            )
            .unwrap()
            .await
            .unwrap();
        assert_eq!(server.requests().len(), 1);
        assert!(!db.exists(), "nothing recorded, not even the database");
    }
}
