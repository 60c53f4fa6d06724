//! The workspace's own language servers, run as children so the agent sees the type
//! errors its edits make (issue 17).
//!
//! [`LanguageServers::detect`] looks at the file types present in the workspace and at
//! `PATH` (the user's `[language_servers.NAME]` tables override or disable entries, see
//! [`config`]); [`LanguageServers::check`] sends a file's live text to the server for its
//! type (starting it on first use, restarting it once after a crash) and waits a bounded
//! time for the diagnostics of exactly that text.
//!
//! **Invariants.** A check never waits longer than its bound, whatever the child does
//! (hangs, floods, dies). Children die with agentls (process group, parent-death
//! signal). Nothing here writes files: the children get text, never paths to write. This
//! crate speaks LSP to the children; what it hands out ([`Problem`]) is plain data, so
//! the tools know nothing of LSP.
//!
//! ```no_run
//! # async fn demo() {
//! use std::time::Duration;
//! let root = std::path::Path::new("/work/project");
//! let servers = agentls_lspclient::LanguageServers::detect(root, &Default::default());
//! let checked = servers
//!     .check(&root.join("main.py"), "print(undefined_name)\n", Duration::from_secs(2))
//!     .await;
//! # let _ = checked;
//! # }
//! ```

mod child;
pub mod config;
mod detect;
mod framing;
pub mod navigate;
mod problem;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use child::{Child, Outcome};
pub use config::{LanguageServersConfig, ServerOverride, ServerSpec};
pub use detect::Found;
pub use navigate::{Answer, Ask, OutlineEntry, Place, Query};
pub use problem::{Problem, Severity};

/// The result of [`LanguageServers::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// No server checks this file type here.
    NoServer,
    /// `server` answered for this text after `took`.
    Problems {
        /// The server's name.
        server: String,
        /// What it found.
        problems: Vec<Problem>,
        /// From sending the text to its diagnostics.
        took: Duration,
    },
    /// `server` did not answer in time, could not start, or died: `why`.
    Unavailable {
        /// The server's name.
        server: String,
        /// Worded for the model.
        why: String,
    },
}

/// A server slot: started on first use, restarted once after a crash.
struct Slot {
    found: Found,
    child: Option<Arc<Child>>,
    starts: u32,
    /// Why the last start failed, to say so without retrying forever.
    failed: Option<String>,
}

/// The language servers of one workspace.
pub struct LanguageServers {
    root: PathBuf,
    /// The slots' specs, in slot order: read without taking a slot's lock, which a
    /// starting server holds.
    specs: Vec<ServerSpec>,
    slots: Vec<tokio::sync::Mutex<Slot>>,
}

impl std::fmt::Debug for LanguageServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanguageServers")
            .field("root", &self.root)
            .field("servers", &self.slots.len())
            .finish()
    }
}

/// How long a server may take to start and answer `initialize` (rust-analyzer loads
/// the crate graph first); a check waiting on it is still bounded by its own wait.
const START_WAIT: Duration = Duration::from_secs(60);

impl LanguageServers {
    /// The servers for the file types in `root` whose program is on `PATH`: one per file
    /// type, the first in [`config::known`] order. Walks at most a few thousand files.
    pub fn detect(root: &Path, config: &LanguageServersConfig) -> Self {
        let path_var = std::env::var_os("PATH");
        let found = detect::find(root, &config::merged(config), path_var.as_deref());
        Self::with(root, found)
    }

    /// Exactly these servers (tests, `doctor`).
    pub fn with(root: &Path, found: Vec<Found>) -> Self {
        Self {
            root: root.to_path_buf(),
            specs: found.iter().map(|f| f.spec.clone()).collect(),
            slots: found
                .into_iter()
                .map(|found| {
                    tokio::sync::Mutex::new(Slot {
                        found,
                        child: None,
                        starts: 0,
                        failed: None,
                    })
                })
                .collect(),
        }
    }

    /// The servers found, whether started or not.
    pub fn specs(&self) -> &[ServerSpec] {
        &self.specs
    }

    /// Whether no server was found.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Starts every server now, in the background, so the first check does not pay for
    /// the start. Call from an async task (see [`Child`] on why).
    pub fn warm_up(self: &Arc<Self>) {
        for i in 0..self.slots.len() {
            let this = self.clone();
            tokio::spawn(async move {
                if let Some(slot) = this.slots.get(i) {
                    let mut slot = slot.lock().await;
                    let _ = this.running(&mut slot).await;
                }
            });
        }
    }

    /// Starts every server now and waits for each to answer `initialize` (`doctor`):
    /// per server, how long that took, or why it failed.
    pub async fn start_all(&self) -> Vec<(String, Result<Duration, String>)> {
        let mut out = Vec::new();
        for slot in &self.slots {
            let mut slot = slot.lock().await;
            let started = Instant::now();
            let result = self.running(&mut slot).await.map(|_| started.elapsed());
            out.push((slot.found.spec.name.clone(), result));
        }
        out
    }

    /// The servers found, with their programs.
    pub async fn found(&self) -> Vec<Found> {
        let mut out = Vec::new();
        for slot in &self.slots {
            out.push(slot.lock().await.found.clone());
        }
        out
    }

    /// The running child of `slot`, starting it (or restarting it once after a crash).
    async fn running(&self, slot: &mut Slot) -> Result<Arc<Child>, String> {
        if let Some(child) = &slot.child {
            if !child.is_dead() {
                return Ok(child.clone());
            }
            tracing::warn!("{} exited", slot.found.spec.name);
            slot.child = None;
            slot.failed = Some("it exited".to_owned());
        }
        // One start and one restart: a server that keeps crashing is left alone.
        if slot.starts >= 2 {
            return Err(format!(
                "{} is not running ({})",
                slot.found.spec.name,
                slot.failed.as_deref().unwrap_or("gave up")
            ));
        }
        slot.starts += 1;
        let started = Instant::now();
        match Child::start(
            &slot.found.spec,
            &slot.found.program,
            &self.root,
            START_WAIT,
        )
        .await
        {
            Ok(child) => {
                tracing::info!(
                    "{} started in {:?} (pid {:?})",
                    slot.found.spec.name,
                    started.elapsed(),
                    child.pid()
                );
                slot.child = Some(child.clone());
                slot.failed = None;
                Ok(child)
            }
            Err(e) => {
                let why = format!("{} could not start: {e}", slot.found.spec.name);
                tracing::warn!("{why}");
                slot.failed = Some(e.to_string());
                Err(why)
            }
        }
    }

    /// Checks `path` with `text` (the editor's buffer or the agent's edited text): the
    /// server for its type gets the text and `wait` bounds everything, the server's
    /// start included.
    pub async fn check(&self, path: &Path, text: &str, wait: Duration) -> Checked {
        let started = Instant::now();
        let Some(i) = self
            .specs
            .iter()
            .position(|s| config::for_path(std::slice::from_ref(s), path).is_some())
        else {
            return Checked::NoServer;
        };
        let Some(slot) = self.slots.get(i) else {
            return Checked::NoServer;
        };
        let attempt = async {
            let mut slot = slot.lock().await;
            let name = slot.found.spec.name.clone();
            let child = self.running(&mut slot).await;
            drop(slot);
            match child {
                Ok(child) => (name, Ok(child.check(path, text, wait).await)),
                Err(why) => (name, Err(why)),
            }
        };
        let name = self
            .specs
            .get(i)
            .map_or_else(String::new, |s| s.name.clone());
        match tokio::time::timeout(wait, attempt).await {
            Ok((server, Ok(Outcome::Published(problems)))) => Checked::Problems {
                server,
                problems,
                took: started.elapsed(),
            },
            Ok((server, Ok(Outcome::TimedOut))) => Checked::Unavailable {
                why: format!("{server} gave no diagnostics within {wait:?}"),
                server,
            },
            Ok((server, Ok(Outcome::Dead))) => Checked::Unavailable {
                why: format!("{server} exited while checking"),
                server,
            },
            Ok((server, Ok(Outcome::Unhealthy(said)))) => Checked::Unavailable {
                why: format!(
                    "{server} reports it is broken (\"{said}\"), so its diagnostics cannot be trusted"
                ),
                server,
            },
            Ok((server, Ok(Outcome::Loading))) => Checked::Unavailable {
                why: loading(&server, wait),
                server,
            },
            Ok((server, Err(why))) => Checked::Unavailable { server, why },
            // The outer bound fired first (by a hair, when the server was running): say
            // what the server was doing.
            Err(_) => {
                let child = slot.try_lock().ok().and_then(|s| s.child.clone());
                let why = match child {
                    Some(c) if c.is_loading() => loading(&name, wait),
                    Some(_) => format!("{name} gave no diagnostics within {wait:?}"),
                    None => format!("{name} was still starting after {wait:?}"),
                };
                Checked::Unavailable { why, server: name }
            }
        }
    }

    /// Asks the server for `path`'s type `query` about `text` (the file as the agent
    /// sees it), waiting at most `wait`, its start included: the server's name and its
    /// answer, or why there is none. `Ok(None)`: no server for this file type.
    pub async fn navigate(
        &self,
        path: &Path,
        text: &str,
        query: &Query,
        wait: Duration,
    ) -> Result<Option<(String, Answer)>, String> {
        let Some(i) = self
            .specs
            .iter()
            .position(|s| config::for_path(std::slice::from_ref(s), path).is_some())
        else {
            return Ok(None);
        };
        let (Some(slot), Some(spec)) = (self.slots.get(i), self.specs.get(i)) else {
            return Ok(None);
        };
        let name = spec.name.clone();
        let attempt = async {
            let mut slot = slot.lock().await;
            let child = self.running(&mut slot).await;
            drop(slot);
            child?.navigate(path, text, query).await
        };
        match tokio::time::timeout(wait, attempt).await {
            Ok(Ok(answer)) => Ok(Some((name, answer))),
            Ok(Err(why)) => Err(why),
            Err(_) => Err(format!("{name} gave no answer within {wait:?}")),
        }
    }

    /// The running children: name, pid and resident memory in KiB.
    pub async fn children(&self) -> Vec<(String, Option<u32>, Option<u64>)> {
        let mut out = Vec::new();
        for slot in &self.slots {
            let slot = slot.lock().await;
            if let Some(child) = slot.child.as_ref().filter(|c| !c.is_dead()) {
                out.push((slot.found.spec.name.clone(), child.pid(), child.rss_kib()));
            }
        }
        out
    }
}

/// Why a check has no answer while `server` loads the workspace.
fn loading(server: &str, wait: Duration) -> String {
    format!(
        "{server} was still loading the workspace after {wait:?}; its diagnostics would speak of a half-loaded project"
    )
}
