//! [`Graph`]: an approximate nearest-neighbour index (HNSW, instant-distance's) over a
//! snapshot of the vectors, searched instead of the whole scan once a workspace holds
//! more vectors than the scan can read within the query budget.
//!
//! The graph is built once over the vectors of the moment, in the background, and never
//! changed: chunks embedded after it are scanned beside it (the "rest"), and chunks
//! removed since are dropped from its answers. When the rest and the removed together
//! outgrow a share of it, [`SemanticIndex::graph_wanted`](crate::SemanticIndex::graph_wanted)
//! asks for a new one.
//!
//! A build in flight holds every vector it was given (and its links) until it ends:
//! minutes past 100k vectors. When those vectors go meanwhile (the files closed, the
//! embedder changed, the chunks renumbered) the index moves its epoch on and the build
//! stops at its next distance ([`Stop`]), so that its memory goes at once too.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use instant_distance::{Builder, HnswMap, Point, Search};

use crate::lexical::{ChunkId, NO_CHUNK, top_k};
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

/// Tells a build in flight that the vectors it was given went: the index's epoch moved
/// on from the one the build started at.
#[derive(Clone)]
pub(crate) struct Stop {
    epoch: Arc<AtomicU64>,
    started: u64,
}

impl Stop {
    /// A build started at `epoch`'s value now.
    pub(crate) fn at(epoch: &Arc<AtomicU64>) -> Stop {
        Stop {
            epoch: epoch.clone(),
            started: epoch.load(Ordering::Acquire),
        }
    }

    /// The epoch it started at.
    pub(crate) fn started(&self) -> u64 {
        self.started
    }

    /// Whether the epoch moved on.
    pub(crate) fn stopped(&self) -> bool {
        self.epoch.load(Ordering::Acquire) != self.started
    }
}

thread_local! {
    /// The build this thread links for, on the build's own pool's threads.
    static BUILDING: RefCell<Option<Stop>> = const { RefCell::new(None) };
}

/// What a stopped build unwinds with: `resume_unwind` with it runs no panic hook, and
/// rayon carries it from the worker that stopped to the build's caller.
struct Stopped;

/// Unwinds out of the build when the thread's build was stopped (the linking crate
/// offers no way to end a build early; its distance is called throughout).
fn stop_if_stopped() {
    let stopped = BUILDING.with(|b| b.borrow().as_ref().is_some_and(Stop::stopped));
    if stopped {
        std::panic::resume_unwind(Box::new(Stopped));
    }
}

/// A vector shared with the index's entry: the graph holds no copy of the floats.
#[derive(Clone)]
struct Vector(Arc<[f32]>);

impl Point for Vector {
    /// The embedders' vectors are unit length: cosine distance is one minus the dot
    /// product.
    fn distance(&self, other: &Self) -> f32 {
        stop_if_stopped();
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
        // Without a stop nothing gives the build up: an empty graph is never returned.
        Self::build_until(vectors, None).unwrap_or_else(|| Graph {
            map: Builder::default().build(Vec::new(), Vec::new()),
            covered: Vec::new(),
        })
    }

    /// [`Graph::build`], given up (`None`) as soon as `stop` says its vectors went:
    /// what it held so far is dropped then, not when it would have ended.
    pub(crate) fn build_until(
        vectors: Vec<(ChunkId, Arc<[f32]>)>,
        stop: Option<Stop>,
    ) -> Option<Graph> {
        if stop.as_ref().is_some_and(Stop::stopped) {
            return None;
        }
        Self::link(vectors, stop)
    }

    /// The build itself: `stop` is looked at on every distance the linking computes.
    fn link(vectors: Vec<(ChunkId, Arc<[f32]>)>, stop: Option<Stop>) -> Option<Graph> {
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
            Some(pool) => {
                // The pool is this build's alone: each of its threads (the caller's
                // part runs on one too) stops when told.
                pool.broadcast(|_| BUILDING.with(|b| *b.borrow_mut() = stop.clone()));
                let linked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    pool.install(|| builder.build(points, ids))
                }));
                match linked {
                    Ok(map) => map,
                    Err(payload) if payload.is::<Stopped>() => return None,
                    Err(payload) => std::panic::resume_unwind(payload),
                }
            }
            // No thread could be started: rayon's own pool (the build runs to its end
            // and is refused then).
            None => builder.build(points, ids),
        };
        Some(Graph { map, covered })
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.map.values.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.map.values.is_empty()
    }

    /// Follows a renumbering of the chunk ids: `new[old]` is a chunk's new id,
    /// [`ChunkId::MAX`] for a chunk removed (its vector stays linked, answering for none).
    pub(crate) fn renumber(&mut self, new: &[ChunkId]) {
        let mut covered = Vec::new();
        for value in &mut self.map.values {
            *value = new.get(*value as usize).copied().unwrap_or(NO_CHUNK);
            if *value != NO_CHUNK {
                let i = *value as usize;
                if covered.len() <= i {
                    covered.resize(i + 1, false);
                }
                covered[i] = true;
            }
        }
        self.covered = covered;
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

    /// A build told to stop unwinds out of the linking crate on its pool's threads and
    /// returns nothing, without a panic; one not told runs to its end.
    #[test]
    fn a_stopped_build_gives_up_and_an_untold_one_ends() {
        let pairs = |n| -> Vec<(ChunkId, Arc<[f32]>)> {
            vectors(n, 16, 3)
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i as ChunkId, v))
                .collect()
        };
        let epoch = Arc::new(AtomicU64::new(0));
        let stop = Stop::at(&epoch);
        epoch.fetch_add(1, Ordering::AcqRel);
        assert!(stop.stopped());
        // Past the check before it starts: the distances themselves stop it.
        assert!(Graph::link(pairs(2_000), Some(stop.clone())).is_none());
        assert!(Graph::build_until(pairs(10), Some(stop)).is_none());
        let going = Stop::at(&epoch);
        let graph = Graph::build_until(pairs(500), Some(going)).expect("not told to stop");
        assert_eq!(graph.len(), 500);
        // A search, on a thread that links for no build, is never stopped.
        assert_eq!(graph.nearest(&pairs(1)[0].1, 1, |_| true)[0].0, 0);
    }

    /// Renumbered, the graph answers by the new ids and for no removed chunk.
    #[test]
    fn a_renumbered_graph_answers_by_the_new_ids() {
        let all = vectors(200, 16, 5);
        let mut graph = Graph::build(
            all.iter()
                .enumerate()
                .map(|(i, v)| (i as ChunkId, v.clone()))
                .collect(),
        );
        // Even ids removed, odd ones moved to id / 2.
        let new: Vec<ChunkId> = (0..200u32)
            .map(|i| if i % 2 == 0 { NO_CHUNK } else { i / 2 })
            .collect();
        graph.renumber(&new);
        assert!(graph.covers(0) && graph.covers(99) && !graph.covers(100));
        let got = graph.nearest(&all[7], 3, |id| id != NO_CHUNK);
        assert_eq!(got[0].0, 3, "{got:?}");
        assert!(got.iter().all(|p| p.0 < 100));
    }
}
