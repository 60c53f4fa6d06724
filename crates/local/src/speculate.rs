//! Drafting by prompt lookup: when the last few tokens occurred earlier in the
//! context (the prompt or the answer so far), guess that what followed them then
//! follows them now. Edits that copy most of a file from the prompt are the case it
//! is for: most drafted tokens are right, and a whole draft is checked in one
//! forward pass.
//!
//! A [`Drafter`] keeps a cursor into the context: while the model keeps copying,
//! the next draft continues where the last accepted one ended, and grows (3, 7, 15,
//! 31 tokens: batches of 4, 8, 16, 32, the sizes llama.cpp's CPU kernels handle
//! best). When the model leaves the copy, the cursor is dropped and found again by
//! the longest earlier match of the last tokens. Failed drafts cost a batch each, so
//! drafts that come from a search must be right often enough: when they are not
//! (free text repeats short phrases the model does not continue alike), the match
//! needed to draft grows, and shrinks back as drafts succeed.
//!
//! A draft is only a guess: the provider keeps the drafted tokens greedy decoding
//! picks from the batch's logits. llama.cpp's llamafile sgemm and repacked weight
//! kernels sum batches in another order than one token, so those logits could
//! differ in the last bits and take the other token at a near tie; both are built
//! out (`.cargo/config.toml`), and `agentls bench model` checks that speculation
//! leaves the text as plain decoding writes it.

/// How drafts are looked up and sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// Shortest match of the last tokens a search may draft from (raised while
    /// search drafts fail, never below this). On two cores a drafted token costs
    /// about half a generated one, so a draft pays only when most of it is right:
    /// shorter matches (three tokens) were mostly wrong on free text.
    pub min_match: usize,
    /// Longest match considered, and the most the needed match is raised to.
    pub max_match: usize,
    /// Most tokens proposed at once.
    pub max_draft: usize,
}

impl Default for Lookup {
    fn default() -> Self {
        Self {
            min_match: 5,
            max_match: 12,
            max_draft: 31,
        }
    }
}

/// Draft sizes, smallest first: one less than the batch sizes that cost least per
/// token on the CPU.
const SIZES: [usize; 4] = [3, 7, 15, 31];

/// Where a draft came from, to learn from its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// Continued the previous draft's copy.
    Cursor,
    /// Found by searching for the last tokens.
    Search,
}

/// What the drafter knows between tokens: the copy it follows and how well
/// searching has been going.
#[derive(Clone, Debug)]
pub struct Drafter {
    lookup: Lookup,
    /// Index in the history of the token expected next, while following a copy.
    cursor: Option<usize>,
    /// Index into [`SIZES`] for the next cursor draft.
    size: usize,
    /// Match length a search needs before it drafts.
    need: usize,
    /// The last draft: where it started and where it came from.
    last: Option<(usize, Source)>,
    /// Tokens drafted and accepted so far (for the logs).
    pub drafted: usize,
    /// Drafted tokens the model agreed with.
    pub accepted: usize,
}

impl Drafter {
    /// A drafter with no copy to follow yet.
    pub fn new(lookup: Lookup) -> Self {
        Self {
            lookup,
            cursor: None,
            size: 0,
            need: lookup.min_match.max(1),
            last: None,
            drafted: 0,
            accepted: 0,
        }
    }

    /// The tokens to propose after `history` (prompt and answer so far, ending with
    /// the token just chosen); empty when nothing is worth drafting.
    pub fn draft<'h>(&mut self, history: &'h [u32]) -> &'h [u32] {
        let len = history.len();
        let Some(&last) = history.last() else {
            return &[];
        };
        // Still copying: the chosen token is the one the copy predicted.
        if let Some(c) = self.cursor.filter(|&c| c + 1 < len && history[c] == last) {
            let from = c + 1;
            let n = SIZES[self.size].min(self.lookup.max_draft);
            let to = (from + n).min(len);
            if to > from {
                self.last = Some((from, Source::Cursor));
                return &history[from..to];
            }
        }
        self.cursor = None;
        let Some(from) = self.search(history) else {
            self.last = None;
            return &[];
        };
        self.size = 0;
        let to = (from + SIZES[0].min(self.lookup.max_draft)).min(len);
        self.last = Some((from, Source::Search));
        &history[from..to]
    }

    /// Follows a copy from `at`: the token expected next is `history[at]` (the start
    /// of an expected answer put before the prompt in the history).
    pub fn follow(&mut self, at: usize) {
        self.cursor = Some(at);
        self.size = 0;
        self.last = None;
    }

    /// Learns from the last draft: `accepted` of its `drafted` tokens were kept.
    pub fn outcome(&mut self, drafted: usize, accepted: usize) {
        let Some((from, source)) = self.last.take() else {
            return;
        };
        self.drafted += drafted;
        self.accepted += accepted;
        let whole = accepted == drafted;
        // The next token, if the copy goes on, is the one after the kept ones.
        self.cursor = Some(from + accepted);
        if whole {
            self.size = (self.size + 1).min(SIZES.len() - 1);
        } else {
            self.size = 0;
        }
        if source == Source::Search {
            // A search draft that was mostly wrong makes the next search pickier.
            if accepted * 2 < drafted {
                self.need = (self.need + 1).min(self.lookup.max_match);
            } else if whole {
                self.need = self.need.saturating_sub(1).max(self.lookup.min_match);
            }
        }
    }

    /// Start of the continuation after the longest earlier occurrence (at least
    /// `need` tokens) of the end of `history`; the most recent among equals.
    fn search(&self, history: &[u32]) -> Option<usize> {
        let len = history.len();
        let need = self.need.max(1);
        if len <= need {
            return None;
        }
        let last = history[len - 1];
        let (mut best, mut best_len) = (None, 0);
        // Candidates end at i (history[i] == last), with room for one drafted token.
        for i in (0..len - 1).rev() {
            if history[i] != last {
                continue;
            }
            let mut m = 1;
            while m < self.lookup.max_match && m <= i && history[i - m] == history[len - 1 - m] {
                m += 1;
            }
            if m > best_len {
                best_len = m;
                best = Some(i + 1);
                if m >= self.lookup.max_match {
                    break;
                }
            }
        }
        best.filter(|_| best_len >= need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(min_match: usize) -> Lookup {
        Lookup {
            min_match,
            max_match: 8,
            max_draft: 31,
        }
    }

    #[test]
    fn drafts_what_followed_the_longest_match() {
        let mut d = Drafter::new(lookup(2));
        // ... 1 2 3 4 5 6 ... then 1 2 again: propose 3 4 5.
        assert_eq!(d.draft(&[1, 2, 3, 4, 5, 6, 9, 1, 2]), &[3, 4, 5]);
        // The longer match (7 1 2) wins over a more recent shorter one (0 1 2).
        let mut d = Drafter::new(lookup(2));
        assert_eq!(d.draft(&[7, 1, 2, 8, 0, 1, 2, 9, 7, 1, 2]), &[8, 0, 1]);
        // The most recent of equal matches.
        let mut d = Drafter::new(lookup(2));
        assert_eq!(d.draft(&[1, 2, 5, 1, 2, 6, 1, 2]), &[6, 1, 2]);
    }

    #[test]
    fn no_draft_without_a_long_enough_match() {
        let mut d = Drafter::new(Lookup::default());
        assert!(d.draft(&[]).is_empty());
        assert!(d.draft(&[1, 2, 3, 4]).is_empty());
        // A repeated triple is below min_match = 5.
        assert!(d.draft(&[5, 1, 2, 3, 6, 1, 2, 3]).is_empty());
    }

    #[test]
    fn a_draft_stops_at_the_end_of_history() {
        let mut d = Drafter::new(lookup(3));
        // 3 4 5 occurred right before the tail: only what lies between is proposed.
        assert_eq!(d.draft(&[3, 4, 5, 6, 3, 4, 5]), &[6, 3, 4]);
    }

    #[test]
    fn a_followed_copy_continues_and_grows() {
        // The "prompt" is 0..100; the answer copies it from 10 on.
        let src: Vec<u32> = (0..100).collect();
        let mut history = src.clone();
        history.extend([10, 11, 12]);
        let mut d = Drafter::new(lookup(3));
        assert_eq!(d.draft(&history), &[13, 14, 15]);
        // All three kept, then the model chose 16 itself.
        d.outcome(3, 3);
        history.extend([13, 14, 15, 16]);
        assert_eq!(d.draft(&history), (17..24).collect::<Vec<_>>());
        d.outcome(7, 7);
        history.extend(17..25);
        assert_eq!(d.draft(&history), (25..40).collect::<Vec<_>>());
        // Two kept, then the model went elsewhere (99 instead of 27).
        d.outcome(15, 2);
        history.extend([25, 26, 99]);
        // 26 99 occurs nowhere: no draft, the copy is dropped.
        assert!(d.draft(&history).is_empty());
        assert_eq!(d.cursor, None);
        assert_eq!((d.drafted, d.accepted), (25, 12));
    }

    #[test]
    fn a_followed_expectation_drafts_from_its_first_token() {
        // The expected answer 40..50 before a prompt 0..30 that holds none of it.
        let mut history: Vec<u32> = (40..50).chain(0..30).collect();
        let mut d = Drafter::new(lookup(5));
        d.follow(0);
        // The model chose 40, the expectation's first token: the next three follow,
        // with no match of five tokens needed.
        history.push(40);
        assert_eq!(d.draft(&history), &[41, 42, 43]);
        // Something else first: nothing to follow, and no match to search from.
        let mut other: Vec<u32> = (40..50).chain(0..30).collect();
        let mut d = Drafter::new(lookup(5));
        d.follow(0);
        other.push(7);
        assert!(d.draft(&other).is_empty());
    }

    #[test]
    fn a_copy_that_resumes_is_found_again_small() {
        let src: Vec<u32> = (0..100).collect();
        let mut history = src.clone();
        history.extend([10, 11, 12]);
        let mut d = Drafter::new(lookup(3));
        d.draft(&history);
        d.outcome(3, 3);
        history.extend([13, 14, 15, 16]);
        d.draft(&history);
        d.outcome(7, 0);
        // The model wrote 50 51 52 instead: a new copy, drafted from its start size.
        history.extend([50, 51, 52]);
        assert_eq!(d.draft(&history), &[53, 54, 55]);
    }

    #[test]
    fn failing_searches_need_longer_matches() {
        let mut d = Drafter::new(lookup(3));
        let history = [1, 2, 3, 7, 7, 7, 9, 1, 2, 3];
        assert_eq!(d.draft(&history), &[7, 7, 7]);
        d.outcome(3, 0);
        assert_eq!(d.need, 4);
        // The same 3-token match (1 2 3) no longer drafts.
        let mut h2 = history.to_vec();
        h2.extend([8, 1, 2, 3]);
        assert!(d.draft(&h2).is_empty());
        // A 4-token match (9 1 2 3) does.
        h2.extend([9, 1, 2, 3]);
        assert_eq!(d.draft(&h2), &[8, 1, 2]);
        d.outcome(3, 3);
        assert_eq!(d.need, 3);
    }
}
