//! Semantic code search: find code by what it does, offline, in milliseconds.
//!
//! Files become [`Chunk`]s ([`chunk_file`]: definitions from the index's syntax trees
//! with their comments, split when long; other lines in windows). A [`SemanticIndex`]
//! ranks them three ways: BM25 over identifiers split on case and underscores
//! ([`terms`]), cosine similarity of vectors from an [`Embedder`], and both fused by
//! reciprocal rank with the index's signals (a chunk defining a name the query says
//! beats one that mentions it; open and recently edited files first among equals).
//!
//! Invariants:
//! - Synchronous, tokio-free, LSP-free; the embedder is the caller's (the index never
//!   calls a model on its own: [`SemanticIndex::embed_pending`] is called by whoever
//!   schedules the work).
//! - Chunks are searchable lexically as soon as their file is set; vectors follow.
//!   A chunk whose text was embedded before (same embedder) gets its vector back without
//!   a model call, so re-reading a file re-embeds only the chunks that changed.
//! - Where the workspace lies changes no score: a chunk is matched and embedded with
//!   its path beneath the root ([`chunk_text`]), and files are chunked in path order,
//!   so ties between equal scores fall the same way in every run.
//! - Vector search is brute force over unit vectors (384 floats per chunk, a few
//!   milliseconds for tens of thousands of chunks on one core) until a workspace holds
//!   [`GRAPH_MIN`] of them; then a [`Graph`] built in the background answers for the
//!   vectors it holds, and the scan reads only those embedded after it.
//! - Nothing of a closed buffer stays ([`SemanticIndex::footprint`] counts what is kept):
//!   its chunks and postings go, the vectors of texts no chunk has any more are dropped
//!   ([`SemanticIndex::prune_vectors`]), the chunk ids are renumbered once removed
//!   chunks outnumber half the live ones, and a graph build whose vectors went stops.

mod chunk;
mod graph;
mod index;
mod lexical;
mod priority;
mod scan;
mod service;
pub mod store;
mod terms;

pub use chunk::{Chunk, chunk_file};
pub use graph::{GRAPH_MIN, Graph};
pub use index::{
    BuiltGraph, Embedder, Footprint, GraphInput, Hit, Mode, Query, SemanticIndex, Stats,
    VECTOR_WEIGHT, chunk_text, files_of,
};
pub use lexical::ChunkId;
pub use priority::at_low_priority;
pub use scan::{DEPTH, nearest};
pub use service::{Answer, Linked, MovedBy, PathGlob, Service, Succession};
pub use terms::terms;

#[cfg(test)]
mod tests;
