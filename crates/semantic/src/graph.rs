//! [`Graph`]: an approximate nearest-neighbour index (HNSW, instant-distance's) over a
//! snapshot of the vectors, searched instead of the whole scan once a workspace holds
//! more vectors than the scan can read within the query budget.
//!
//! The graph is built once over the vectors of the moment, in the background, and never
//! changed: chunks embedded after it are scanned beside it (the "rest"), and chunks
//! removed since are dropped from its answers. When the rest and the removed together
//! outgrow a share of it, [`SemanticIndex::graph_wanted`](crate::SemanticIndex::graph_wanted)
//! asks for a new one.

use std::sync::Arc;

use instant_distance::{Builder, HnswMap, Point, Search};

use crate::lexical::{ChunkId, top_k};
use crate::scan::{DEPTH, dot};

/// Vectors from which a workspace is searched through a graph: below this the scan
/// itself stays well inside the 50 ms query budget (`agentls bench search` times both).
pub const GRAPH_MIN: usize = 100_000;

/// Candidates the graph's search keeps (HNSW's `ef`): the fusion reads [`DEPTH`]
/// ranks, and a wider search finds more of the true nearest among them.
const EF_SEARCH: usize = 2 * DEPTH;
/// Candidates kept while linking each vector in (HNSW's `efConstruction`).
const EF_CONSTRUCTION: usize = 100;
/// The build's random layers come from a fixed seed, so that a workspace's graph does
/// not change between runs for that reason.
const SEED: u64 = 0x5eed;

/// A vector shared with the index's entry: the graph holds no copy of the floats.
#[derive(Clone)]
struct Vector(Arc<[f32]>);

impl Point for Vector {
    /// The embedders' vectors are unit length: cosine distance is one minus the dot
    /// product.
    fn distance(&self, other: &Self) -> f32 {
        let d = 1.0 - dot(&self.0, &other.0);
        // The graph orders by this and a NaN (a model's broken vector) has no order.
        if d.is_nan() { 2.0 } else { d }
    }
}

/// The graph over the vectors of some chunks, and which chunks those are.
pub struct Graph {
    map: HnswMap<Vector, ChunkId>,
    /// By chunk id: whether the graph holds its vector.
    covered: Vec<bool>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("len", &self.len()).finish()
    }
}

impl Graph {
    /// Links `vectors` (chunk id, unit vector) into a graph, on every core but at a
    /// lower priority ([`crate::priority::background_pool`]): minutes of work past 100k vectors, which
    /// the editor's requests and the embedding of its edits must not wait behind.
    pub fn build(vectors: Vec<(ChunkId, Arc<[f32]>)>) -> Graph {
        let mut covered = Vec::new();
        let mut points = Vec::with_capacity(vectors.len());
        let mut ids = Vec::with_capacity(vectors.len());
        for (id, v) in vectors {
            let i = id as usize;
            if covered.len() <= i {
                covered.resize(i + 1, false);
            }
            covered[i] = true;
            points.push(Vector(v));
            ids.push(id);
        }
        // Neighbours are the nearest found, without the paper's pruning heuristic: that
        // re-ranks each neighbour's own 64 links for every vector linked in, and took
        // 54 s for mypy's 36k vectors on two cores.
        let builder = Builder::default()
            .select_heuristic(None)
            .ef_search(EF_SEARCH)
            .ef_construction(EF_CONSTRUCTION)
            .seed(SEED);
        let map = match crate::priority::background_pool("agentls-graph", None) {
            Some(pool) => pool.install(|| builder.build(points, ids)),
            // No thread could be started: rayon's own pool (the build still runs).
            None => builder.build(points, ids),
        };
        Graph { map, covered }
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.map.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.map.values.is_empty()
    }

    /// Whether chunk `id`'s vector is in the graph.
    pub fn covers(&self, id: ChunkId) -> bool {
        self.covered.get(id as usize).copied().unwrap_or(false)
    }

    /// Up to `k` chunks accepted by `keep` whose vectors are the nearest the graph finds
    /// to `query`, with their dot product, best first: scored and ordered as the scan
    /// scores and orders them ([`crate::nearest`]), so the two agree where they meet.
    pub fn nearest(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(ChunkId) -> bool,
    ) -> Vec<(ChunkId, f32)> {
        let mut search = Search::default();
        let point = Vector(query.into());
        let found = self
            .map
            .search(&point, &mut search)
            .filter(|item| keep(*item.value))
            .map(|item| (*item.value, dot(query, &item.point.0)));
        top_k(found, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::nearest;

    /// Unit vectors from a fixed sequence (xorshift), `n` of `dim`.
    pub(crate) fn vectors(n: usize, dim: usize, seed: u64) -> Vec<Arc<[f32]>> {
        let mut x = seed.max(1);
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        (0..n)
            .map(|_| {
                let v: Vec<f32> = (0..dim).map(|_| next()).collect();
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.iter().map(|a| a / norm).collect::<Vec<f32>>().into()
            })
            .collect()
    }

    #[test]
    fn the_graph_finds_most_of_the_true_nearest_and_keeps_what_it_is_told() {
        let all = vectors(1_000, 16, 7);
        let graph = Graph::build(
            all.iter()
                .enumerate()
                .map(|(i, v)| (i as ChunkId, v.clone()))
                .collect(),
        );
        assert_eq!(graph.len(), 1_000);
        assert!(graph.covers(999) && !graph.covers(1_000));
        let queries = vectors(20, 16, 99);
        let (mut hit, mut total) = (0, 0);
        for q in &queries {
            let mut scan = all.iter().enumerate().map(|(i, v)| (i as ChunkId, &v[..]));
            let exact: Vec<ChunkId> = nearest(q, &mut scan, 10).iter().map(|p| p.0).collect();
            let got = graph.nearest(q, 10, |_| true);
            assert_eq!(got.len(), 10);
            assert!(got.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
            hit += got.iter().filter(|p| exact.contains(&p.0)).count();
            total += exact.len();
            // What `keep` refuses is never answered.
            let odd = graph.nearest(q, 10, |id| id % 2 == 1);
            assert!(odd.iter().all(|p| p.0 % 2 == 1) && !odd.is_empty());
        }
        let recall = hit as f32 / total as f32;
        assert!(recall >= 0.9, "recall@10 {recall}");
    }
}
