//! Settling the pick by what candidates do, while they are sampled. Where no check
//! fails before, no test tells candidates apart, and samples that agree only in text
//! are rare (a 0.5B model names its variables anew each time), sampling used to run
//! to its cap or its deadline. Once two different candidates pass every check, the
//! calls of the model's own assertions (and their neighbours, as the judge takes
//! them) are run on the code as it was and on every candidate that passes; when
//! [`SETTLED`] samples return the same on every call, and not what the code as it
//! was returns, more samples could at most tie them (the execution-based agreement
//! that chooses among programs: CodeT, MBR-exec), and sampling stops. The pick after
//! it is the usual one (examples, then the judge), among fewer candidates.

use super::pick::SETTLED;
use super::pinned::{Outcome, Probe};

/// The calls probed for a target, and what each probed candidate returned on them.
pub struct Behaviours {
    /// The calls, as the judge takes them from the model's assertions.
    pub calls: Vec<(String, String)>,
    /// How they run over a candidate's text.
    pub probe: Probe,
    /// What the code as it was did on each call.
    pub before: Vec<Option<Outcome>>,
    /// Each probed candidate (its index among the target's texts) and its outcomes.
    pub of: Vec<(usize, Vec<Option<Outcome>>)>,
}

impl Behaviours {
    /// Samples in the largest group that returns the same on every call, counting
    /// only behaviour that says something: a value or an error on some call (a probe
    /// that did not run says nothing) that is not what the code as it was did.
    pub fn agreeing(&self) -> usize {
        let telling = |o: &[Option<Outcome>]| o.iter().any(Option::is_some) && o != self.before;
        let mut best = 0;
        for (_, mine) in self.of.iter().filter(|(_, o)| telling(o)) {
            best = best.max(self.of.iter().filter(|(_, o)| o == mine).count());
        }
        best
    }

    /// Whether more samples could at most tie the largest agreeing group.
    pub fn settled(&self) -> bool {
        self.agreeing() >= SETTLED
    }

    /// The outcomes recorded for a candidate of the same text (`same(j)`), if any.
    pub fn known(&self, same: impl Fn(usize) -> bool) -> Option<Vec<Option<Outcome>>> {
        self.of
            .iter()
            .find(|(j, _)| same(*j))
            .map(|(_, o)| o.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ret(v: &str) -> Option<Outcome> {
        Some(Outcome::Returned(v.to_owned()))
    }

    fn behaviours(before: Vec<Option<Outcome>>, of: Vec<Vec<Option<Outcome>>>) -> Behaviours {
        Behaviours {
            calls: Vec::new(),
            probe: Probe {
                command: String::new(),
                file: None,
                first_line: 1,
            },
            before,
            of: of.into_iter().enumerate().collect(),
        }
    }

    #[test]
    fn three_samples_returning_the_same_new_values_settle() {
        let right = vec![ret("6"), ret("0")];
        let b = behaviours(
            vec![ret("3"), ret("0")],
            vec![right.clone(), right.clone(), vec![ret("5"), ret("0")]],
        );
        assert_eq!(b.agreeing(), 2);
        assert!(!b.settled());
        let mut b = b;
        b.of.push((3, right));
        assert!(b.settled());
    }

    #[test]
    fn samples_that_behave_as_the_code_did_or_ran_nothing_settle_nothing() {
        let before = vec![ret("3"), ret("0")];
        let b = behaviours(
            before.clone(),
            vec![
                before.clone(),
                before.clone(),
                before,
                vec![None, None],
                vec![None, None],
                vec![None, None],
            ],
        );
        assert_eq!(b.agreeing(), 0);
        assert!(!b.settled());
    }
}
