//! What the server holds between requests.

use std::path::PathBuf;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use agentls_text::{DocumentStore, PositionEncoding};

use crate::config;

/// Shared server state. Locks here are std locks, held briefly and never across `.await`.
#[derive(Debug, Default)]
pub struct State {
    /// Open documents: the live buffers.
    pub store: DocumentStore,
    encoding: RwLock<PositionEncoding>,
    config: RwLock<config::Merged>,
    root: RwLock<Option<PathBuf>>,
}

/// Reads a lock, recovering from poisoning: the values behind these locks are replaced
/// whole, so a panic elsewhere cannot leave them half-written.
fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    /// The position encoding negotiated in `initialize`.
    pub fn encoding(&self) -> PositionEncoding {
        *read(&self.encoding)
    }

    /// Sets the position encoding (once, in `initialize`).
    pub fn set_encoding(&self, encoding: PositionEncoding) {
        *write(&self.encoding) = encoding;
    }

    /// Sets the workspace root.
    pub fn set_root(&self, root: Option<PathBuf>) {
        *write(&self.root) = root;
    }

    /// A copy of the merged configuration and its provenance.
    pub fn config(&self) -> config::Merged {
        read(&self.config).clone()
    }

    /// Changes the configuration under the lock; returns the problems after the change.
    pub fn update_config(&self, f: impl FnOnce(&mut config::Merged)) -> Vec<String> {
        let mut guard = write(&self.config);
        f(&mut guard);
        guard.problems.clone()
    }
}
