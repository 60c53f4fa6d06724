//! The CLI subcommands other than `serve`.

pub mod bench_heavy;
pub mod bench_search;
pub mod doctor;
pub mod edit;
pub mod eval;
pub mod eval_html;
pub mod eval_results;
pub mod mcp;
pub mod model;
pub mod replay;
pub mod run;
pub mod stats;
