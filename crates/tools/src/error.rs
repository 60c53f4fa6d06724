//! Tool failures, split by audience: what the model reads and can act on, classified in
//! the project's taxonomy.

pub use agentls_model::ErrorClass;

/// A failed tool call. `message` is written for the model: what failed, and what to do
/// instead (nearest lines, candidate line numbers, the right argument).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// The class it is counted under in metrics.
    pub class: ErrorClass,
    /// The model-readable explanation.
    pub message: String,
}

impl ToolError {
    /// The model passed arguments that are wrong (missing, mistyped, not matching).
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::InvalidArguments,
            message: message.into(),
        }
    }

    /// The workspace or machine is not as the call needs (file missing, not readable).
    pub fn environment(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::UnexpectedEnvironment,
            message: message.into(),
        }
    }

    /// The call ran out of time.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::Timeout,
            message: message.into(),
        }
    }

    /// The user cancelled (or refused an approval).
    pub fn aborted(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::UserAborted,
            message: message.into(),
        }
    }

    /// A model call made by the tool (a subagent, say) failed.
    pub fn provider(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::ProviderError,
            message: message.into(),
        }
    }

    /// A bug of ours. The model is told the tool failed; the message goes to the log.
    pub fn bug(message: impl Into<String>) -> Self {
        Self {
            class: ErrorClass::Unknown,
            message: message.into(),
        }
    }
}
