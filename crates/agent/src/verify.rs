//! Verify on edit: the session's language servers ([`agentls_lspclient`]) behind the
//! tools' [`Checker`] trait, and how the user configures them (`[verify]` and
//! `[language_servers.NAME]` in the user's config file; never the workspace's).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentls_lspclient::{Checked, LanguageServers, LanguageServersConfig};
use agentls_tools::{CheckResult, Checker, NavAnswer, NavAsk, NavQuery};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// `[verify]`: whether agentls runs the workspace's language servers, how long an edit
/// waits for their diagnostics, and whether warnings are shown after edits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct VerifyConfig {
    /// Run language servers at all (on by default).
    pub enabled: bool,
    /// The bounded wait for a server's diagnostics after an edit, in milliseconds.
    pub wait_ms: u64,
    /// List warnings after edits too, not only errors.
    pub warnings: bool,
    /// `[language_servers.NAME]`: overrides of the known servers, or new ones.
    #[serde(skip)]
    pub servers: LanguageServersConfig,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            wait_ms: 2000,
            warnings: false,
            servers: LanguageServersConfig::default(),
        }
    }
}

impl VerifyConfig {
    /// The bounded wait.
    pub fn wait(&self) -> Duration {
        Duration::from_millis(self.wait_ms)
    }
}

/// The language servers of a session, as the tools see them.
#[derive(Debug, Clone)]
pub struct LspChecker {
    servers: Arc<LanguageServers>,
    wait: Duration,
    warnings: bool,
}

impl LspChecker {
    /// Detects the servers for `root` (file types and `PATH`, blocking: a bounded walk)
    /// per `config`; `None` when disabled or when none is found.
    pub fn detect(root: &Path, config: &VerifyConfig) -> Option<Self> {
        if !config.enabled {
            return None;
        }
        let servers = LanguageServers::detect(root, &config.servers);
        if servers.is_empty() {
            return None;
        }
        Some(Self {
            servers: Arc::new(servers),
            wait: config.wait(),
            warnings: config.warnings,
        })
    }

    /// Starts every server in the background. Call from an async task.
    pub fn warm_up(&self) {
        self.servers.warm_up();
    }

    /// The servers.
    pub fn servers(&self) -> &Arc<LanguageServers> {
        &self.servers
    }
}

#[async_trait]
impl Checker for LspChecker {
    async fn check(&self, path: &Path, text: &str) -> CheckResult {
        match self.servers.check(path, text, self.wait).await {
            Checked::NoServer => CheckResult::NoServer,
            Checked::Problems {
                server,
                problems,
                took,
            } => {
                tracing::debug!("{server} checked {} in {took:?}", path.display());
                CheckResult::Problems {
                    server,
                    problems: problems
                        .into_iter()
                        .map(|p| {
                            let message = match p.source {
                                Some(source) => format!("{} [{source}]", p.message),
                                None => p.message,
                            };
                            (p.line as usize, p.severity.as_str().to_owned(), message)
                        })
                        .collect(),
                    took,
                }
            }
            Checked::Unavailable { server, why } => CheckResult::Unavailable { server, why },
        }
    }

    fn warnings_on_edit(&self) -> bool {
        self.warnings
    }

    async fn navigate(
        &self,
        path: &Path,
        text: &str,
        query: NavQuery,
    ) -> Option<Result<(String, NavAnswer), String>> {
        use agentls_lspclient::{Answer, Ask, Query};
        let query = Query {
            ask: match query.ask {
                NavAsk::Definition => Ask::Definition,
                NavAsk::References => Ask::References,
                NavAsk::Hover => Ask::Hover,
                NavAsk::Outline => Ask::Outline,
            },
            line: query.line,
            character: query.character,
        };
        // A question may be the server's first (its start and first analysis included),
        // so it gets longer than an edit's check.
        let wait = self.wait.max(NAV_WAIT);
        let answered = self.servers.navigate(path, text, &query, wait).await;
        let (server, answer) = match answered {
            Ok(None) => return None,
            Ok(Some(a)) => a,
            Err(why) => return Some(Err(why)),
        };
        let answer = match answer {
            Answer::Places(places) => {
                NavAnswer::Places(places.into_iter().map(|p| (p.path, p.line)).collect())
            }
            Answer::Hover(text) => NavAnswer::Hover(text),
            Answer::Outline(entries) => NavAnswer::Outline(
                entries
                    .into_iter()
                    .map(|e| (e.name, e.kind.to_owned(), e.line, e.depth))
                    .collect(),
            ),
        };
        Some(Ok((server, answer)))
    }
}

/// The least a navigation question waits for its answer.
const NAV_WAIT: Duration = Duration::from_secs(10);
