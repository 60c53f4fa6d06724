//! [`Problem`]: one diagnostic of a language server as plain data, what this crate hands
//! out, so the tools know nothing of LSP.

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Breaks the build or the type check.
    Error,
    /// Suspicious.
    Warning,
    /// For information.
    Information,
    /// A hint.
    Hint,
}

impl Severity {
    /// `error`, `warning`, `info` or `hint`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic of a language server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based line.
    pub line: u32,
    /// Its severity.
    pub severity: Severity,
    /// The server's message.
    pub message: String,
    /// The checker that found it (`pyflakes`, `rustc`, ...), when the server says.
    pub source: Option<String>,
}
