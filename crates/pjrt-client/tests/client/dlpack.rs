//! DLPack export and import on both CPU plugins: round trips for every DLPack data type PJRT has,
//! the same memory on both sides, strides, deleters run exactly once, and refusals.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use pjrt_client::dlpack::{dtype_of, ffi, ManagedTensor};
use pjrt_client::{
    flush_released, AlignedHostBuffer, Client, ClientOptions, DownloadOptions, ElementType, Error, ExecuteOptions,
    HostSource, MemoryLayout, Placement, SharedBytes, UploadOptions, ViewOptions,
};

use crate::fake_support::Fake;
use crate::support::{client, wait_for, PLUGINS};

/// A host tensor made by "another framework": owns its memory, counts its deleter's calls.
#[repr(C)]
struct Producer {
    managed: ffi::DLManagedTensorVersioned,
    _memory: Arc<AlignedHostBuffer>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    deletes: Arc<AtomicUsize>,
}

unsafe extern "C" fn delete_producer(tensor: *mut ffi::DLManagedTensorVersioned) {
    // SAFETY: made by `produce` (first field of a leaked `Producer`); DLPack calls it once.
    let producer = unsafe { Box::from_raw(tensor.cast::<Producer>()) };
    producer.deletes.fetch_add(1, Ordering::SeqCst);
}

pub(crate) struct Made {
    pub(crate) tensor: ManagedTensor,
    pub(crate) deletes: Arc<AtomicUsize>,
}

pub(crate) fn produce(
    memory: Arc<AlignedHostBuffer>,
    byte_offset: u64,
    dtype: ffi::DLDataType,
    shape: &[i64],
    strides: Option<&[i64]>,
    edit: impl FnOnce(&mut ffi::DLManagedTensorVersioned),
) -> Made {
    let deletes = Arc::new(AtomicUsize::new(0));
    let mut producer = Box::new(Producer {
        managed: ffi::DLManagedTensorVersioned {
            version: ffi::DLPackVersion { major: 1, minor: 1 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_producer),
            flags: 0,
            dl_tensor: ffi::DLTensor {
                data: memory.as_bytes().as_ptr() as *mut _,
                device: ffi::DLDevice { device_type: ffi::DLDeviceType::CPU, device_id: 0 },
                ndim: shape.len() as i32,
                dtype,
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset,
            },
        },
        _memory: memory,
        shape: shape.to_vec(),
        strides: strides.map(<[i64]>::to_vec),
        deletes: deletes.clone(),
    });
    producer.managed.dl_tensor.shape = producer.shape.as_mut_ptr();
    if let Some(strides) = producer.strides.as_mut() {
        producer.managed.dl_tensor.strides = strides.as_mut_ptr();
    }
    edit(&mut producer.managed);
    let raw = NonNull::new(Box::into_raw(producer).cast()).unwrap();
    // SAFETY: the tensor owns its memory, shape and strides until the deleter runs.
    Made { tensor: unsafe { ManagedTensor::from_raw(raw) }, deletes }
}

fn f32_dtype() -> ffi::DLDataType {
    dtype_of(ElementType::F32).unwrap()
}

/// Host bytes of `count` values of `element_type`: a byte pattern every type takes as values.
fn sample(element_type: ElementType, count: usize) -> Vec<u8> {
    let bytes = element_type.host_bytes(count).unwrap();
    (0..bytes)
        .map(|i| match element_type.bits().unwrap() {
            bits if bits < 8 => (i as u8) & ((1u8 << bits) - 1),
            _ if element_type == ElementType::PRED => (i % 2) as u8,
            _ => (i * 37 % 251) as u8,
        })
        .collect()
}

#[test]
fn round_trips_every_mapped_dtype_in_the_same_memory() {
    for name in PLUGINS {
        let client = client(name, 1);
        let minor = client.plugin().api_version().minor;
        let mut checked = 0;
        for &element_type in ElementType::ALL {
            let Ok(dtype) = dtype_of(element_type) else { continue };
            if element_type.since_minor().unwrap() > minor {
                continue; // the plugin does not know the type (uploading it would crash 0.106)
            }
            let bytes = sample(element_type, 6);
            let x = client
                .upload_with(HostSource::bytes(&bytes, element_type, &[2, 3]), &UploadOptions::new())
                .unwrap_or_else(|e| panic!("{name} {element_type}: {e}"));
            let tensor = x.into_dlpack().unwrap_or_else(|e| panic!("{name} {element_type}: export: {e}"));
            let (got_dtype, device) = tensor.dtype_and_device().unwrap();
            assert_eq!(got_dtype, dtype, "{name} {element_type}");
            assert_eq!(device.device_type, ffi::DLDeviceType::CPU);
            assert_eq!(tensor.shape(), [2, 3]);
            assert_eq!(tensor.strides(), Some(&[3i64, 1][..]), "{name} {element_type}");
            let data = tensor.data_pointer();
            let back = if element_type.is_sub_byte() {
                let refused = client.view_of_dlpack(tensor).unwrap_err().to_string();
                assert!(refused.contains("copy_of_dlpack"), "{refused}");
                let again = client
                    .upload_with(HostSource::bytes(&bytes, element_type, &[2, 3]), &UploadOptions::new())
                    .unwrap();
                client.copy_of_dlpack(again.into_dlpack().unwrap()).unwrap()
            } else {
                let view = client.view_of_dlpack(tensor).unwrap_or_else(|e| panic!("{name} {element_type}: {e}"));
                assert_eq!(view.unsafe_pointer().unwrap(), data, "{name} {element_type}: the same memory");
                view
            };
            assert_eq!(back.element_type().unwrap(), element_type);
            assert_eq!(back.dimensions().unwrap(), [2, 3]);
            assert_eq!(back.to_bytes(DownloadOptions::new()).unwrap(), bytes, "{name} {element_type}");
            checked += 1;
        }
        assert!(checked >= 29, "{name}: {checked} types");
    }
}

#[test]
fn legacy_tensors_round_trip_too() {
    for name in PLUGINS {
        let client = client(name, 1);
        let x = client.upload(&[1i64, -2, 3], &[3]).unwrap();
        let tensor = x.into_dlpack_legacy().unwrap();
        let data = tensor.data_pointer();
        let view = client.view_of_dlpack(tensor).unwrap();
        assert_eq!(view.unsafe_pointer().unwrap(), data);
        assert_eq!(view.to_vec::<i64>().unwrap(), [1, -2, 3]);
    }
}

#[test]
fn column_major_strides_both_ways() {
    for name in PLUGINS {
        let client = client(name, 1);
        // [2,3] column-major: 1 4 / 2 5 / 3 6 in memory.
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 4., 2., 5., 3., 6.]).unwrap());
        let options = ViewOptions::new().with_layout(MemoryLayout::column_major(2));
        let x =
            client.view_of_aligned_with(host.clone(), ElementType::F32, &[2, 3], Placement::Default, &options).unwrap();
        let tensor = x.into_dlpack().unwrap();
        assert_eq!(tensor.strides(), Some(&[1i64, 2][..]), "{name}");
        assert_eq!(tensor.data_pointer(), host.as_bytes().as_ptr() as *mut _);
        let view = client.view_of_dlpack(tensor).unwrap();
        assert_eq!(view.memory_layout().unwrap(), MemoryLayout::column_major(2));
        assert_eq!(view.to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);

        // The same from a producer that is not us.
        let made = produce(host.clone(), 0, f32_dtype(), &[2, 3], Some(&[1, 2]), |_| ());
        let view = client.view_of_dlpack(made.tensor).unwrap();
        assert_eq!(view.to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);
        assert_eq!(view.unsafe_pointer().unwrap(), host.as_bytes().as_ptr() as *mut _);
        drop(view);
        // The deleter runs on the release thread; 0.106 calls on-delete once the transposing
        // read's work on the view is done.
        wait_for("the view's on-delete", || {
            flush_released();
            made.deletes.load(Ordering::SeqCst) == 1
        });
        assert_eq!(made.deletes.load(Ordering::SeqCst), 1, "{name}: exactly once");
    }
}

#[test]
fn deleters_run_exactly_once() {
    for name in PLUGINS {
        let client = client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.]).unwrap());
        let made = produce(host.clone(), 0, f32_dtype(), &[4], None, |_| ());
        let view = client.view_of_dlpack(made.tensor).unwrap();
        assert_eq!(made.deletes.load(Ordering::SeqCst), 0, "alive while the view is");
        assert_eq!(view.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        drop(view);
        wait_for("the view's on-delete", || {
            flush_released();
            made.deletes.load(Ordering::SeqCst) == 1
        });
        flush_released();
        assert_eq!(made.deletes.load(Ordering::SeqCst), 1, "{name}: exactly once");

        // A copy runs it before returning; a refusal runs it too.
        let made = produce(host.clone(), 0, f32_dtype(), &[4], None, |_| ());
        let copy = client.copy_of_dlpack(made.tensor).unwrap();
        assert_eq!(made.deletes.load(Ordering::SeqCst), 1);
        assert_eq!(copy.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        let made = produce(host.clone(), 0, f32_dtype(), &[4], None, |t| t.dl_tensor.ndim = -1);
        assert!(client.view_of_dlpack(made.tensor).is_err());
        assert_eq!(made.deletes.load(Ordering::SeqCst), 1);

        // Our own deleter from another thread: the exported buffer goes away there.
        let x = client.upload(&[5u32, 6], &[2]).unwrap();
        let raw = x.into_dlpack().unwrap().into_raw();
        let address = raw.as_ptr() as usize;
        std::thread::spawn(move || {
            let raw = NonNull::new(address as *mut ffi::DLManagedTensorVersioned).unwrap();
            // SAFETY: given back once, as a consumer would.
            let deleter = unsafe { raw.as_ref() }.deleter.unwrap();
            // SAFETY: as above.
            unsafe { deleter(raw.as_ptr()) };
        })
        .join()
        .unwrap();
    }
}

#[test]
fn refusals_say_what_to_do() {
    for name in PLUGINS {
        let client = client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&[0f32; 32]).unwrap());
        let refused = |edit: &dyn Fn(&mut ffi::DLManagedTensorVersioned), strides: Option<&[i64]>, offset: u64| {
            let made = produce(host.clone(), offset, f32_dtype(), &[2, 3], strides, edit);
            let error = client.view_of_dlpack(made.tensor).unwrap_err().to_string();
            assert_eq!(made.deletes.load(Ordering::SeqCst), 1, "{error}");
            error
        };
        let cuda = refused(&|t| t.dl_tensor.device.device_type = ffi::DLDeviceType::CUDA, None, 0);
        assert!(cuda.contains("device type 2") && cuda.contains("does not have"), "{cuda}");
        let unaligned = refused(&|_| (), None, 4);
        assert!(unaligned.contains("not aligned to 64") && unaligned.contains("copy_of_dlpack"), "{unaligned}");
        let gaps = refused(&|_| (), Some(&[6, 2]), 0);
        assert!(gaps.contains("gaps") && gaps.contains("copy_of_dlpack"), "{gaps}");
        assert!(refused(&|t| t.dl_tensor.data = std::ptr::null_mut(), None, 0).contains("NULL"));
        assert!(refused(&|t| t.dl_tensor.shape = std::ptr::null_mut(), None, 0).contains("NULL shape"));
        assert!(refused(&|t| unsafe { *t.dl_tensor.shape = -2 }, None, 0).contains("negative dimension"));
        assert!(refused(&|t| t.dl_tensor.dtype.lanes = 4, None, 0).contains("lanes"));
        assert!(refused(&|t| t.dl_tensor.dtype.bits = 8, None, 0).contains("no PJRT element type"));
        assert!(refused(&|t| t.version.major = 2, None, 0).contains("version 2"));
        assert!(refused(&|t| t.flags = 1 << 40, None, 0).contains("flags"));
        assert!(refused(&|_| (), Some(&[-3, 1]), 0).contains("negative strides"));
        assert!(refused(&|_| (), Some(&[i64::MAX / 2, 1]), 0).contains("overflows"));

        // What the view refuses, the copy takes: unaligned, and gaps (every other element).
        let values: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let host = Arc::new(AlignedHostBuffer::from_slice(&values).unwrap());
        let made = produce(host.clone(), 4, f32_dtype(), &[2, 3], Some(&[6, 2]), |_| ());
        let copy = client.copy_of_dlpack(made.tensor).unwrap();
        assert_eq!(copy.to_vec::<f32>().unwrap(), [1., 3., 5., 7., 9., 11.]);
        let made =
            produce(host, 0, f32_dtype(), &[2], None, |t| t.dl_tensor.device.device_type = ffi::DLDeviceType::CUDA);
        assert!(client.copy_of_dlpack(made.tensor).unwrap_err().to_string().contains("kDLCPU"));
    }
}

fn read_only(tensor: &ManagedTensor) -> bool {
    tensor.flags() & ffi::DLPACK_FLAG_BITMASK_READ_ONLY != 0
}

/// Host memory a buffer reads in place while safe code may be reading it too (shared bytes,
/// aligned uploads and views: the caller keeps its `Arc`) is exported read-only; v0.8, which
/// cannot say so, refuses it. Memory the buffer owns (copies) stays writable.
#[test]
fn exports_of_memory_others_read_are_read_only() {
    for name in PLUGINS {
        let client = client(name, 1);
        let values: Vec<f32> = (0..32).map(|i| i as f32).collect();
        let owner = Arc::new(AlignedHostBuffer::from_slice(&values).unwrap());
        let aligned = SharedBytes::slice(owner.clone(), 0..64).unwrap();
        let in_place = client
            .upload_with(HostSource::shared(aligned.clone(), ElementType::F32, &[16]), &UploadOptions::new())
            .unwrap();
        let tensor = in_place.into_dlpack().unwrap();
        // The very memory `aligned.as_bytes()` hands safe code as `&[u8]`.
        assert_eq!(tensor.data_pointer() as *const u8, aligned.as_bytes().as_ptr(), "{name}: in place");
        assert!(read_only(&tensor), "{name}: shared bytes read in place: flags {:#x}", tensor.flags());
        let again = client
            .upload_with(HostSource::shared(aligned.clone(), ElementType::F32, &[16]), &UploadOptions::new())
            .unwrap();
        match again.into_dlpack_legacy() {
            Err(Error::ReadOnlyMemory { advice, .. }) => assert!(advice.contains("into_dlpack"), "{advice}"),
            other => panic!("{name}: a legacy export of read-only memory: {other:?}"),
        }

        let aligned_upload =
            client.upload_with(HostSource::aligned(&owner, ElementType::F32, &[32]), &UploadOptions::new()).unwrap();
        assert!(read_only(&aligned_upload.into_dlpack().unwrap()), "{name}: HostSource::aligned");
        let view = client.view_of_aligned(owner.clone(), ElementType::F32, &[32], Placement::Default).unwrap();
        assert!(read_only(&view.into_dlpack().unwrap()), "{name}: view_of_aligned");

        // Copies are the buffer's own memory: writable.
        let unaligned = SharedBytes::slice(owner.clone(), 4..36).unwrap();
        let copied = client
            .upload_with(HostSource::shared(unaligned.clone(), ElementType::F32, &[8]), &UploadOptions::new())
            .unwrap();
        copied.ready_event().unwrap().wait().unwrap();
        assert_eq!(copied.into_dlpack().unwrap().flags(), 0, "{name}: a copy");
        let plain = client.upload(&values, &[32]).unwrap();
        assert_eq!(plain.into_dlpack().unwrap().flags(), 0, "{name}");
        let plain = client.upload(&values, &[32]).unwrap();
        assert!(plain.into_dlpack_legacy().is_ok(), "{name}");
    }
}

/// A view of a DLPack tensor its producer marked read-only is read-only too: exported again it
/// says so (and v0.8 refuses it); a writable producer's tensor stays writable.
#[test]
fn imported_read_only_tensors_stay_read_only() {
    for name in PLUGINS {
        let client = client(name, 1);
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.]).unwrap());
        let flagged = |flags: u64| {
            let made = produce(host.clone(), 0, f32_dtype(), &[4], None, |t| t.flags = flags);
            client.view_of_dlpack(made.tensor).unwrap()
        };
        let tensor = flagged(ffi::DLPACK_FLAG_BITMASK_READ_ONLY).into_dlpack().unwrap();
        assert!(read_only(&tensor), "{name}: flags {:#x}", tensor.flags());
        assert_eq!(tensor.data_pointer() as *const u8, host.as_bytes().as_ptr());
        assert!(matches!(
            flagged(ffi::DLPACK_FLAG_BITMASK_READ_ONLY).into_dlpack_legacy(),
            Err(Error::ReadOnlyMemory { .. })
        ));
        assert_eq!(flagged(0).into_dlpack().unwrap().flags(), 0, "{name}");
        assert_eq!(flagged(ffi::DLPACK_FLAG_BITMASK_IS_COPIED).into_dlpack().unwrap().flags(), 0, "{name}");
        drop(tensor);
        flush_released();
    }
}

/// On both CPU plugins every memory kind (`device`, `pinned_host`, `unpinned_host`) is host
/// memory: `kDLCPU`, device 0.
#[test]
fn every_cpu_memory_exports_as_host_memory() {
    for name in PLUGINS {
        let client = client(name, 1);
        let device = &client.addressable_devices()[0];
        let memories = device.memories().unwrap();
        let kinds: Vec<String> = memories.iter().map(|m| m.kind().unwrap()).collect();
        assert!(kinds.iter().any(|k| k == "pinned_host"), "{name}: {kinds:?}");
        for (memory, kind) in memories.iter().zip(&kinds) {
            let x =
                client.upload_with(HostSource::slice(&[1u32, 2], &[2]), &UploadOptions::new().memory(memory)).unwrap();
            let tensor = x.into_dlpack().unwrap_or_else(|e| panic!("{name} {kind}: {e}"));
            let (_, dl_device) = tensor.dtype_and_device().unwrap();
            assert_eq!(dl_device, ffi::DLDevice { device_type: ffi::DLDeviceType::CPU, device_id: 0 }, "{name} {kind}");
        }
    }
}

/// A GPU-like client (the fake plugin as platform `cuda`): device memory exports as `kDLCUDA`
/// with the device's hardware id, `pinned_host` memory as `kDLCUDAHost` (host memory, device
/// 0), not as device memory; a memory kind DLPack has no device type for is refused.
#[test]
fn gpu_memories_export_by_their_kind() {
    let fake = Fake::new("gpu_like");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    assert_eq!(client.platform_name(), "cuda");
    let devices = client.addressable_devices();
    let memory_of = |device: usize, kind: &str| devices[device].memory_by_kind(kind).unwrap().unwrap();
    let export = |memory| {
        let x =
            client.upload_with(HostSource::slice(&[1f32, 2.], &[2]), &UploadOptions::new().memory(&memory)).unwrap();
        x.into_dlpack().unwrap().dtype_and_device().unwrap().1
    };
    let device_memory = export(memory_of(1, "device"));
    assert_eq!(device_memory, ffi::DLDevice { device_type: ffi::DLDeviceType::CUDA, device_id: 1 });
    let pinned = export(memory_of(1, "pinned_host"));
    assert_eq!(pinned, ffi::DLDevice { device_type: ffi::DLDeviceType::CUDA_HOST, device_id: 0 });
    drop(client);

    let fake = Fake::new("gpu_like_odd_memory");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let odd = client.addressable_devices()[0].memory_by_kind("fake_scratch").unwrap().unwrap();
    let x = client.upload_with(HostSource::slice(&[1f32, 2.], &[2]), &UploadOptions::new().memory(&odd)).unwrap();
    let refused = x.into_dlpack().unwrap_err().to_string();
    assert!(refused.contains("\"fake_scratch\"") && refused.contains("copy_to_memory"), "{refused}");
    drop(client);
    fake.settle();
    fake.assert_nothing_leaked();

    // A platform DLPack has no device type for (the fake's own, `fake`) is refused as such.
    let fake = Fake::new("working");
    let plugin = fake.plugin();
    let client = Client::new(&plugin, &ClientOptions::new()).unwrap();
    let x = client.upload(&[1f32, 2.], &[2]).unwrap();
    let refused = x.into_dlpack().unwrap_err().to_string();
    assert!(refused.contains("the fake platform") && refused.contains("Buffer::to_bytes"), "{refused}");
}

/// An identity program's result over an in-place (read-only) input is the plugin's own memory,
/// not the input's: so its export, writable, aliases nothing safe code holds.
#[test]
fn results_of_read_only_inputs_are_new_memory() {
    const IDENTITY: &str = "func.func @main(%x: tensor<16xf32>) -> tensor<16xf32> {
  return %x : tensor<16xf32>
}";
    for name in PLUGINS {
        let client = client(name, 1);
        let owner = Arc::new(AlignedHostBuffer::from_slice(&[3f32; 16]).unwrap());
        let x =
            client.upload_with(HostSource::aligned(&owner, ElementType::F32, &[16]), &UploadOptions::new()).unwrap();
        let exe = client
            .compile(&pjrt_client::Program::mlir_text(IDENTITY).unwrap(), &pjrt_client::CompileOptions::new())
            .unwrap();
        let y = exe.execute(&[&x], &ExecuteOptions::new()).unwrap().into_iter().next().unwrap();
        let tensor = y.into_dlpack().unwrap();
        assert_ne!(
            tensor.data_pointer() as *const u8,
            owner.as_bytes().as_ptr(),
            "{name}: the result aliases the input"
        );
        assert_eq!(tensor.flags(), 0, "{name}");
    }
}
