//! How a run ended.

use agentls_protocol::agent::SessionStatus;
use serde::Serialize;

/// The outcome of [`crate::Session::run`]. Every outcome keeps the transcript, so a
/// session can go on after any of them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    /// The model answered without calling tools.
    Done {
        /// Its final text.
        answer: String,
    },
    /// A budget limit was reached.
    BudgetExhausted {
        /// Which: `steps`, `tokens` or `wall_time`.
        limit: String,
    },
    /// The user cancelled.
    Cancelled,
    /// The model provider failed (after its own retries).
    ProviderError {
        /// Class of the error (`ProviderError`, `Timeout`, …).
        class: String,
        /// The provider's message (keys redacted by the model layer).
        message: String,
    },
}

impl Status {
    /// A short label: `done`, `budget_exhausted`, `cancelled`, `provider_error`.
    pub fn label(&self) -> &'static str {
        match self {
            Status::Done { .. } => "done",
            Status::BudgetExhausted { .. } => "budget_exhausted",
            Status::Cancelled => "cancelled",
            Status::ProviderError { .. } => "provider_error",
        }
    }

    /// The protocol's status for this outcome and the message people are shown.
    pub fn outcome(&self) -> (SessionStatus, String) {
        match self {
            Status::Done { answer } => (SessionStatus::Done, answer.clone()),
            Status::BudgetExhausted { limit } => (
                SessionStatus::BudgetExhausted,
                format!("stopped: the {limit} budget is exhausted"),
            ),
            Status::Cancelled => (SessionStatus::Cancelled, "cancelled".to_owned()),
            Status::ProviderError { class, message } => (
                SessionStatus::Failed,
                format!("the model provider failed ({class}): {message}"),
            ),
        }
    }
}
