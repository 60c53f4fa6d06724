//! Choosing among verified candidates. The first candidate that turns a failing check
//! green without breaking a passing one wins at once (sampling stops there). When
//! nothing failed to begin with (no tests, or tests that already pass: the task's
//! check is elsewhere), the candidates that break nothing vote: identical outputs
//! (up to whitespace) count together, the most common wins, ties to the earliest.
//! Among sampled candidates, one that no other sample agrees with is no choice
//! ([`agreed`]); a change made without the model lands when it breaks nothing.

use super::verify::Verdict;

/// Why a candidate was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// It turned a failing check green and broke nothing: chosen at once.
    Green(usize),
    /// Nothing failed before; it breaks nothing and `votes` candidates agree with it.
    Majority {
        /// The chosen candidate.
        index: usize,
        /// How many safe candidates have its text.
        votes: usize,
        /// How many safe candidates there were.
        of: usize,
    },
    /// Nothing failed before; the model judged, where candidates return different
    /// values, which value is right ([`super::judge`]), and this candidate's won the
    /// most.
    Judged {
        /// The chosen candidate.
        index: usize,
        /// The disputes its values won.
        wins: usize,
        /// The disputes judged.
        of: usize,
    },
    /// Nothing failed before; the model's own assertions about the function split the
    /// candidates ([`super::agreement`]), and this one's group scored best.
    Agreed {
        /// The chosen candidate.
        index: usize,
        /// How many candidates pass the same assertions.
        size: usize,
        /// How many assertions they pass.
        passed: usize,
        /// How many assertions there were.
        of: usize,
    },
    /// Nothing failed before; it passes every check, and of the checks the model
    /// wrote from the task's values that the code as it was fails
    /// ([`super::claims`]), all (chosen at once) or the most any candidate passed.
    Claimed {
        /// The chosen candidate.
        index: usize,
        /// How many of those checks it passes.
        passed: usize,
        /// How many such checks there were.
        of: usize,
    },
    /// Nothing failed before; of the candidates that differ, only this one's text
    /// passes the most of the examples the task and the docs give
    /// ([`super::examples`]).
    Examples {
        /// The chosen candidate.
        index: usize,
        /// How many examples it passes.
        passed: usize,
        /// How many examples there were.
        of: usize,
    },
}

impl Choice {
    /// The chosen candidate's index.
    pub fn index(&self) -> usize {
        match self {
            Choice::Green(i)
            | Choice::Majority { index: i, .. }
            | Choice::Agreed { index: i, .. }
            | Choice::Examples { index: i, .. }
            | Choice::Claimed { index: i, .. }
            | Choice::Judged { index: i, .. } => *i,
        }
    }

    /// Why this choice was made, for the report, of the candidate numbered `chosen`
    /// (from 0) in it.
    pub fn reason(&self, chosen: usize) -> String {
        match self {
            Choice::Green(_) => format!(
                "candidate {} turns the failing checks green and breaks nothing",
                chosen + 1
            ),
            Choice::Majority { votes, of, .. } => {
                format!(
                    "nothing failed before; {votes} of {of} candidates that pass every check agree on candidate {}",
                    chosen + 1
                )
            }
            Choice::Judged { wins, of, .. } => format!(
                "nothing failed before; where the candidates return different values, the model finds candidate {}'s most likely in {wins} of {of} calls",
                chosen + 1
            ),
            Choice::Examples { passed, of, .. } => format!(
                "nothing failed before; of the candidates that differ, only candidate {}'s text passes {passed} of the {of} examples the task and the docs give",
                chosen + 1
            ),
            Choice::Claimed { passed, of, .. } if passed == of => format!(
                "nothing failed before; candidate {} passes every check and the {of} check(s) the model wrote from the task's values, which the code as it was fails",
                chosen + 1
            ),
            Choice::Claimed { passed, of, .. } => format!(
                "nothing failed before; no candidate passes all {of} checks the model wrote from the task's values that the code as it was fails; candidate {} passes the most ({passed})",
                chosen + 1
            ),
            Choice::Agreed {
                size, passed, of, ..
            } => format!(
                "nothing failed before; candidate {} and {} other(s) pass the same {passed} of the model's {of} assertions that the code as it was fails, the best agreement",
                chosen + 1,
                size - 1
            ),
        }
    }
}

/// Whether `baseline` has a check that fails: one a candidate can turn green.
pub fn something_fails(baseline: &Verdict) -> bool {
    !baseline.builds() || baseline.tests.as_ref().is_some_and(|t| !t.ok)
}

/// The candidates that pass every check and break nothing: those a choice may take.
pub fn safe(baseline: &Verdict, verdicts: &[Verdict]) -> Vec<usize> {
    (0..verdicts.len())
        .filter(|&i| verdicts[i].passes() && !breaks(baseline, &verdicts[i]))
        .collect()
}

/// Whether `v` fails a check `baseline` passed (or fails more tests than it).
pub fn breaks(baseline: &Verdict, v: &Verdict) -> bool {
    if baseline.builds() && !v.builds() {
        return true;
    }
    match (&baseline.tests, &v.tests) {
        (Some(b), Some(c)) => {
            (b.ok && !c.ok)
                || matches!((b.counts, c.counts), (Some((_, bf)), Some((_, cf))) if cf > bf)
        }
        // Tests that ran before and not now: the candidate stopped them.
        (Some(b), None) => b.ok,
        _ => false,
    }
}

/// Whether candidate `v` is chosen at once: it makes a failing check pass and breaks
/// nothing.
pub fn turns_green(baseline: &Verdict, v: &Verdict) -> bool {
    something_fails(baseline) && v.passes() && !breaks(baseline, v)
}

/// Whether more candidates cannot change the pick: nothing failed before and
/// [`SETTLED`] candidates that break nothing have the same text (up to whitespace).
/// (A candidate that turns a failing check green ends sampling on its own.)
pub fn settled(baseline: &Verdict, verdicts: &[Verdict], texts: &[String]) -> bool {
    if something_fails(baseline) {
        return false;
    }
    let mut counts = std::collections::HashMap::new();
    safe(baseline, verdicts).into_iter().any(|i| {
        let n = counts.entry(normalised(&texts[i])).or_insert(0);
        *n += 1;
        *n >= SETTLED
    })
}

/// Identical safe candidates that settle the pick: with the six samples asked for by
/// default, the rest could at most tie them.
pub const SETTLED: usize = 3;

/// Why no candidate was chosen, from the `baseline` and the candidates' `verdicts`.
pub fn unchosen(baseline: &Verdict, verdicts: &[Verdict]) -> String {
    if something_fails(baseline) {
        "no candidate made the failing checks pass".into()
    } else if safe(baseline, verdicts).is_empty() {
        "no candidate changed the code and passed every check".into()
    } else {
        format!(
            "candidates pass every check, as the code did before, but no {AGREED} agree and nothing else tells them apart: none is landed"
        )
    }
}

/// Samples that must agree for a vote among sampled candidates to choose. A lone
/// candidate that passes checks the code passed before says nothing about the task:
/// of the 16 the suite's runs landed so (one of one, or one each of several), none
/// passed the task's hidden check, where 23 of 52 chosen by two or more did
/// (docs/results.md).
pub const AGREED: usize = 2;

/// Whether a sampled candidate's `choice` stands: a vote needs [`AGREED`] samples,
/// or all of them where fewer were asked for (`samples = 1` asks for no vote).
pub fn agreed(choice: &Choice, samples: usize) -> bool {
    !matches!(choice, Choice::Majority { votes, .. } if *votes < AGREED.min(samples.max(1)))
}

/// The choice among `verdicts` (with the candidates' `texts`), when there is one.
pub fn pick(baseline: &Verdict, verdicts: &[Verdict], texts: &[String]) -> Option<Choice> {
    if let Some(i) = verdicts.iter().position(|v| turns_green(baseline, v)) {
        return Some(Choice::Green(i));
    }
    if something_fails(baseline) {
        return None;
    }
    let safe = safe(baseline, verdicts);
    let key = |i: usize| normalised(&texts[i]);
    let mut best: Option<(usize, usize)> = None;
    for &i in &safe {
        let votes = safe.iter().filter(|&&j| key(j) == key(i)).count();
        if best.is_none_or(|(_, v)| votes > v) {
            best = Some((i, votes));
        }
    }
    best.map(|(index, votes)| Choice::Majority {
        index,
        votes,
        of: safe.len(),
    })
}

/// A candidate's text up to whitespace: what votes compare.
fn normalised(text: &str) -> String {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::super::verify::Ran;
    use super::*;

    fn v(syntax: usize, ok: Option<bool>, counts: Option<(u32, u32)>) -> Verdict {
        Verdict {
            syntax_errors: syntax,
            compiles: None,
            tests: ok.map(|ok| Ran {
                ok,
                counts,
                tail: String::new(),
            }),
        }
    }

    #[test]
    fn the_first_green_candidate_wins() {
        let base = v(0, Some(false), Some((1, 2)));
        let cands = [
            v(1, None, None),
            v(0, Some(false), Some((2, 1))),
            v(0, Some(true), Some((3, 0))),
            v(0, Some(true), Some((3, 0))),
        ];
        let texts = vec!["a".to_owned(), "b".into(), "c".into(), "d".into()];
        assert_eq!(pick(&base, &cands, &texts), Some(Choice::Green(2)));
    }

    #[test]
    fn a_candidate_that_breaks_a_passing_test_is_never_chosen() {
        // The tests passed before; a candidate that fails them (or more of them) is
        // out, however many agree with it.
        let base = v(0, Some(true), Some((3, 0)));
        let bad = v(0, Some(false), Some((2, 1)));
        let good = v(0, Some(true), Some((3, 0)));
        let texts = vec![
            "x = 1".to_owned(),
            "x = 1".into(),
            "x = 1".into(),
            "y = 2".into(),
        ];
        let choice = pick(&base, &[bad.clone(), bad.clone(), bad, good], &texts);
        assert_eq!(
            choice,
            Some(Choice::Majority {
                index: 3,
                votes: 1,
                of: 1
            })
        );
        // Sampled, alone, it is no choice: nothing but itself says it is right.
        assert!(!agreed(choice.as_ref().unwrap(), 6));
        assert!(agreed(&choice.unwrap(), 1), "one sample asked for: no vote");
        assert!(breaks(&base, &v(0, Some(false), None)));
        assert!(breaks(
            &v(0, Some(false), Some((1, 1))),
            &v(0, Some(false), Some((0, 2)))
        ));
        // Nothing safe: no choice.
        assert_eq!(pick(&base, &[v(0, Some(false), None)], &["z".into()]), None);
    }

    #[test]
    fn without_failing_checks_the_majority_wins_ties_to_the_earliest() {
        let base = v(0, None, None);
        let ok = v(0, None, None);
        let texts = vec![
            "a + b".to_owned(),
            "a  +  b\n".into(),
            "b + a".into(),
            "a - b".into(),
        ];
        let cands = vec![ok.clone(), ok.clone(), ok.clone(), v(2, None, None)];
        assert_eq!(
            pick(&base, &cands, &texts),
            Some(Choice::Majority {
                index: 0,
                votes: 2,
                of: 3
            })
        );
        assert!(agreed(&pick(&base, &cands, &texts).unwrap(), 6));
        // No two agree: no sampled choice.
        let texts = vec!["p".to_owned(), "q".into()];
        let choice = pick(&base, &[ok.clone(), ok], &texts).unwrap();
        assert_eq!(
            choice,
            Choice::Majority {
                index: 0,
                votes: 1,
                of: 2
            }
        );
        assert!(!agreed(&choice, 6));
    }

    #[test]
    fn failing_tests_with_no_green_candidate_give_no_choice() {
        let base = v(0, Some(false), Some((0, 1)));
        assert_eq!(
            pick(&base, &[v(0, Some(false), Some((0, 1)))], &["a".into()]),
            None
        );
    }
}
