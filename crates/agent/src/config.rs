//! What a session is set up with: its mode, its budget, its limits.

use std::time::Duration;

use serde::Serialize;

/// What the agent may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Read, edit, run: the whole tool set.
    #[default]
    Agent,
    /// Read-only: mutating tools are not offered (and refused if called anyway).
    Ask,
    /// Read-only, and the answer is a plan rather than changes.
    Plan,
}

impl Mode {
    /// Whether mutating tools may run.
    pub fn allows_writes(self) -> bool {
        self == Mode::Agent
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "agent" => Ok(Mode::Agent),
            "ask" => Ok(Mode::Ask),
            "plan" => Ok(Mode::Plan),
            other => Err(format!("unknown mode {other:?}: agent, ask or plan")),
        }
    }
}

/// Limits of one session; the loop stops (with [`crate::Status::BudgetExhausted`]) at the
/// first one reached, checked before each model call.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    /// Model calls.
    pub max_steps: u32,
    /// Tokens in plus out, summed over calls.
    pub max_tokens: u64,
    /// Wall time since the session started.
    pub max_wall: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_steps: 100,
            max_tokens: 5_000_000,
            max_wall: Duration::from_secs(60 * 60),
        }
    }
}

/// When and how the transcript is compacted.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionConfig {
    /// Compact when the estimated prompt exceeds this fraction of the context window.
    pub threshold: f32,
    /// Messages at the end of the transcript that are never masked nor summarised.
    pub keep_recent: usize,
    /// Tool outputs shorter than this (bytes) are not worth masking.
    pub min_mask_bytes: usize,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            threshold: 0.7,
            keep_recent: 6,
            min_mask_bytes: 400,
        }
    }
}

/// Everything a session is configured with, apart from its collaborators.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// Mode.
    pub mode: Mode,
    /// Budget.
    pub budget: Budget,
    /// Longest a single tool call may run before it is answered with a Timeout.
    pub tool_timeout: Duration,
    /// Compaction settings.
    pub compaction: CompactionConfig,
    /// The project's check command (see [`crate::final_check::detect`]): run once
    /// before a run ends when the model edited files and ran nothing since; a failure
    /// goes back to the model. `None`: no final check.
    pub final_check: Option<String>,
    /// How the small-model pipeline samples (used when the model's profile takes it:
    /// [`crate::solve`]).
    pub solve: crate::solve::SolveConfig,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            mode: Mode::Agent,
            budget: Budget::default(),
            tool_timeout: Duration::from_secs(600),
            compaction: CompactionConfig::default(),
            final_check: None,
            solve: crate::solve::SolveConfig::default(),
        }
    }
}
