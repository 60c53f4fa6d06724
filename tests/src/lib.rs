//! Test support for agentls.
