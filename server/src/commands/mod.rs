//! The CLI subcommands other than `serve`.

pub mod doctor;
pub mod edit;
pub mod mcp;
pub mod model;
pub mod run;
pub mod stats;
