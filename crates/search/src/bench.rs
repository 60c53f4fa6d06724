//! Benchmarks (coming).
