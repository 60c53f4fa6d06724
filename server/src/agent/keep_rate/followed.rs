//! The edits the server follows for their Keep Rate looks: a bounded list, held in
//! the server's state (so below it: nothing here reads the state).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// At most this many edits wait for the end look (the oldest go first): a server left
/// open for weeks must not grow without bound.
const MAX_FOLLOWED: usize = 10_000;

/// One landed edit, followed until the server shuts down.
#[derive(Debug, Clone)]
pub(super) struct Edit {
    pub session: String,
    pub model: String,
    pub tool: String,
    pub path: PathBuf,
    pub lines: Arc<Vec<String>>,
    pub landed: Instant,
}

/// The edits this server follows, for their look at session end.
#[derive(Debug, Default)]
pub struct Followed(Mutex<VecDeque<Edit>>);

impl Followed {
    pub(super) fn push(&self, edit: Edit) {
        let mut edits = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if edits.len() == MAX_FOLLOWED {
            edits.pop_front();
        }
        edits.push_back(edit);
    }

    pub(super) fn take(&self) -> Vec<Edit> {
        let mut edits = self.0.lock().unwrap_or_else(|p| p.into_inner());
        edits.drain(..).collect()
    }
}
