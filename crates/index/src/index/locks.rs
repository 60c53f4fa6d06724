//! What the lock-free update paths (`reparse.rs` for buffers, `refresh.rs` for the
//! disk) share: the index's lock taken past a poisoning panic (a panic mid-update
//! leaves the previous index, which stays usable), and, for tests, hooks that run
//! while a parse or read holds no lock.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::Index;

/// The index for reading.
pub(super) fn read(index: &RwLock<Index>) -> RwLockReadGuard<'_, Index> {
    index.read().unwrap_or_else(PoisonError::into_inner)
}

/// The index for writing.
pub(super) fn write(index: &RwLock<Index>) -> RwLockWriteGuard<'_, Index> {
    index.write().unwrap_or_else(PoisonError::into_inner)
}

/// Code a test runs once, when work on a path reaches a point (each path's hook
/// fires once).
#[cfg(test)]
pub(crate) struct PathHooks(std::sync::Mutex<Vec<(std::path::PathBuf, Hook)>>);

#[cfg(test)]
type Hook = Box<dyn Fn() + Send>;

#[cfg(test)]
impl PathHooks {
    pub(crate) const fn new() -> Self {
        Self(std::sync::Mutex::new(Vec::new()))
    }

    /// Runs `f` the next time work on `path` reaches this point (once).
    pub(crate) fn on(&self, path: &std::path::Path, f: impl Fn() + Send + 'static) {
        if let Ok(mut hooks) = self.0.lock() {
            hooks.push((path.to_owned(), Box::new(f)));
        }
    }

    pub(crate) fn fire(&self, path: &std::path::Path) {
        let hook = self.0.lock().ok().and_then(|mut hooks| {
            let i = hooks.iter().position(|(p, _)| p == path)?;
            Some(hooks.swap_remove(i).1)
        });
        if let Some(f) = hook {
            f();
        }
    }
}
