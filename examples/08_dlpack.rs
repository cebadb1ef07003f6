//! # 8. DLPack: arrays shared with other frameworks without a copy
//!
//! DLPack is how array libraries in one process (PyTorch, JAX, CuPy, candle, ...) hand each other
//! memory: a small C struct with a pointer, shape, strides, data type and device, plus a deleter
//! the consumer calls when done. This example exchanges arrays with `ndarray` through it:
//!
//! 1. a PJRT result becomes an `ndarray` view of the buffer's own memory (zero copy);
//! 2. that tensor comes back as a PJRT buffer viewing the same memory (zero copy);
//! 3. an `ndarray` array whose memory is not 64-byte aligned (most are not) cannot be viewed by
//!    the CPU plugin: the import says so, and `copy_of_dlpack` copies it once;
//! 4. memory others may be reading (a buffer over shared host memory) is exported read-only, and
//!    a `bool` tensor is viewed as `bool` only when every byte is 0 or 1.
//!
//! ```text
//! cargo run -p pjrt-examples --example 08_dlpack
//! ```

use std::sync::Arc;

use pjrt_client::dlpack::{ffi, ManagedTensor};
use pjrt_client::ndarray::{array, s};
use pjrt_client::{
    AlignedHostBuffer, Client, ClientOptions, CompileOptions, ElementType, ExecuteOptions, HostSource, Plugin, Program,
    UploadOptions,
};

const DOUBLE: &str = r#"
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = stablehlo.add %x, %x : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}"#;

fn main() -> pjrt_client::Result<()> {
    let plugin = Plugin::load(pjrt_plugins::resolve(None)?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    let exe = client.compile(&Program::mlir_text(DOUBLE)?, &CompileOptions::new())?;
    let x = client.upload(&[1f32, 2., 3., 4., 5., 6.], &[2, 3])?;
    let y = exe.execute(&[&x], &ExecuteOptions::new())?.into_iter().next().expect("the program has one output");

    // 1. Export: the tensor owns the buffer (and keeps the plugin from freeing, moving or
    //    donating it) until its deleter runs; ndarray reads the device memory in place.
    let tensor = y.into_dlpack()?;
    let (dtype, device) = tensor.dtype_and_device().expect("a v1 tensor");
    println!("exported: shape {:?}, strides {:?}, {dtype:?} on {device:?}", tensor.shape(), tensor.strides());
    let view = tensor.as_ndarray::<f32>()?;
    println!("as ndarray (no copy):\n{view}");
    assert_eq!(view, array![[2f32, 4., 6.], [8., 10., 12.]].into_dyn());
    let memory = tensor.data_pointer();
    assert_eq!(view.as_ptr() as *mut std::ffi::c_void, memory);

    // 2. Import: a PJRT buffer that views the same memory; the tensor's deleter runs when the
    //    view is dropped.
    let back = client.view_of_dlpack(tensor)?;
    assert_eq!(back.unsafe_pointer()?, memory, "the same memory, no copy");
    println!("back in PJRT at {memory:p}: {:?}", back.to_vec::<f32>()?);

    // 3. An ndarray array handed over through DLPack. Its first element sits 4 bytes into a
    //    heap allocation, so it is not 64-byte aligned: a view is refused, saying what to do.
    let a = array![0f32, 1., 2., 3., 4.].slice_move(s![1..]);
    match client.view_of_dlpack(ManagedTensor::from_ndarray(a.clone())?) {
        Ok(_) => println!("viewed in place: this allocation happened to be aligned"),
        Err(refused) => println!("view refused: {refused}"),
    }
    // The tensor's deleter (dropping the array) runs before `copy_of_dlpack` returns.
    let x = client.copy_of_dlpack(ManagedTensor::from_ndarray(a)?)?;
    println!("imported ndarray: {:?}", x.to_vec::<f32>()?);
    assert_eq!(x.to_vec::<f32>()?, [1., 2., 3., 4.]);

    // 4. A buffer that reads shared host memory in place (the caller keeps `host`, and may read
    //    it meanwhile) is exported with DLPack's read-only flag: the consumer must not write it.
    let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.])?);
    let tensor =
        client.upload_with(HostSource::aligned(&host, ElementType::F32, &[4]), &UploadOptions::new())?.into_dlpack()?;
    assert_ne!(tensor.flags() & ffi::DLPACK_FLAG_BITMASK_READ_ONLY, 0);
    println!("over shared memory: flags {:#x} (read-only)", tensor.flags());
    // A plugin keeps PRED bytes as it was given them: 2 is no `bool`, so the bool view is
    // refused; the bytes can be read as u8 (nonzero is true).
    let p = client.upload_with(HostSource::bytes(&[1, 0, 2], ElementType::PRED, &[3]), &UploadOptions::new())?;
    let tensor = p.into_dlpack()?;
    match tensor.as_ndarray::<bool>() {
        Ok(view) => println!("as bool: {view}"),
        Err(refused) => println!("bool view refused: {refused}"),
    }
    assert!(tensor.as_ndarray::<bool>().is_err());
    println!("as u8: {}", tensor.as_ndarray::<u8>()?);
    Ok(())
}
