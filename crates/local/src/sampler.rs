//! Choosing the next token from logits: greedy at temperature 0 (deterministic),
//! otherwise temperature and nucleus sampling from a seeded generator.

/// Sampling settings and state.
#[derive(Debug)]
pub struct Sampler {
    temperature: f32,
    top_p: f32,
    rng: fastrand::Rng,
}

impl Sampler {
    /// A sampler; `temperature <= 0` means greedy.
    pub fn new(temperature: f32, top_p: f32, seed: u64) -> Self {
        Self {
            temperature,
            top_p: top_p.clamp(0.0, 1.0),
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// Picks a token; `None` only for empty or non-finite logits.
    pub fn sample(&mut self, logits: &[f32]) -> Option<u32> {
        self.sample_constrained(logits, &mut |_| true)
    }

    /// Picks a token that `allowed` accepts; `None` if it accepts none. Candidates are
    /// asked in logit order, and only until enough are found: a greedy step asks
    /// one or two, a sampled step at most [`CANDIDATES`] accepted ones.
    pub fn sample_constrained(
        &mut self,
        logits: &[f32],
        allowed: &mut dyn FnMut(u32) -> bool,
    ) -> Option<u32> {
        if self.temperature <= 0.0 {
            // Fast path: the unconstrained maximum is usually accepted.
            let best = (0..logits.len())
                .filter(|&i| logits[i].is_finite())
                .max_by(|&a, &b| logits[a].total_cmp(&logits[b]))?;
            if allowed(best as u32) {
                return Some(best as u32);
            }
        }
        let want = if self.temperature <= 0.0 {
            1
        } else {
            CANDIDATES
        };
        let picked = top_allowed(logits, want, allowed);
        let first = *picked.first()?;
        if self.temperature <= 0.0 {
            return Some(first);
        }
        let max = logits[first as usize];
        let probs: Vec<(u32, f32)> = picked
            .iter()
            .map(|&i| (i, ((logits[i as usize] - max) / self.temperature).exp()))
            .collect();
        let total: f32 = probs.iter().map(|p| p.1).sum();
        let mut kept = 0.0;
        let mut cut = probs.len();
        for (i, p) in probs.iter().enumerate() {
            kept += p.1 / total;
            if kept >= self.top_p {
                cut = i + 1;
                break;
            }
        }
        let probs = &probs[..cut];
        let mass: f32 = probs.iter().map(|p| p.1).sum();
        let mut r = self.rng.f32() * mass;
        for (id, p) in probs {
            r -= p;
            if r <= 0.0 {
                return Some(*id);
            }
        }
        probs.last().map(|p| p.0)
    }
}

/// Most candidates a sampled step draws from (top-k, before top-p).
pub const CANDIDATES: usize = 64;

/// The first `want` tokens `allowed` accepts, in descending logit order (finite
/// logits only). Sorting a 150k vocabulary took more than a batched step's forward
/// pass: the best few hundred are selected first, and the whole vocabulary sorted
/// only when too few of them are allowed.
fn top_allowed(logits: &[f32], want: usize, allowed: &mut dyn FnMut(u32) -> bool) -> Vec<u32> {
    let by_logit = |a: &u32, b: &u32| logits[*b as usize].total_cmp(&logits[*a as usize]);
    let mut order: Vec<u32> = (0..logits.len() as u32)
        .filter(|&i| logits[i as usize].is_finite())
        .collect();
    let head = (want * 4).max(256);
    if order.len() > head {
        order.select_nth_unstable_by(head, by_logit);
        let mut best = order[..head].to_vec();
        best.sort_unstable_by(by_logit);
        let picked: Vec<u32> = best
            .into_iter()
            .filter(|&i| allowed(i))
            .take(want)
            .collect();
        if picked.len() == want {
            return picked;
        }
    }
    order.sort_unstable_by(by_logit);
    order
        .into_iter()
        .filter(|&i| allowed(i))
        .take(want)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_candidates_are_those_a_full_sort_gives() {
        let mut rng = fastrand::Rng::with_seed(3);
        let logits: Vec<f32> = (0..50_000).map(|_| rng.f32() * 30.0).collect();
        let mut sorted: Vec<u32> = (0..logits.len() as u32).collect();
        sorted.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
        let even = |i: &u32| i.is_multiple_of(2);
        let expect: Vec<u32> = sorted.iter().copied().filter(even).take(64).collect();
        assert_eq!(top_allowed(&logits, 64, &mut |i| even(&i)), expect);
        // Too few allowed among the best: the whole vocabulary is searched.
        let rare = |i: &u32| i % 1000 == 7;
        let expect: Vec<u32> = sorted.iter().copied().filter(rare).take(64).collect();
        assert_eq!(top_allowed(&logits, 64, &mut |i| rare(&i)), expect);
    }

    #[test]
    fn greedy_takes_the_largest_allowed() {
        let mut s = Sampler::new(0.0, 1.0, 1);
        let logits = [0.1, 3.0, 2.0];
        assert_eq!(s.sample(&logits), Some(1));
        let mut asked = Vec::new();
        let mut not_one = |i: u32| {
            asked.push(i);
            i != 1
        };
        assert_eq!(s.sample_constrained(&logits, &mut not_one), Some(2));
        // In logit order, stopping at the first accepted.
        assert_eq!(asked, [1, 1, 2]);
        assert_eq!(s.sample_constrained(&logits, &mut |_| false), None);
    }

    #[test]
    fn same_seed_same_choices_and_top_p_cuts_the_tail() {
        let logits = [1.0, 1.0, 1.0, -20.0];
        let run = |seed| {
            let mut s = Sampler::new(1.0, 0.9, seed);
            (0..50).map(|_| s.sample(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert!(run(7).iter().all(|t| t.is_some_and(|t| t < 3)));
    }
}
