//! Workspace grep (in progress).
