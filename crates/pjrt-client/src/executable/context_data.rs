//! Rust values owned by an execute context for XLA FFI handlers (the FFI extension's user data).
//!
//! The plugin is given a pointer to the value and a deleter to call when the context goes. The
//! deleter never trusts the pointer it is handed: it looks it up among the values this module
//! owns and releases the one it finds, so a deleter called twice, late, or with a foreign pointer
//! frees nothing twice and nothing foreign. Whatever the plugin never hands back (a plugin form
//! that takes no deleter, or a failed add) is released by the context itself, after
//! `PJRT_ExecuteContext_Destroy`: each value is dropped exactly once, and never while the plugin
//! can still reach it through the context.

use std::collections::HashMap;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

use crate::call::panic::no_unwind;
use crate::call::release::{release_later, CallbackScope};

/// The value and one byte after it, so that every value, zero-sized ones too, has an address of
/// its own while it lives (the address is its key). `repr(C)`: the value sits at offset 0, so the
/// pointer the plugin gets is a pointer to `T`.
#[repr(C)]
struct Owned<T> {
    value: T,
    _distinct_address: u8,
}

/// Sole owner of one boxed [`Owned`] (freed on drop).
struct Adopted<T> {
    ptr: NonNull<Owned<T>>,
}

// SAFETY: `Adopted<T>` owns a `T` (like a `Box<T>`) and `T: Send + Sync` is required to make one.
unsafe impl<T: Send + Sync> Send for Adopted<T> {}
// SAFETY: as above; shared access only reads the pointer.
unsafe impl<T: Send + Sync> Sync for Adopted<T> {}

impl<T> Drop for Adopted<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::into_raw` in `adopt` and is freed only here, once.
        drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
    }
}

/// A type-erased [`Adopted`] (dropping it drops the value).
pub(crate) type OwnedValue = Box<dyn Send + Sync>;

/// Every value handed to a plugin and not released yet, by address.
fn owned_values() -> &'static Mutex<HashMap<usize, OwnedValue>> {
    static OWNED: OnceLock<Mutex<HashMap<usize, OwnedValue>>> = OnceLock::new();
    OWNED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Takes ownership of `value` and returns the pointer to give the plugin (its key).
pub(crate) fn adopt<T: Send + Sync + 'static>(value: T) -> *mut c_void {
    let ptr = NonNull::from(Box::leak(Box::new(Owned { value, _distinct_address: 0 })));
    let key = ptr.as_ptr() as usize;
    let adopted: OwnedValue = Box::new(Adopted { ptr });
    owned_values().lock().unwrap_or_else(|p| p.into_inner()).insert(key, adopted);
    ptr.as_ptr().cast()
}

/// Removes the value adopted at `key`, if it is still owned here.
pub(crate) fn take(key: usize) -> Option<OwnedValue> {
    owned_values().lock().unwrap_or_else(|p| p.into_inner()).remove(&key)
}

/// The deleter given to the plugin. It may run on a plugin thread, inside the plugin: the value
/// is dropped on the release thread (it is the user's, and its drop may call the plugin).
pub(crate) extern "C" fn release_user_data(data: *mut c_void) {
    let _scope = CallbackScope::enter();
    no_unwind(|| {
        if let Some(value) = take(data as usize) {
            release_later(value);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_value_is_released_once_however_often_the_deleter_runs() {
        let drops = Arc::new(AtomicUsize::new(0));
        let ptr = adopt(Counted(drops.clone()));
        release_user_data(ptr);
        release_user_data(ptr);
        release_user_data(std::ptr::null_mut()); // foreign pointers find nothing
        crate::call::release::flush_released();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(take(ptr as usize).is_none());
    }

    #[test]
    fn zero_sized_values_get_distinct_keys_and_the_pointer_is_the_value() {
        let (a, b) = (adopt(()), adopt(()));
        assert_ne!(a, b);
        let n = adopt(7u64);
        // SAFETY: `n` points to the adopted u64, alive until taken.
        assert_eq!(unsafe { *n.cast::<u64>() }, 7);
        for key in [a, b, n] {
            assert!(take(key as usize).is_some());
        }
    }
}
