//! Handles used wrongly: freed already, of another kind, made up. Each is an error status (a
//! status freed twice is ignored), never a read of freed memory.

use std::ffi::CStr;
use std::ptr::null_mut;

use pjrt::*;

use crate::support::*;

#[test]
fn a_freed_model_is_an_error_not_a_crash() {
    let runtime = runtime();
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    ok(pjrt_model_free(model));
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    let (code, message) = run_f32(model, &tensors, 1).unwrap_err();
    assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT);
    assert_eq!(message, "model: this pjrt_model was freed already");
    let mut signature =
        pjrt_signature { n_inputs: 0, inputs: std::ptr::null(), n_outputs: 0, outputs: std::ptr::null() };
    // SAFETY: a valid out-pointer.
    assert!(error(unsafe { pjrt_model_signature(model, &mut signature) }).1.contains("freed already"));
    assert!(error(pjrt_model_free(model)).1.contains("freed already"));
    // A new model in the same slot does not revive the old handle.
    let again = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    assert_ne!(again, model);
    assert!(run_f32(model, &tensors, 1).unwrap_err().1.contains("freed already"));
    assert!(run_f32(again, &tensors, 1).is_ok());
    ok(pjrt_model_free(again));
    ok(pjrt_runtime_free(runtime));
    assert!(error(pjrt_runtime_free(runtime)).1.contains("this pjrt_runtime was freed already"));
    let mut model = null_mut();
    let path = std::ffi::CString::new(data(&format!("{MLP}/model.jaxexport")).to_str().unwrap()).unwrap();
    // SAFETY: valid strings and out-pointer.
    let status = unsafe { pjrt_model_load(runtime, path.as_ptr(), std::ptr::null(), &mut model) };
    assert_eq!(error(status).1, "runtime: this pjrt_runtime was freed already");
}

#[test]
fn a_model_outlives_its_runtimes_handle() {
    let runtime = runtime();
    let model = load(runtime, &format!("{MLP}/model.jaxexport"), None);
    ok(pjrt_runtime_free(runtime));
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    assert!(run_f32(model, &tensors, 1).is_ok());
    ok(pjrt_model_free(model));
}

#[test]
fn handles_of_another_kind_or_none_at_all() {
    let runtime = runtime();
    let arrays = arrays(MLP, "in");
    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
    // A runtime passed as a model (C would need a cast: the types differ).
    let (_, message) = run_f32(runtime.cast(), &tensors, 1).unwrap_err();
    assert!(message.contains("model is not a pjrt_model"), "{message}");
    // Pointers that were never handles: an address of ours, small numbers, all bits set.
    let mut local = 0u64;
    for fake in [std::ptr::addr_of_mut!(local) as usize, 1, 0x1234, usize::MAX] {
        let (code, message) = error(pjrt_model_free(fake as *mut pjrt_model));
        assert_eq!(code, PJRT_CODE_INVALID_ARGUMENT);
        assert!(message.contains("not a pjrt_model"), "{fake:#x}: {message}");
    }
    assert_eq!(local, 0);
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn statuses_freed_twice_or_never_made() {
    let status = pjrt_model_free(0x1234 as *mut pjrt_model);
    assert_eq!(pjrt_status_code(status), PJRT_CODE_INVALID_ARGUMENT);
    pjrt_status_free(status);
    pjrt_status_free(status); // ignored
    assert_eq!(pjrt_status_code(status), PJRT_CODE_INVALID_ARGUMENT);
    // SAFETY: the messages are static strings.
    let message = unsafe { CStr::from_ptr(pjrt_status_message(status)) };
    assert!(message.to_str().unwrap().contains("not a pjrt_status"));
    let ok_message = unsafe { CStr::from_ptr(pjrt_status_message(std::ptr::null())) };
    assert_eq!(ok_message.to_str().unwrap(), "OK");
    pjrt_status_free(0x42 as *mut pjrt_status); // ignored too
}
