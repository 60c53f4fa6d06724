//! Errors of the model layer, classified in the project-wide taxonomy.

use std::time::Duration;

/// The project-wide error classes (see DESIGN.md, "Tool errors are data").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The caller asked for something impossible (unknown model, bad config).
    InvalidArguments,
    /// The environment is not as needed (missing API key variable).
    UnexpectedEnvironment,
    /// The provider refused or failed (HTTP errors, error events, broken streams).
    ProviderError,
    /// The user cancelled.
    UserAborted,
    /// No answer in time.
    Timeout,
    /// A bug of ours.
    Unknown,
}

/// A failed model call. `message` keeps the provider's own words (with any API key
/// redacted) so the user sees what the provider said.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{class:?}: {message}")]
pub struct ModelError {
    /// Class in the project taxonomy.
    pub class: ErrorClass,
    /// Human-readable message, provider text included.
    pub message: String,
    /// HTTP status, when the provider answered with one.
    pub status: Option<u16>,
    /// Delay the provider asked for before retrying.
    pub retry_after: Option<Duration>,
    /// Whether a retry may succeed (429, 5xx, connect errors, timeouts).
    pub retryable: bool,
}

impl ModelError {
    /// A new error of `class`, not retryable.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
            status: None,
            retry_after: None,
            retryable: false,
        }
    }

    /// A provider error.
    pub fn provider(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::ProviderError, message)
    }

    /// The user cancelled.
    pub fn aborted() -> Self {
        Self::new(ErrorClass::UserAborted, "the request was cancelled")
    }

    /// A timeout (always retryable).
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Timeout, message).retryable(true)
    }

    /// Sets whether a retry may help.
    pub fn retryable(mut self, yes: bool) -> Self {
        self.retryable = yes;
        self
    }

    /// An HTTP error answer: 408/409/429/5xx are retryable.
    pub fn http(status: u16, provider_message: &str, retry_after: Option<Duration>) -> Self {
        let retryable = matches!(status, 408 | 409 | 429) || status >= 500;
        let class = if status == 408 || status == 504 {
            ErrorClass::Timeout
        } else {
            ErrorClass::ProviderError
        };
        Self {
            class,
            message: format!("HTTP {status}: {}", provider_message.trim()),
            status: Some(status),
            retry_after,
            retryable,
        }
    }
}
