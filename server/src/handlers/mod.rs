//! Request and notification handlers: short functions that convert the LSP input,
//! call the libraries, and convert the answer back.

pub mod agent;
pub mod code_actions;
pub mod commands;
pub mod completion;
pub mod debug;
pub mod lifecycle;
pub mod next_edit;
pub mod semantic;
pub mod symbols;
pub mod text_sync;
