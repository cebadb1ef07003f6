//! The panic boundary: no panic of ours or of a user's closure unwinds into the plugin. Every
//! trampoline runs its body through [`catch`] and turns a panic into an error the plugin can
//! take (git2's `panic.rs` plays the same part).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`, catching a panic: its message comes back as the error.
pub(crate) fn catch<T>(body: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| panic_message(payload.as_ref()))
}

/// Runs `body`, swallowing a panic: for callbacks and drops whose panic has nowhere to go.
pub(crate) fn no_unwind(body: impl FnOnce()) {
    let _ = catch(body);
}

/// Text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn panics_become_their_message() {
        assert_eq!(super::catch(|| 7), Ok(7));
        assert_eq!(super::catch(|| panic!("boom {}", 1)), Err::<(), _>("boom 1".to_owned()));
        assert_eq!(super::catch(|| std::panic::panic_any(3u8)), Err::<(), _>("panic with a non-string payload".into()));
    }
}
