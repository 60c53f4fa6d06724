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
    /// Where the task points ([`Scene::targets`]), found once for every strategy.
    pub localised: std::sync::OnceLock<Vec<super::localise::Target>>,
}

impl Scene<'_> {
    /// The functions (or the one short file) the task points to, best first
    /// ([`super::localise::localise`]); computed on first use, shared by the
    /// strategies that start from them.
    pub fn targets(&self) -> &[super::localise::Target] {
        self.localised.get_or_init(|| {
            super::localise::localise(self.root, self.index, self.store, self.limits, self.task)
        })
    }

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
    /// The work, in the strategy's own terms: only it reads it back
    /// ([`Strategy::run`] takes it), so this module knows no strategy.
    pub work: Work,
}

/// A strategy's work, as its plan carries it.
pub(crate) type Work = Box<dyn std::any::Any + Send>;

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

/// The plans of every strategy of `strategies` that applies, in their order, each
/// with its strategy's index there.
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
