//! [`Wire`]: which of the four formats a request speaks, read from its path; what the
//! server, its renderer and its pairing check all go by.

/// The wire format of a request, from its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// `…/chat/completions`.
    Chat,
    /// `…/responses`.
    Responses,
    /// `…/messages`.
    Anthropic,
    /// `…/completions` (not `…/chat/completions`): OpenAI's legacy completions, with
    /// `prompt` and `suffix`, for code completion.
    Completions,
}

impl Wire {
    pub(super) fn from_path(path: &str) -> Option<Self> {
        if path.ends_with("/chat/completions") {
            Some(Wire::Chat)
        } else if path.ends_with("/responses") {
            Some(Wire::Responses)
        } else if path.ends_with("/messages") {
            Some(Wire::Anthropic)
        } else if path.ends_with("/completions") {
            Some(Wire::Completions)
        } else {
            None
        }
    }
}
