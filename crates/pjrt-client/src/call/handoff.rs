//! What this crate hands a plugin to give back later (a callback's `user_arg`, a deleter's
//! argument) is an id, never a pointer to our memory.
//!
//! A plugin is foreign code: it may call a callback twice, never, or with another `user_arg`.
//! With a pointer, a second call would free a box twice and a wrong argument would be
//! dereferenced. With an id, the value lives in a table here: the first call takes it out, a
//! second call (or an id this crate never gave) finds nothing and does nothing, and the value
//! is checked to be of the type the callback expects. The ids count up from a random start,
//! so an unrelated number a plugin passes is very unlikely to name a live entry, and if it
//! does, the type check refuses it unless it is the same kind of value.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

type Entries = HashMap<u64, Box<dyn Any + Send>>;

fn entries() -> MutexGuard<'static, Entries> {
    static ENTRIES: OnceLock<Mutex<Entries>> = OnceLock::new();
    // A panic while the lock is held cannot leave the map half-updated (every update is one
    // insert or remove), so a poisoned lock is still usable.
    ENTRIES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner())
}

fn next_id() -> u64 {
    static NEXT: OnceLock<AtomicU64> = OnceLock::new();
    let next = NEXT.get_or_init(|| {
        // A start that differs per process (and is never 0, which reads as NULL).
        let seed = std::collections::hash_map::RandomState::new();
        let start = std::hash::BuildHasher::hash_one(&seed, std::process::id()) | 1 << 62;
        AtomicU64::new(start)
    });
    next.fetch_add(1, Ordering::Relaxed)
}

/// Keeps `value` until [`take`] with the returned id; the id, as a pointer-sized integer, is
/// what the plugin is given as `user_arg`.
pub(crate) fn give<T: Any + Send>(value: T) -> *mut c_void {
    let id = next_id();
    entries().insert(id, Box::new(value));
    id as usize as *mut c_void
}

/// Takes back the value given with `id`, if it is still there and of type `T`. `None` for an
/// id taken before, never given, or given for another type (which stays in the table).
pub(crate) fn take<T: Any + Send>(id: *mut c_void) -> Option<T> {
    let id = id as usize as u64;
    let mut entries = entries();
    if !entries.get(&id).is_some_and(|value| value.is::<T>()) {
        return None;
    }
    let value = entries.remove(&id)?;
    drop(entries);
    value.downcast::<T>().ok().map(|boxed| *boxed)
}

/// A clone of the value given with `id`, left in place: for callbacks the plugin may call
/// many times (host send/receive). `None` for an id taken, never given, or of another type.
pub(crate) fn get<T: Any + Send + Clone>(id: *mut c_void) -> Option<T> {
    entries().get(&(id as usize as u64)).and_then(|value| value.downcast_ref::<T>()).cloned()
}

/// Whether `id` still holds a value (for tests).
#[cfg(test)]
pub(crate) fn is_held(id: *mut c_void) -> bool {
    entries().contains_key(&(id as usize as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_taken_back_once_and_only_as_its_own_type() {
        let id = give(String::from("hello"));
        assert!(!id.is_null());
        assert!(is_held(id));
        assert_eq!(take::<u32>(id), None, "another type: refused, and kept");
        assert!(is_held(id));
        assert_eq!(take::<String>(id).as_deref(), Some("hello"));
        assert_eq!(take::<String>(id), None, "a second call finds nothing");
        assert_eq!(take::<String>(std::ptr::null_mut()), None);
        assert_eq!(take::<String>(0xdead_beef as *mut c_void), None, "never given");
        let (a, b) = (give(1u8), give(2u8));
        assert_ne!(a, b);
        assert_eq!((take::<u8>(b), take::<u8>(a)), (Some(2), Some(1)));
    }
}
