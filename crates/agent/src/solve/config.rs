//! How the pipeline samples, and where its report goes (`SessionConfig::solve`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use agentls_model::Completer;

use super::report::SolveReport;

/// How the pipeline samples (`SessionConfig::solve`).
#[derive(Clone, Debug)]
pub struct SolveConfig {
    /// Candidates per target (the first greedy), before the repair round; with a
    /// `deadline`, the least: sampling goes on while time is left for one more and
    /// the repair round, up to [`MORE_SAMPLES`] times as many.
    pub samples: usize,
    /// When the pipeline should be done: the session sets it from its wall-time
    /// budget, so a small model spends the time it has on more samples.
    pub deadline: Option<Instant>,
    /// Temperature of every candidate but the first.
    pub temperature: f32,
    /// Seed of the first sampled candidate; the others count up from it. `agentls
    /// eval --attempts k` gives each attempt its own.
    pub seed: u64,
    /// Receives the report of each pipeline run (eval reads coverage from it).
    pub report: Option<Arc<Mutex<Option<SolveReport>>>>,
    /// A fill-in-the-middle completer: a stub's first candidate is then its body
    /// written as the middle of the file ([`generate::fim_request`]), before the
    /// whole-function samples. `None` (the default): whole functions only.
    pub completer: Option<Arc<dyn Completer>>,
    /// Decode a round's samples together where the provider can (the embedded
    /// engine: one batch, each checked as it completes); `false`, one after
    /// another, as with providers that cannot: what `agentls eval --one-at-a-time`
    /// compares against.
    pub together: bool,
    /// Ask the model for checks from the task's values before the candidates
    /// ([`super::claims`]). Off by default: measured on the suite, the embedded
    /// 0.5B and 1.5B models' checks were wrong or did not parse more often than not,
    /// and asking cost 10-25 s a task (docs/results.md); `agentls eval
    /// --task-checks` measures it again.
    pub task_checks: bool,
}

/// With a deadline, a target gets at most this many times `samples` candidates.
pub const MORE_SAMPLES: usize = 4;

impl SolveConfig {
    /// Hands `report` to whoever asked for it (`report`).
    pub(super) fn tap(&self, report: &SolveReport) {
        if let Some(tap) = &self.report
            && let Ok(mut slot) = tap.lock()
        {
            *slot = Some(report.clone());
        }
    }

    /// Whether candidate `i` (0-based) of a target is asked for, `started` being when
    /// the target's first was: below `samples`, while the deadline leaves time for
    /// this one at the pace so far (a candidate cut off by the deadline is lost, and
    /// the cut may take the pick's landing with it: a passing edit set was lost so);
    /// past it, while the deadline leaves time for this one and the two of the repair
    /// round. The first is asked for whenever the deadline has not passed.
    pub(super) fn another(&self, i: usize, started: Instant) -> bool {
        let least = self.samples.max(1);
        let Some(deadline) = self.deadline else {
            return i < least;
        };
        let now = Instant::now();
        if i == 0 {
            return now < deadline;
        }
        if i >= least * MORE_SAMPLES {
            return false;
        }
        let each = started.elapsed() / u32::try_from(i).unwrap_or(u32::MAX);
        let room = if i < least { 1 } else { 3 };
        now + each * room < deadline
    }
}

impl SolveConfig {
    /// [`SolveConfig::another`] for a target that shares the time with one after it:
    /// past `samples`, no candidate once its `share` ends (the next target's first
    /// samples are worth more than this one's twentieth).
    pub(super) fn another_within(
        &self,
        i: usize,
        started: Instant,
        share: Option<Instant>,
    ) -> bool {
        self.another(i, started)
            && (i < self.samples.max(1) || share.is_none_or(|end| Instant::now() < end))
    }

    /// Whether the repair round (two answers) fits before the deadline at the pace
    /// of the `i` candidates sampled since `started`: one cut off by the deadline is
    /// lost, and the time it took is not the next target's (go-lru's repair began
    /// 5 s before the pipeline's deadline and ran 22 s past it, to the time limit).
    pub(super) fn repair_fits(&self, i: usize, started: Instant) -> bool {
        let Some(deadline) = self.deadline else {
            return true;
        };
        let each = started.elapsed() / u32::try_from(i.max(1)).unwrap_or(u32::MAX);
        Instant::now() + each * 2 < deadline
    }

    /// Where the first of two targets' share of the time ends: halfway to the
    /// deadline.
    pub(super) fn halfway(&self) -> Option<Instant> {
        let now = Instant::now();
        self.deadline
            .map(|d| now + d.saturating_duration_since(now) / 2)
    }

    /// How many samples from candidate `i` on are decoded together: the greedy one
    /// alone (it copies the original through prompt-lookup drafts and is often
    /// right), then the rest of `samples` in one batch, at most [`MAX_WIDTH`]; past
    /// `samples`, one at a time, as the deadline allows.
    pub(super) fn width(&self, i: usize) -> usize {
        if i == 0 || !self.together {
            return 1;
        }
        self.samples.max(1).saturating_sub(i).clamp(1, MAX_WIDTH)
    }
}

/// The widest batch of samples: `agentls bench decode` measured 9.9 tokens a second
/// for one sequence of the 0.5B model on two cores, 17.0 for four together and 16.6
/// for eight; wider batches add little.
const MAX_WIDTH: usize = 8;

impl Default for SolveConfig {
    fn default() -> Self {
        Self {
            samples: 6,
            deadline: None,
            temperature: 0.8,
            seed: 1,
            report: None,
            completer: None,
            together: true,
            task_checks: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn more_samples_only_while_the_deadline_leaves_time() {
        // Six candidates took a minute: ten seconds each.
        let started = Instant::now().checked_sub(Duration::from_secs(60)).unwrap();
        let mut c = SolveConfig {
            samples: 6,
            ..SolveConfig::default()
        };
        assert!(c.another(5, started));
        assert!(!c.another(6, started), "no deadline: `samples` exactly");
        // Room for one more and the repair round (30 s), up to four times `samples`.
        c.deadline = Some(Instant::now() + Duration::from_secs(100));
        assert!(c.another(6, started));
        assert!(!c.another(6 * MORE_SAMPLES, started));
        // A second target waiting: past `samples`, not once the first's share ended.
        let share = Instant::now().checked_sub(Duration::from_secs(1));
        assert!(c.another_within(5, started, share), "below `samples`");
        assert!(!c.another_within(6, started, share));
        assert!(c.another_within(6, started, c.halfway()));
        c.deadline = Some(Instant::now() + Duration::from_secs(20));
        assert!(!c.another(6, started));
        assert!(c.another(5, started), "below `samples`: room for this one");
        assert!(
            c.another(0, started),
            "the first while the deadline has not passed"
        );
        // Below `samples` too, none that the deadline would cut off.
        c.deadline = Some(Instant::now() + Duration::from_secs(5));
        assert!(!c.another(1, started));
        c.deadline = Instant::now().checked_sub(Duration::from_secs(1));
        assert!(!c.another(0, started));
    }

    #[test]
    fn the_repair_round_only_when_two_answers_fit_before_the_deadline() {
        // Six candidates took a minute: ten seconds each, twenty for the repair.
        let started = Instant::now().checked_sub(Duration::from_secs(60)).unwrap();
        let mut c = SolveConfig::default();
        assert!(c.repair_fits(6, started), "no deadline");
        c.deadline = Some(Instant::now() + Duration::from_secs(30));
        assert!(c.repair_fits(6, started));
        c.deadline = Some(Instant::now() + Duration::from_secs(15));
        assert!(!c.repair_fits(6, started));
        assert!(c.repair_fits(12, started), "five seconds each");
    }
}
