//! The exact vector search both searches share: the dot product of unit vectors, the
//! scan of them all ([`nearest`]), and how deep a ranking is read ([`DEPTH`]). Below
//! the index ([`crate::SemanticIndex`]) and the graph ([`crate::Graph`]), which scores
//! its answers the same way so that the two agree where they meet.

use crate::lexical::{ChunkId, top_k};

/// How deep each ranking is read before fusing.
pub const DEPTH: usize = 200;

/// The `k` vectors most similar to `query` (by dot product: the embedders' vectors are
/// normalised), best first: a scan of them all, which `agentls bench search` times
/// against the query budget at growing sizes. Not generic, so that the benchmark runs
/// the code compiled here, not a copy at the binary's optimisation level.
pub fn nearest(
    query: &[f32],
    vectors: &mut dyn Iterator<Item = (ChunkId, &[f32])>,
    k: usize,
) -> Vec<(ChunkId, f32)> {
    top_k(vectors.map(|(id, v)| (id, dot(query, v))), k)
}

/// Eight running sums: a single one is a chain of dependent additions that the compiler
/// may not reorder into vector lanes (36k vectors of 384: 14.6 ms a scan with one sum,
/// 8.4-9.3 ms with eight, measured alone).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (ca, ra) = a.as_chunks::<8>();
    let (cb, rb) = b.as_chunks::<8>();
    let mut acc = [0.0f32; 8];
    for (x, y) in ca.iter().zip(cb) {
        for ((s, x), y) in acc.iter_mut().zip(x).zip(y) {
            *s += x * y;
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}
