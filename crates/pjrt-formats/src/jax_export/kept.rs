//! Executables kept per input signature: a bounded list, the least recently used dropped first.

use std::sync::{Arc, Mutex};

use pjrt_client::LoadedExecutable;

use super::polymorphic::InputShape;

/// Executables kept per input signature (each input's element type and dimensions), at most
/// [`KeptExecutables::capacity`] of them, the least recently used dropped first: what a
/// [`super::Runner`] keeps for a `jax.export` model, and what `pjrt serve` keeps for a program
/// with `?` dimensions.
///
/// `Send + Sync`: the list is behind a mutex.
///
/// ```
/// use pjrt_formats::jax_export::KeptExecutables;
/// let kept = KeptExecutables::new(0); // at least one is kept
/// assert_eq!((kept.capacity(), kept.len()), (1, 0));
/// assert!(kept.get(&[(pjrt_client::ElementType::F32, vec![2, 3])]).is_none());
/// ```
pub struct KeptExecutables {
    capacity: usize,
    /// Most recently used last.
    kept: Mutex<Vec<(Vec<InputShape>, Arc<LoadedExecutable>)>>,
}

impl KeptExecutables {
    /// An empty list keeping up to `capacity` executables (at least one).
    pub fn new(capacity: usize) -> KeptExecutables {
        KeptExecutables { capacity: capacity.max(1), kept: Mutex::new(Vec::new()) }
    }

    /// The most executables kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many executables are kept now.
    pub fn len(&self) -> usize {
        self.list().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The executable kept for `shapes`, now the most recently used.
    pub fn get(&self, shapes: &[InputShape]) -> Option<Arc<LoadedExecutable>> {
        let mut kept = self.list();
        let i = kept.iter().position(|(s, _)| s == shapes)?;
        let entry = kept.remove(i);
        let exe = entry.1.clone();
        kept.push(entry);
        Some(exe)
    }

    /// Keeps `exe` for `shapes` (replacing one another thread compiled for them meanwhile),
    /// dropping the least recently used when full.
    pub fn insert(&self, shapes: &[InputShape], exe: Arc<LoadedExecutable>) {
        let mut kept = self.list();
        kept.retain(|(s, _)| s != shapes);
        if kept.len() >= self.capacity {
            kept.remove(0);
        }
        kept.push((shapes.to_vec(), exe));
    }

    fn list(&self) -> std::sync::MutexGuard<'_, Vec<(Vec<InputShape>, Arc<LoadedExecutable>)>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for KeptExecutables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptExecutables").field("capacity", &self.capacity).field("len", &self.len()).finish()
    }
}
