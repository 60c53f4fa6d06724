//! The CLI subcommands other than `serve`.

pub mod doctor;
pub mod edit;
pub mod replay;
pub mod run;
