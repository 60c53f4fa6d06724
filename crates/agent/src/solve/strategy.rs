//! The ways of solving a change request, behind one trait, in one list.
//!
//! Each [`Strategy`] decides for itself whether it applies from what the workspace
//! holds (the index's definitions and references, the string literals, the files a
//! task names), never from the task's wording: users phrase one request a hundred
//! ways. [`plans`] asks every strategy, cheapest first, in one pass over the index;
//! [`super::solve_small`] runs the plans in that order until one lands a verified
//! change, and the report names the strategy that ran and why it applied. Adding a
//! way of solving touches its own module and one line of [`all`].

use std::path::Path;
use std::sync::Arc;

use agentls_index::Index;
use agentls_model::Provider;
use agentls_text::{DocumentStore, ReadLimits};
use agentls_tools::ToolContext;
use async_trait::async_trait;

use super::config::SolveConfig;
use super::report::Solved;
use crate::event::EventSender;

/// What a strategy looks at when it decides whether it applies: the task and the
/// workspace as the editor shows it (live buffers over the disk).
pub(crate) struct Scene<'a> {
    /// The workspace root.
    pub root: &'a Path,
    /// The request, as the user wrote it.
    pub task: &'a str,
    /// The symbol index.
    pub index: &'a Index,
    /// The live buffers (and the disk under them).
    pub store: &'a DocumentStore,
    /// How much of a file is read.
    pub limits: &'a ReadLimits,
    /// The paths the task forbids changing ([`super::localise::protected`]).
    pub protected: Vec<String>,
}

impl Scene<'_> {
    /// The text of `path` as the editor shows it.
    pub fn read(&self, path: &Path) -> Option<String> {
        self.store
            .read(path, self.limits)
            .ok()
            .map(|s| s.rope.to_string())
    }

    /// Whether `path` (absolute) is one the task forbids changing.
    pub fn is_protected(&self, path: &Path) -> bool {
        super::localise::is_protected(
            path.strip_prefix(self.root).unwrap_or(path),
            &self.protected,
        )
    }
}

/// What a strategy will do, decided without the model, and why it applies.
pub(crate) struct Plan {
    /// Why the strategy applies here, for the report ("`fetchUser` is defined in
    /// src/users.js; `loadUser` occurs nowhere").
    pub why: String,
    /// The work, in the strategy's own terms.
    pub work: Work,
}

/// The work of each strategy, as its plan carries it.
pub(crate) enum Work {
    /// Names to change across files ([`super::rename`]).
    Rename(Vec<super::rename::Candidate>),
    /// A message to reword wherever it is written ([`super::reword`]).
    Reword(super::reword::Reword),
    /// A new test file to write, pinning what the code does ([`super::characterise`]).
    Characterise(String),
    /// Files changed together: a function and its callers, a script and the data it
    /// reads ([`super::edit_set`]).
    EditSet(super::edit_set::EditSet),
    /// Functions (or one short file) rewritten by the model ([`super::Rewriting`]).
    Rewrite(super::Rewrites),
}

/// What a strategy runs with.
pub(crate) struct Cx<'a> {
    pub provider: &'a Arc<dyn Provider>,
    pub ctx: &'a ToolContext,
    pub task: &'a str,
    pub config: &'a SolveConfig,
    pub events: Option<&'a EventSender>,
}

/// One way of solving a change request.
#[async_trait]
pub(crate) trait Strategy: Send + Sync {
    /// Its name, as the report shows it.
    fn name(&self) -> &'static str;

    /// Whether it applies to the task in this workspace, and what it would do:
    /// decided from the index, the literals and the files, without the model.
    fn plan(&self, scene: &Scene<'_>) -> Option<Plan>;

    /// Carries the plan out: candidates, verified in the overlay, one picked and
    /// landed. `None` when it finds on closer look that it does not apply (the next
    /// strategy is tried); a report without an answer when nothing was verified.
    async fn run(&self, cx: &Cx<'_>, work: Work) -> Option<Solved>;
}

/// Every strategy, cheapest first: the model-free ones (exact and instant when they
/// apply), then the model's: code and the data it reads before a single function
/// (which would hard-code a value), a function and its callers after it (the
/// rewrite defers to them when its pick changes a signature the callers use). The
/// tool loop is the last way of all, and the session's, not this list's.
pub(crate) fn all() -> Vec<Box<dyn Strategy>> {
    vec![
        Box::new(super::rename::Renaming),
        Box::new(super::reword::Rewording),
        Box::new(super::characterise::Characterising),
        Box::new(super::edit_set::EditSets(super::edit_set::Joined::Data)),
        Box::new(super::Rewriting),
        Box::new(super::edit_set::EditSets(super::edit_set::Joined::Callers)),
    ]
}

/// The plans of every strategy that applies, in [`all`]'s order, each with its
/// strategy's index there.
pub(crate) fn plans(scene: &Scene<'_>, strategies: &[Box<dyn Strategy>]) -> Vec<(usize, Plan)> {
    strategies
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let plan = s.plan(scene);
            tracing::debug!(
                "solve: {} {}",
                s.name(),
                plan.as_ref().map_or_else(
                    || "does not apply".to_owned(),
                    |p| format!("applies: {}", p.why)
                )
            );
            plan.map(|p| (i, p))
        })
        .collect()
}
