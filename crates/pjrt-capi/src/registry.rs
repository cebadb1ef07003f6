//! Handles: what C holds for a runtime, a model or a status is not an address but an id into a
//! registry of its kind (a slot number and the slot's generation, with the kind in the top
//! byte), cast to the opaque pointer type. Looking one up takes a read lock and clones an
//! `Arc`; a handle freed already, one of another kind, or a made-up value is an error, never a
//! read of freed memory, since nothing C hands in is ever dereferenced as a handle. (A boxed
//! object with a magic field cleared on free would read freed memory to find out.)
//!
//! A slot's generation grows by one each time the slot is freed, so a stale handle stays stale
//! when its slot is reused, until the 32-bit generation wraps: 2^32 frees of the same slot.
//!
//! An object is kept by `Arc`: a call that is using it when another thread frees its handle
//! finishes with it, and the object goes when the last such call returns.

use std::sync::{Arc, RwLock};

// The handle packs the kind, a 32-bit generation and a 24-bit slot into a pointer-sized value.
#[cfg(not(target_pointer_width = "64"))]
compile_error!("pjrt-capi's handles are 64-bit values: it builds for 64-bit targets only");

/// How many objects of one kind can be alive at once.
const MAX_SLOTS: usize = 1 << 24;

/// One slot: its generation, and the object while it is alive.
struct Slot<T> {
    generation: u32,
    value: Option<Arc<T>>,
}

struct Slots<T> {
    slots: Vec<Slot<T>>,
    /// Slots whose object was freed, to reuse.
    free: Vec<u32>,
}

/// The live objects of one kind, by handle.
pub(crate) struct Registry<T> {
    /// In the handle's top byte: which registry it belongs to (never 0, so no handle is NULL).
    kind: u8,
    /// What a handle of this kind is called in messages (`pjrt_model`).
    name: &'static str,
    slots: RwLock<Slots<T>>,
}

/// Why a handle was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum HandleError {
    /// NULL.
    Null,
    /// Not a handle of this kind: another kind's, or no handle at all.
    Foreign,
    /// A handle of this kind whose object was freed.
    Freed,
}

impl<T> Registry<T> {
    /// An empty registry; `kind` must differ between registries and not be 0.
    pub(crate) const fn new(kind: u8, name: &'static str) -> Registry<T> {
        Registry { kind, name, slots: RwLock::new(Slots { slots: Vec::new(), free: Vec::new() }) }
    }

    /// What a handle of this kind is called in messages.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Keeps `value` and returns its handle; `None` when 2^24 objects of this kind are alive.
    pub(crate) fn insert(&self, value: T) -> Option<usize> {
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        let index = match slots.free.pop() {
            Some(index) => index as usize,
            None if slots.slots.len() < MAX_SLOTS => {
                slots.slots.push(Slot { generation: 0, value: None });
                slots.slots.len() - 1
            }
            None => return None,
        };
        let slot = &mut slots.slots[index];
        slot.value = Some(Arc::new(value));
        Some(self.encode(index, slot.generation))
    }

    /// The object `handle` names.
    pub(crate) fn get(&self, handle: usize) -> Result<Arc<T>, HandleError> {
        let (index, generation) = self.decode(handle)?;
        let slots = self.slots.read().unwrap_or_else(|e| e.into_inner());
        match slots.slots.get(index) {
            Some(Slot { generation: g, value: Some(value) }) if *g == generation => Ok(value.clone()),
            Some(_) => Err(HandleError::Freed),
            None => Err(HandleError::Foreign),
        }
    }

    /// Forgets the object `handle` names (it is dropped once no call uses it any more) and
    /// returns it; the handle is stale from here on.
    pub(crate) fn remove(&self, handle: usize) -> Result<Arc<T>, HandleError> {
        let (index, generation) = self.decode(handle)?;
        let mut slots = self.slots.write().unwrap_or_else(|e| e.into_inner());
        let removed = match slots.slots.get_mut(index) {
            Some(slot) if slot.generation == generation && slot.value.is_some() => {
                slot.generation = slot.generation.wrapping_add(1);
                slot.value.take()
            }
            Some(_) => return Err(HandleError::Freed),
            None => return Err(HandleError::Foreign),
        };
        slots.free.push(index as u32);
        removed.ok_or(HandleError::Freed)
    }

    /// How many objects are alive.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.slots.read().unwrap_or_else(|e| e.into_inner()).slots.iter().filter(|s| s.value.is_some()).count()
    }

    fn encode(&self, index: usize, generation: u32) -> usize {
        ((self.kind as usize) << 56) | ((generation as usize) << 24) | index
    }

    fn decode(&self, handle: usize) -> Result<(usize, u32), HandleError> {
        if handle == 0 {
            return Err(HandleError::Null);
        }
        if (handle >> 56) as u8 != self.kind {
            return Err(HandleError::Foreign);
        }
        Ok((handle & (MAX_SLOTS - 1), (handle >> 24) as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_foreign_and_null_handles_are_refused() {
        let a: Registry<&str> = Registry::new(1, "a");
        let b: Registry<&str> = Registry::new(2, "b");
        let h = a.insert("x").unwrap();
        assert_eq!(*a.get(h).unwrap(), "x");
        assert_eq!(b.get(h).unwrap_err(), HandleError::Foreign);
        assert_eq!(a.get(0).unwrap_err(), HandleError::Null);
        assert_eq!(a.get(h + 1).unwrap_err(), HandleError::Foreign, "a slot never used");
        assert_eq!(*a.remove(h).unwrap(), "x");
        assert_eq!(a.get(h).unwrap_err(), HandleError::Freed);
        assert_eq!(a.remove(h).unwrap_err(), HandleError::Freed);
        // The slot is reused with a new generation: the old handle stays stale.
        let h2 = a.insert("y").unwrap();
        assert_ne!(h, h2);
        assert_eq!(a.get(h).unwrap_err(), HandleError::Freed);
        assert_eq!(*a.get(h2).unwrap(), "y");
        assert_eq!(a.live(), 1);
    }

    #[test]
    fn an_object_in_use_outlives_its_handle() {
        let a: Registry<String> = Registry::new(1, "a");
        let h = a.insert("kept".to_owned()).unwrap();
        let in_use = a.get(h).unwrap();
        a.remove(h).unwrap();
        assert_eq!(*in_use, "kept");
    }
}
