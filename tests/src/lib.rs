//! Test support for agentls.

pub mod model_server;
