//! BM25 over chunk terms ([`crate::terms`]), updated a file at a time.
//!
//! Removed chunks leave tombstones in the postings (skipped at query time, counted out
//! of the statistics at once); postings are rebuilt when the dead outnumber the live.

use rustc_hash::FxHashMap;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation: weaker than the usual 0.75, because a chunk's length
/// says little about its topic (a long function is not about less than a short one).
/// On the retrieval sets (`agentls bench search`), lexical recall@10 with 0.75 / 0.5 /
/// 0.3 was 0.533 / 0.599 / 0.616 on mypy and 0.642 / 0.623 / 0.621 on Wagtail.
const B: f32 = 0.5;

/// Chunk ids are assigned by the caller and never reused while postings hold them.
pub type ChunkId = u32;

/// The id of no chunk: what a renumbering maps a removed chunk's id to.
pub const NO_CHUNK: ChunkId = ChunkId::MAX;

/// An inverted index of chunk terms.
#[derive(Debug, Default)]
pub struct Lexical {
    postings: FxHashMap<Box<str>, Vec<(ChunkId, u16)>>,
    /// Per chunk id: its length in terms, `None` once removed.
    docs: Vec<Option<DocInfo>>,
    /// Live documents containing each term.
    df: FxHashMap<Box<str>, u32>,
    live: u32,
    dead: u32,
    total_len: u64,
}

#[derive(Debug, Clone)]
struct DocInfo {
    len: u32,
    /// Distinct terms, for removal.
    terms: Vec<Box<str>>,
}

impl Lexical {
    /// Adds chunk `id` with its terms. `id` must be new.
    pub fn insert(&mut self, id: ChunkId, terms: &[String]) {
        let mut tf: FxHashMap<&str, u16> = FxHashMap::default();
        for t in terms {
            let c = tf.entry(t.as_str()).or_default();
            *c = c.saturating_add(1);
        }
        let mut distinct = Vec::with_capacity(tf.len());
        for (t, n) in tf {
            let key: Box<str> = t.into();
            self.postings.entry(key.clone()).or_default().push((id, n));
            *self.df.entry(key.clone()).or_default() += 1;
            distinct.push(key);
        }
        let i = id as usize;
        if self.docs.len() <= i {
            self.docs.resize(i + 1, None);
        }
        self.docs[i] = Some(DocInfo {
            len: terms.len() as u32,
            terms: distinct,
        });
        self.live += 1;
        self.total_len += terms.len() as u64;
    }

    /// Removes chunk `id` (no-op if absent).
    pub fn remove(&mut self, id: ChunkId) {
        let Some(doc) = self.docs.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        for t in &doc.terms {
            if let Some(n) = self.df.get_mut(t) {
                *n -= 1;
                if *n == 0 {
                    self.df.remove(t);
                }
            }
        }
        self.live -= 1;
        self.dead += 1;
        self.total_len -= u64::from(doc.len);
        if self.dead > self.live.max(1024) {
            self.compact();
        }
    }

    fn compact(&mut self) {
        let docs = &self.docs;
        self.postings.retain(|_, list| {
            list.retain(|&(id, _)| docs.get(id as usize).is_some_and(Option::is_some));
            list.shrink_to_fit();
            !list.is_empty()
        });
        // What closed files held goes back too, not only their postings.
        self.postings.shrink_to_fit();
        self.df.shrink_to_fit();
        self.dead = 0;
    }

    /// Gives every chunk the id `new[old]` and drops those mapped to [`NO_CHUNK`] (the
    /// removed ones: their tombstones go with their slots).
    pub fn renumber(&mut self, new: &[ChunkId]) {
        let renamed = |id: ChunkId| new.get(id as usize).copied().filter(|&n| n != NO_CHUNK);
        self.postings.retain(|_, list| {
            list.retain_mut(|(id, _)| match renamed(*id) {
                Some(n) => {
                    *id = n;
                    true
                }
                None => false,
            });
            list.shrink_to_fit();
            !list.is_empty()
        });
        self.postings.shrink_to_fit();
        let mut docs: Vec<Option<DocInfo>> = Vec::with_capacity(self.live as usize);
        for (old, doc) in std::mem::take(&mut self.docs).into_iter().enumerate() {
            if let (Some(doc), Some(n)) = (doc, renamed(old as ChunkId)) {
                let n = n as usize;
                if docs.len() <= n {
                    docs.resize(n + 1, None);
                }
                docs[n] = Some(doc);
            }
        }
        docs.shrink_to_fit();
        self.docs = docs;
        self.df.shrink_to_fit();
        self.dead = 0;
    }

    /// Chunk slots, postings (tombstones included) and distinct terms.
    pub fn footprint(&self) -> (usize, usize, usize) {
        let postings = self.postings.values().map(Vec::len).sum();
        (self.docs.len(), postings, self.postings.len())
    }

    /// Live chunks.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.live as usize
    }

    /// Inverse document frequency of a term over the live chunks (0 when absent).
    pub fn idf(&self, term: &str) -> f32 {
        let df = self.df.get(term).copied().unwrap_or(0);
        if df == 0 {
            return 0.0;
        }
        let n = self.live as f32;
        ((n - df as f32 + 0.5) / (df as f32 + 0.5) + 1.0).ln()
    }

    /// The `k` best chunks for the query's terms, best first, with their scores.
    pub fn search(&self, query: &[String], k: usize) -> Vec<(ChunkId, f32)> {
        if self.live == 0 {
            return Vec::new();
        }
        let avg = self.total_len as f32 / self.live as f32;
        let mut seen: Vec<&str> = Vec::new();
        let mut scores: FxHashMap<ChunkId, f32> = FxHashMap::default();
        for t in query {
            if seen.contains(&t.as_str()) {
                continue;
            }
            seen.push(t);
            let Some(list) = self.postings.get(t.as_str()) else {
                continue;
            };
            let idf = self.idf(t);
            for &(id, tf) in list {
                let Some(Some(doc)) = self.docs.get(id as usize) else {
                    continue;
                };
                let tf = f32::from(tf);
                let norm = K1 * (1.0 - B + B * doc.len as f32 / avg.max(1.0));
                *scores.entry(id).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        top_k(scores.into_iter(), k)
    }
}

/// The `k` highest-scoring entries, best first (ties by id, so results are stable).
pub fn top_k(items: impl Iterator<Item = (ChunkId, f32)>, k: usize) -> Vec<(ChunkId, f32)> {
    let mut all: Vec<(ChunkId, f32)> = items.collect();
    let by = |a: &(ChunkId, f32), b: &(ChunkId, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if all.len() > k && k > 0 {
        all.select_nth_unstable_by(k - 1, by);
        all.truncate(k);
    }
    all.sort_by(by);
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terms::terms;

    #[test]
    fn the_chunk_with_the_rare_terms_wins_and_removal_counts_out() {
        let mut lex = Lexical::default();
        lex.insert(0, &terms("fn parse_config(path) { read(path) }"));
        lex.insert(
            1,
            &terms("fn retry_upload(file) { for attempt in 0..3 { upload(file) } }"),
        );
        lex.insert(2, &terms("fn upload(file) { send(file) }"));
        let hits = lex.search(&terms("retry failed uploads"), 10);
        assert_eq!(hits[0].0, 1, "{hits:?}");
        assert!(hits.iter().all(|h| h.0 != 0));
        lex.remove(1);
        let hits = lex.search(&terms("retry failed uploads"), 10);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [2]);
        assert_eq!(lex.len(), 2);
        assert_eq!(lex.idf("retry"), 0.0);
    }

    #[test]
    fn compaction_keeps_answers() {
        let mut lex = Lexical::default();
        for i in 0..3000u32 {
            lex.insert(
                i,
                &terms(&format!("fn f{i}() {{ shared_name(); unique{i}() }}")),
            );
        }
        for i in 0..2500u32 {
            lex.remove(i);
        }
        assert_eq!(lex.len(), 500);
        let hits = lex.search(&terms("unique2999 shared name"), 3);
        assert_eq!(hits[0].0, 2999);
        let hits = lex.search(&terms("unique10"), 3);
        assert!(hits.iter().all(|h| h.0 >= 2500), "{hits:?}");
    }

    #[test]
    fn top_k_is_sorted_and_stable() {
        let got = top_k([(3, 1.0), (1, 2.0), (2, 2.0), (0, 0.5)].into_iter(), 3);
        assert_eq!(got, [(1, 2.0), (2, 2.0), (3, 1.0)]);
    }
}
