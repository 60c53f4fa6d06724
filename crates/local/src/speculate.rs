//! Drafting by prompt lookup: when the last few tokens occurred earlier in the
//! context (the prompt or the answer so far), guess that what followed them then
//! follows them now. Edits that copy most of a file from the prompt are the case it
//! is for: most drafted tokens are right, and a whole draft is checked in one
//! forward pass.
//!
//! A draft is only a guess: the provider keeps the drafted tokens greedy decoding
//! would have chosen from the batch's logits. Those logits equal single-token ones
//! bit for bit in the tests (flash attention off), and outputs of ~120 tokens are
//! identical with and without drafts; over 200-token outputs after a 2,000-token
//! prompt they were seen to diverge at a near tie (cause not found yet). Measured on
//! SmolLM2-135M, drafting was slower on free text (45 vs 78 tok/s), so the provider
//! leaves it off by default.

/// How drafts are looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lookup {
    /// Longest run of last tokens matched (tried first).
    pub max_ngram: usize,
    /// Shortest run matched: shorter matches guess too often wrong.
    pub min_ngram: usize,
    /// Most tokens proposed at once.
    pub max_draft: usize,
}

impl Default for Lookup {
    fn default() -> Self {
        Self {
            max_ngram: 4,
            min_ngram: 3,
            max_draft: 8,
        }
    }
}

impl Lookup {
    /// The tokens that followed the most recent earlier occurrence of the longest
    /// matching tail of `history`, at most `max_draft` of them; empty when nothing
    /// matches.
    pub fn draft(&self, history: &[u32]) -> Vec<u32> {
        let len = history.len();
        for n in (self.min_ngram.max(1)..=self.max_ngram).rev() {
            if len <= n {
                continue;
            }
            let tail = &history[len - n..];
            // Most recent first: the nearest copy is the likeliest to continue alike.
            if let Some(start) = (0..len - n).rev().find(|&i| &history[i..i + n] == tail) {
                let from = start + n;
                let to = (from + self.max_draft).min(len);
                return history[from..to].to_vec();
            }
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_what_followed_the_last_ngram() {
        let l = Lookup {
            max_ngram: 3,
            min_ngram: 2,
            max_draft: 3,
        };
        // ... 1 2 3 4 5 6 ... then 1 2 again: propose 3 4 5.
        assert_eq!(l.draft(&[1, 2, 3, 4, 5, 6, 9, 1, 2]), vec![3, 4, 5]);
        // The longer match wins over a more recent shorter one.
        assert_eq!(l.draft(&[7, 1, 2, 8, 0, 1, 2, 9, 7, 1, 2]), vec![8, 0, 1]);
        // The most recent of equal matches.
        assert_eq!(l.draft(&[1, 2, 5, 1, 2, 6, 1, 2]), vec![6, 1, 2]);
    }

    #[test]
    fn no_draft_without_a_long_enough_match() {
        let l = Lookup::default();
        assert!(l.draft(&[]).is_empty());
        assert!(l.draft(&[1, 2, 3, 4]).is_empty());
        // A repeated pair is below min_ngram = 3.
        assert!(l.draft(&[5, 1, 2, 6, 1, 2]).is_empty());
    }

    #[test]
    fn draft_stops_at_the_end_of_history() {
        let l = Lookup::default();
        // 3 4 5 occurred right before the tail: only what lies between is proposed.
        assert_eq!(l.draft(&[3, 4, 5, 6, 3, 4, 5]), vec![6, 3, 4, 5]);
    }
}
