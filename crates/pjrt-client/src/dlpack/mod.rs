//! DLPack: buffers handed to (and taken from) other frameworks in the same process without a copy.
//!
//! [`Buffer::into_dlpack`] (DLPack v1) and [`Buffer::into_dlpack_legacy`] (v0.8) export a buffer:
//! the tensor points at the buffer's memory, which stays alive (the buffer and an external
//! reference on it, so the plugin neither frees, moves nor donates it) until the consumer calls
//! the deleter, on any thread. [`Client::view_of_dlpack`] imports a tensor as a view (no copy;
//! the producer's deleter runs when the view is dropped) and [`Client::copy_of_dlpack`] copies a
//! host tensor the view cannot take (unaligned memory, gaps in its strides, sub-byte types).
//!
//! ```
//! # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
//! # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
//! let x = client.upload(&[1f32, 2., 3., 4.], &[2, 2])?;
//! let tensor = x.into_dlpack()?;
//! assert_eq!(tensor.shape(), [2, 2]);
//! // Back again: the view reads the very same memory.
//! let data = tensor.data_pointer();
//! let view = client.view_of_dlpack(tensor)?;
//! assert_eq!(view.to_vec::<f32>()?, [1., 2., 3., 4.]);
//! assert_eq!(view.unsafe_pointer()?, data);
//! # Ok::<(), pjrt_client::Error>(())
//! ```

pub mod ffi;
#[cfg(feature = "ndarray")]
mod ndarray;

use std::ffi::c_void;
use std::ptr::NonNull;

use crate::buffer::layout::MemoryLayout;
use crate::buffer::queries::{increase_external_reference, RawExternalReference};
use crate::buffer::views::ViewOptions;
use crate::buffer::{Buffer, HostLayout, Placement, ReadOnlyMemory};
use crate::call::panic::no_unwind;
use crate::call::pjrt_call;
use crate::call::release::{in_plugin_callback, release_later};
use crate::client::device::Device;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::sys::{self, Args};
use ffi::{code, DLDataType, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use pjrt_types::ElementType;

/// Every pairing of a PJRT element type with a DLPack data type (lanes 1). PRED is DLPack's
/// bool (a byte per element); S1/U1 are `int1`/`uint1`.
const DTYPES: &[(ElementType, u8, u8)] = &[
    (ElementType::PRED, code::BOOL, 8),
    (ElementType::S8, code::INT, 8),
    (ElementType::S16, code::INT, 16),
    (ElementType::S32, code::INT, 32),
    (ElementType::S64, code::INT, 64),
    (ElementType::U8, code::UINT, 8),
    (ElementType::U16, code::UINT, 16),
    (ElementType::U32, code::UINT, 32),
    (ElementType::U64, code::UINT, 64),
    (ElementType::F16, code::FLOAT, 16),
    (ElementType::F32, code::FLOAT, 32),
    (ElementType::F64, code::FLOAT, 64),
    (ElementType::BF16, code::BFLOAT, 16),
    (ElementType::C64, code::COMPLEX, 64),
    (ElementType::C128, code::COMPLEX, 128),
    (ElementType::F8E5M2, code::FLOAT8_E5M2, 8),
    (ElementType::F8E4M3FN, code::FLOAT8_E4M3FN, 8),
    (ElementType::F8E4M3B11FNUZ, code::FLOAT8_E4M3B11FNUZ, 8),
    (ElementType::F8E5M2FNUZ, code::FLOAT8_E5M2FNUZ, 8),
    (ElementType::F8E4M3FNUZ, code::FLOAT8_E4M3FNUZ, 8),
    (ElementType::F8E4M3, code::FLOAT8_E4M3, 8),
    (ElementType::F8E3M4, code::FLOAT8_E3M4, 8),
    (ElementType::F8E8M0FNU, code::FLOAT8_E8M0FNU, 8),
    (ElementType::S4, code::INT, 4),
    (ElementType::U4, code::UINT, 4),
    (ElementType::S2, code::INT, 2),
    (ElementType::U2, code::UINT, 2),
    (ElementType::S1, code::INT, 1),
    (ElementType::U1, code::UINT, 1),
    (ElementType::F4E2M1FN, code::FLOAT4_E2M1FN, 4),
    (ElementType::F6E2M3FN, code::FLOAT6_E2M3FN, 6),
    (ElementType::F6E3M2FN, code::FLOAT6_E3M2FN, 6),
];

/// The DLPack data type of a PJRT element type; TOKEN, INVALID and unknown types have none.
///
/// ```
/// use pjrt_client::dlpack::{dtype_of, element_type_of, ffi::code};
/// use pjrt_client::ElementType;
/// let bf16 = dtype_of(ElementType::BF16)?;
/// assert_eq!((bf16.code, bf16.bits, bf16.lanes), (code::BFLOAT, 16, 1));
/// assert_eq!(element_type_of(bf16)?, ElementType::BF16);
/// assert!(dtype_of(ElementType::TOKEN).is_err());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn dtype_of(element_type: ElementType) -> Result<DLDataType> {
    DTYPES
        .iter()
        .find(|(e, _, _)| *e == element_type)
        .map(|&(_, code, bits)| DLDataType { code, bits, lanes: 1 })
        .ok_or_else(|| Error::invalid(format!("{element_type} has no DLPack data type")))
}

/// The PJRT element type of a DLPack data type: refused for vector types (lanes other than 1),
/// opaque handles, and codes or widths PJRT has no type for (e.g. `float` of 8 bits).
///
/// ```
/// use pjrt_client::dlpack::{element_type_of, ffi::{code, DLDataType}};
/// use pjrt_client::ElementType;
/// assert_eq!(element_type_of(DLDataType { code: code::INT, bits: 4, lanes: 1 })?, ElementType::S4);
/// assert!(element_type_of(DLDataType { code: code::FLOAT, bits: 32, lanes: 4 }).is_err());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub fn element_type_of(dtype: DLDataType) -> Result<ElementType> {
    if dtype.lanes != 1 {
        return Err(Error::invalid(format!(
            "DLPack vector types ({} lanes) have no PJRT element type; split the lanes into a dimension",
            dtype.lanes
        )));
    }
    DTYPES.iter().find(|(_, c, b)| (*c, *b) == (dtype.code, dtype.bits)).map(|(e, _, _)| *e).ok_or_else(|| {
        Error::invalid(format!(
            "the DLPack data type code {} of {} bits has no PJRT element type",
            dtype.code, dtype.bits
        ))
    })
}

/// The DLPack device type of a PJRT platform's device memory, if DLPack has one.
fn device_type_of_platform(platform: &str) -> Option<DLDeviceType> {
    match platform {
        "cpu" => Some(DLDeviceType::CPU),
        "cuda" | "gpu" => Some(DLDeviceType::CUDA),
        "rocm" => Some(DLDeviceType::ROCM),
        _ => None,
    }
}

/// The DLPack device type of a memory of `kind` on `platform`: on CPU every kind is host memory
/// (`kDLCPU`); on GPUs `device` is the GPU's (`kDLCUDA`/`kDLROCM`), `pinned_host` page-locked
/// host memory (`kDLCUDAHost`/`kDLROCMHost`), `unpinned_host` plain host memory (`kDLCPU`).
/// Other kinds have no DLPack equivalent: `None`.
fn device_type_of_memory(platform: &str, kind: &str) -> Option<DLDeviceType> {
    let device = device_type_of_platform(platform)?;
    match (kind, device) {
        ("device" | "pinned_host" | "unpinned_host", DLDeviceType::CPU) => Some(DLDeviceType::CPU),
        ("device", device) => Some(device),
        ("pinned_host", DLDeviceType::CUDA) => Some(DLDeviceType::CUDA_HOST),
        ("pinned_host", DLDeviceType::ROCM) => Some(DLDeviceType::ROCM_HOST),
        ("unpinned_host", _) => Some(DLDeviceType::CPU),
        _ => None,
    }
}

/// The DLPack device of a buffer's memory (see [`device_type_of_memory`]): the local hardware
/// id for GPU memory, 0 for host memory. A plugin that reports no memory for the buffer (it has
/// no memory spaces) keeps it in its device's memory.
fn dl_device(buffer: &Buffer) -> Result<DLDevice> {
    let client = buffer.client();
    let platform = client.platform_name();
    let kind = match buffer.memory_if_reported()? {
        Some(memory) => memory.kind()?,
        None => "device".to_owned(),
    };
    let Some(device_type) = device_type_of_memory(platform, &kind) else {
        if device_type_of_platform(platform).is_none() {
            return Err(Error::invalid(format!(
                "DLPack has no device type for the {platform} platform; copy the buffer to the host instead \
                 (Buffer::to_bytes)"
            )));
        }
        return Err(Error::invalid(format!(
            "DLPack has no device type for memory of kind {kind:?} on the {platform} platform; copy the buffer \
             to device or host memory first (Buffer::copy_to_memory)"
        )));
    };
    let device_id = match device_type {
        DLDeviceType::CUDA | DLDeviceType::ROCM => buffer.device()?.local_hardware_id()?,
        _ => 0,
    };
    Ok(DLDevice { device_type, device_id })
}

/// The client's device a DLPack device names, or a refusal naming what the client has.
fn device_of(client: &Client, device: DLDevice) -> Result<Device<'_>> {
    let platform = client.platform_name();
    if device_type_of_platform(platform) != Some(device.device_type) {
        return Err(Error::invalid(format!(
            "the DLPack tensor lives on device type {} (id {}), which this {platform} client does not have; \
             copy it to the host first",
            device.device_type.0, device.device_id
        )));
    }
    let devices = client.addressable_devices();
    let found = if device.device_type == DLDeviceType::CPU {
        // Host memory has no device number (always 0): the first CPU device reads it.
        if device.device_id != 0 {
            return Err(Error::invalid(format!("a DLPack CPU tensor has device_id {}, not 0", device.device_id)));
        }
        devices.into_iter().next()
    } else {
        devices.into_iter().find(|d| d.local_hardware_id().ok() == Some(device.device_id))
    };
    found.ok_or_else(|| {
        Error::invalid(format!("this {platform} client has no addressable device with id {}", device.device_id))
    })
}

/// What an exported tensor keeps alive until its deleter runs: the external reference (given
/// back first), then the buffer.
struct ExportKeep {
    _reference: RawExternalReference,
    _buffer: Buffer,
    _shape: Box<[i64]>,
    _strides: Box<[i64]>,
}

/// One allocation per exported tensor: the DLPack struct first (its address is the allocation's).
#[repr(C)]
struct Exported<T> {
    managed: T,
    keep: ExportKeep,
}

/// Releases what an export kept alive: dropped here, or on the release thread when the deleter
/// is called from inside a plugin callback (dropping a buffer there would re-enter the plugin).
fn release_export(keep: ExportKeep) {
    if in_plugin_callback() {
        release_later(keep);
    } else {
        drop(keep);
    }
}

unsafe extern "C" fn delete_exported_versioned(tensor: *mut DLManagedTensorVersioned) {
    no_unwind(|| {
        if tensor.is_null() {
            return;
        }
        // SAFETY: `tensor` is the first field of an `Exported` we leaked in `export` (repr(C)),
        // and DLPack calls the deleter once.
        let exported = unsafe { Box::from_raw(tensor.cast::<Exported<DLManagedTensorVersioned>>()) };
        release_export(exported.keep);
    });
}

unsafe extern "C" fn delete_exported_legacy(tensor: *mut DLManagedTensor) {
    no_unwind(|| {
        if tensor.is_null() {
            return;
        }
        // SAFETY: as in `delete_exported_versioned`.
        let exported = unsafe { Box::from_raw(tensor.cast::<Exported<DLManagedTensor>>()) };
        release_export(exported.keep);
    });
}

/// Element strides of a layout without tiles (or with XLA's packing tile on sub-byte types).
fn element_strides(layout: &MemoryLayout, element_type: ElementType, dims: &[i64]) -> Result<Vec<i64>> {
    match layout {
        MemoryLayout::Tiled { minor_to_major, tiles } => {
            if !tiles.is_empty() && !element_type.is_sub_byte() {
                return Err(Error::invalid(format!(
                    "the buffer's layout {layout} is tiled; DLPack has strides only: copy it to a dense layout first"
                )));
            }
            let mut strides = vec![0i64; dims.len()];
            let mut step = 1i64;
            for &d in minor_to_major {
                let d = usize::try_from(d).ok().filter(|d| *d < dims.len()).ok_or_else(|| {
                    Error::invalid(format!("the buffer's layout {layout} does not fit its rank {}", dims.len()))
                })?;
                strides[d] = step;
                step =
                    step.checked_mul(dims[d].max(1)).ok_or_else(|| Error::invalid("the buffer's strides overflow"))?;
            }
            Ok(strides)
        }
        MemoryLayout::Strides { byte_strides } => {
            let size = element_type.host_element_bytes().unwrap_or(1) as i64;
            if element_type.is_sub_byte() || byte_strides.iter().any(|s| s % size != 0) {
                return Err(Error::invalid(format!(
                    "the buffer's byte strides {byte_strides:?} are not whole elements"
                )));
            }
            Ok(byte_strides.iter().map(|s| s / size).collect())
        }
    }
}

/// The DLPack fields of a buffer, with the buffer and its external reference to keep.
struct Export {
    tensor: DLTensor,
    padded_sub_byte: bool,
    /// The memory is host memory others may be reading as immutable: nobody may write it.
    read_only: bool,
    keep: ExportKeep,
}

fn export(buffer: Buffer) -> Result<Export> {
    let element_type = buffer.element_type()?;
    let dims: Box<[i64]> = buffer.dimensions()?.into();
    let dtype = dtype_of(element_type)?;
    // DLPack has no events: the consumer reads the memory at once.
    let ready = buffer.ready_event()?;
    ready.refuse_wait_in_callback(
        "the DLPack export (Buffer::into_dlpack, into_dlpack_legacy)",
        "export the buffer once it is ready, e.g. from an on_ready callback of its ready event",
    )?;
    ready.wait()?;
    let mut strides: Box<[i64]> = element_strides(&buffer.memory_layout()?, element_type, &dims)?.into();
    let count = buffer.element_count()?;
    let on_device = buffer.on_device_size()?;
    // Sub-byte types: DLPack's default is packed; XLA may keep a byte per element.
    let padded_sub_byte = element_type.is_sub_byte() && count > 0 && on_device == count;
    if element_type.is_sub_byte() && !padded_sub_byte && Some(on_device) != element_type.packed_bytes(count) {
        return Err(Error::invalid(format!(
            "the {element_type} buffer takes {on_device} bytes for {count} elements, neither packed nor a \
                 byte each; DLPack cannot describe it"
        )));
    }
    let dl_device = dl_device(&buffer)?;
    let read_only = buffer.has_read_only_memory();
    let reference = increase_external_reference(buffer.client().plugin(), buffer.as_raw())?;
    let mut args = sys::PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args::new();
    args.buffer = buffer.as_raw();
    pjrt_call!(buffer.client().api(), PJRT_Buffer_OpaqueDeviceMemoryDataPointer, &mut args)?;
    if args.device_memory_ptr.is_null() && count > 0 {
        return Err(Error::invalid("PJRT_Buffer_OpaqueDeviceMemoryDataPointer returned NULL for a non-empty buffer"));
    }
    let ndim = i32::try_from(dims.len()).map_err(|_| Error::invalid("the buffer's rank exceeds DLPack's int32"))?;
    let mut keep = ExportKeep { _reference: reference, _buffer: buffer, _shape: dims, _strides: Box::new([]) };
    let tensor = DLTensor {
        data: args.device_memory_ptr,
        device: dl_device,
        ndim,
        dtype,
        shape: keep._shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    };
    keep._strides = strides; // moving the box keeps its heap address
    Ok(Export { tensor, padded_sub_byte, read_only, keep })
}

impl Buffer {
    /// Hands the buffer to a DLPack (v1) consumer without a copy: the tensor points at the
    /// buffer's memory (`OpaqueDeviceMemoryDataPointer`), with its shape, element strides (from
    /// its memory layout), data type and device, from the kind of the buffer's memory: on CPU
    /// every memory is `kDLCPU`; on GPUs `device` memory is `kDLCUDA`/`kDLROCM` with the local
    /// hardware id, `pinned_host` memory `kDLCUDAHost`/`kDLROCMHost` and `unpinned_host`
    /// memory `kDLCPU` (both device 0). Waits until the buffer is ready first (DLPack has no
    /// events). The buffer and an external reference on it (so the plugin cannot donate it)
    /// live until the tensor's deleter runs, on whichever thread the consumer calls it.
    ///
    /// **Read-only:** a buffer that reads host memory in place which others may be reading as
    /// immutable ([`crate::HostSource::shared`] of aligned bytes, such as a file's read-only
    /// mapping; [`crate::HostSource::aligned`]; [`Client::view_of_aligned`]; a view of a
    /// DLPack tensor flagged read-only) is exported with `DLPACK_FLAG_BITMASK_READ_ONLY`: the
    /// consumer must not write it. Copy the buffer first for a tensor it may write. A view made
    /// with the unsafe [`Client::view_of_device_pointer`] is exported writable: whether its
    /// memory may be written is part of that function's contract.
    ///
    /// Sub-byte types are described as they sit in device memory: packed (DLPack's default) or
    /// a byte each (`DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`). Refused: element types
    /// DLPack has no code for (TOKEN), tiled layouts, and memory kinds or platforms DLPack has
    /// no device type for.
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// let tensor = x.into_dlpack()?;
    /// assert_eq!((tensor.shape(), tensor.strides()), (&[2i64, 3][..], Some(&[3i64, 1][..])));
    /// let raw = tensor.into_raw(); // to a consumer, which calls the deleter when done
    /// // SAFETY: `raw` came from `into_raw` and is given back once.
    /// drop(unsafe { pjrt_client::dlpack::ManagedTensor::from_raw(raw) });
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn into_dlpack(self) -> Result<ManagedTensor> {
        let Export { tensor, padded_sub_byte, read_only, keep } = export(self)?;
        let mut flags = if padded_sub_byte { ffi::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED } else { 0 };
        if read_only {
            flags |= ffi::DLPACK_FLAG_BITMASK_READ_ONLY;
        }
        let exported = Box::new(Exported {
            managed: DLManagedTensorVersioned {
                version: ffi::DLPackVersion { major: ffi::DLPACK_MAJOR_VERSION, minor: ffi::DLPACK_MINOR_VERSION },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_exported_versioned),
                flags,
                dl_tensor: tensor,
            },
            keep,
        });
        let raw = Box::into_raw(exported);
        // SAFETY: `raw` is a live allocation whose first field is the DLPack struct.
        unsafe { (*raw).managed.manager_ctx = raw.cast() };
        Ok(ManagedTensor { raw: NonNull::new(raw.cast()).expect("Box::into_raw is never NULL") })
    }

    /// [`Buffer::into_dlpack`] in DLPack v0.8's unversioned form (`DLManagedTensor`), for
    /// consumers that predate v1. It has no flags, so sub-byte types kept a byte per element
    /// (not DLPack's packed default) are refused, and so is read-only memory (see
    /// [`Buffer::into_dlpack`]; [`Error::ReadOnlyMemory`]): a v0.8 consumer may write its tensor.
    ///
    /// ```
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1u8, 2, 3], &[3])?;
    /// let tensor = x.into_dlpack_legacy()?;
    /// let view = client.view_of_dlpack(tensor)?;
    /// assert_eq!(view.to_vec::<u8>()?, [1, 2, 3]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn into_dlpack_legacy(self) -> Result<LegacyManagedTensor> {
        let Export { tensor, padded_sub_byte, read_only, keep } = export(self)?;
        if padded_sub_byte {
            return Err(Error::invalid(
                "this sub-byte buffer takes a byte per element, which only DLPack v1's flags can say; use into_dlpack",
            ));
        }
        if read_only {
            return Err(Error::ReadOnlyMemory {
                what: "the buffer's memory (host memory read in place, which others may be reading)",
                advice: "DLPack v0.8 cannot say read-only: export it with into_dlpack (flagged read-only), or \
                         copy the buffer first (Buffer::copy_to_device) for a tensor the consumer may write",
            });
        }
        let exported = Box::new(Exported {
            managed: DLManagedTensor {
                dl_tensor: tensor,
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_exported_legacy),
            },
            keep,
        });
        let raw = Box::into_raw(exported);
        // SAFETY: as in `into_dlpack`.
        unsafe { (*raw).managed.manager_ctx = raw.cast() };
        Ok(LegacyManagedTensor { raw: NonNull::new(raw.cast()).expect("Box::into_raw is never NULL") })
    }
}

/// A DLPack v1 tensor (`DLManagedTensorVersioned`) owned by this handle: dropping it calls the
/// producer's deleter (once). `Send`: DLPack deleters may be called from any thread.
///
/// ```
/// use pjrt_client::dlpack::ManagedTensor;
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let tensor: ManagedTensor = client.upload(&[1f32], &[1])?.into_dlpack()?;
/// assert_eq!((tensor.version().major, tensor.flags()), (1, 0));
/// drop(tensor); // runs the deleter: the buffer goes away
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Debug)]
pub struct ManagedTensor {
    raw: NonNull<DLManagedTensorVersioned>,
}

/// A DLPack v0.8 tensor (`DLManagedTensor`) owned by this handle; see [`ManagedTensor`].
///
/// ```
/// use pjrt_client::dlpack::LegacyManagedTensor;
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let tensor: LegacyManagedTensor = client.upload(&[1u16, 2], &[2])?.into_dlpack_legacy()?;
/// assert_eq!((tensor.shape(), tensor.strides()), (&[2i64][..], Some(&[1i64][..])));
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Debug)]
pub struct LegacyManagedTensor {
    raw: NonNull<DLManagedTensor>,
}

// SAFETY: the handle only reads the tensor's fields and calls its deleter, which DLPack allows
// from any thread (`from_raw`'s contract).
unsafe impl Send for ManagedTensor {}
// SAFETY: as above.
unsafe impl Send for LegacyManagedTensor {}

impl ManagedTensor {
    /// Takes ownership of a tensor from a DLPack producer. Nothing past the version is read
    /// until [`Client::view_of_dlpack`] checks it.
    ///
    /// # Safety
    /// `raw` must point to a `DLManagedTensorVersioned` that stays valid until its deleter is
    /// called, whose deleter (if any) may be called once from any thread, and whose `dl_tensor`
    /// (if the major version is 1) describes memory holding every element its shape, strides and
    /// `byte_offset` address, not written by anyone else while this handle or a view of it lives.
    /// The caller hands over its obligation to call the deleter.
    pub unsafe fn from_raw(raw: NonNull<DLManagedTensorVersioned>) -> ManagedTensor {
        ManagedTensor { raw }
    }

    /// Gives the tensor to a consumer, which must call its deleter once.
    pub fn into_raw(self) -> NonNull<DLManagedTensorVersioned> {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }

    /// The DLPack version the producer wrote.
    pub fn version(&self) -> ffi::DLPackVersion {
        // SAFETY: `from_raw`'s contract; the version is readable in every major version.
        unsafe { self.raw.as_ref() }.version
    }

    /// The producer's flags (`DLPACK_FLAG_BITMASK_*`).
    pub fn flags(&self) -> u64 {
        // SAFETY: as in `version`; `flags` is kept stable across major versions.
        unsafe { self.raw.as_ref() }.flags
    }

    fn tensor(&self) -> Result<&DLTensor> {
        let version = self.version();
        if version.major != ffi::DLPACK_MAJOR_VERSION {
            return Err(Error::invalid(format!(
                "the DLPack tensor has version {}.{}; this crate reads major version {} only",
                version.major,
                version.minor,
                ffi::DLPACK_MAJOR_VERSION
            )));
        }
        // SAFETY: `from_raw`'s contract, and the major version is the one we declare.
        Ok(&unsafe { self.raw.as_ref() }.dl_tensor)
    }

    /// The shape (empty when the tensor cannot be read: another major version, NULL shape).
    pub fn shape(&self) -> &[i64] {
        self.tensor().ok().and_then(|t| checked_dims(t).ok()).unwrap_or(&[])
    }

    /// The strides in elements, `None` for compact row-major (or an unreadable tensor).
    pub fn strides(&self) -> Option<&[i64]> {
        self.tensor().ok().and_then(|t| checked_strides(t).ok().flatten())
    }

    /// The data pointer plus `byte_offset`: where the first element is.
    pub fn data_pointer(&self) -> *mut c_void {
        self.tensor().map(first_element).unwrap_or(std::ptr::null_mut())
    }

    /// The data type and device, as the producer wrote them.
    pub fn dtype_and_device(&self) -> Option<(DLDataType, DLDevice)> {
        self.tensor().ok().map(|t| (t.dtype, t.device))
    }
}

impl LegacyManagedTensor {
    /// Takes ownership of a tensor from a DLPack v0.8 producer.
    ///
    /// # Safety
    /// As [`ManagedTensor::from_raw`], for a `DLManagedTensor`.
    pub unsafe fn from_raw(raw: NonNull<DLManagedTensor>) -> LegacyManagedTensor {
        LegacyManagedTensor { raw }
    }

    /// Gives the tensor to a consumer, which must call its deleter once.
    pub fn into_raw(self) -> NonNull<DLManagedTensor> {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }

    fn tensor(&self) -> &DLTensor {
        // SAFETY: `from_raw`'s contract.
        &unsafe { self.raw.as_ref() }.dl_tensor
    }

    /// The shape (empty for a NULL shape).
    pub fn shape(&self) -> &[i64] {
        checked_dims(self.tensor()).unwrap_or(&[])
    }

    /// The strides in elements, `None` for compact row-major.
    pub fn strides(&self) -> Option<&[i64]> {
        checked_strides(self.tensor()).ok().flatten()
    }

    /// The data pointer plus `byte_offset`.
    pub fn data_pointer(&self) -> *mut c_void {
        first_element(self.tensor())
    }
}

impl Drop for ManagedTensor {
    fn drop(&mut self) {
        // SAFETY: `from_raw`'s contract: we own the one call of the deleter.
        if let Some(deleter) = unsafe { self.raw.as_ref() }.deleter {
            // SAFETY: as above.
            unsafe { deleter(self.raw.as_ptr()) };
        }
    }
}

impl Drop for LegacyManagedTensor {
    fn drop(&mut self) {
        // SAFETY: as for `ManagedTensor`.
        if let Some(deleter) = unsafe { self.raw.as_ref() }.deleter {
            // SAFETY: as above.
            unsafe { deleter(self.raw.as_ptr()) };
        }
    }
}

fn first_element(tensor: &DLTensor) -> *mut c_void {
    (tensor.data as usize).wrapping_add(tensor.byte_offset as usize) as *mut c_void
}

fn checked_dims(tensor: &DLTensor) -> Result<&[i64]> {
    let rank = usize::try_from(tensor.ndim)
        .map_err(|_| Error::invalid(format!("the DLPack tensor has a negative ndim {}", tensor.ndim)))?;
    if rank == 0 {
        return Ok(&[]);
    }
    if tensor.shape.is_null() {
        return Err(Error::invalid("the DLPack tensor has a NULL shape"));
    }
    // SAFETY: `from_raw`'s contract: `shape` holds `ndim` extents while the tensor lives.
    Ok(unsafe { std::slice::from_raw_parts(tensor.shape, rank) })
}

fn checked_strides(tensor: &DLTensor) -> Result<Option<&[i64]>> {
    let rank = checked_dims(tensor)?.len();
    if tensor.strides.is_null() || rank == 0 {
        return Ok(None);
    }
    // SAFETY: as in `checked_dims`: non-NULL strides hold `ndim` values.
    Ok(Some(unsafe { std::slice::from_raw_parts(tensor.strides, rank) }))
}

/// A DLPack tensor of either form, for the import functions: [`ManagedTensor`] (v1) and
/// [`LegacyManagedTensor`] (v0.8); sealed.
///
/// ```
/// fn import(client: &pjrt_client::Client, tensor: impl pjrt_client::dlpack::DlpackTensor) -> pjrt_client::Result<pjrt_client::Buffer> {
///     client.view_of_dlpack(tensor)
/// }
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let x = client.upload(&[7i8], &[1])?;
/// assert_eq!(import(&client, x.into_dlpack_legacy()?)?.to_vec::<i8>()?, [7]);
/// # Ok::<(), pjrt_client::Error>(())
/// ```
pub trait DlpackTensor: Send + 'static + sealed::Sealed {
    /// The tensor and its flags, once the version and flags are checked.
    #[doc(hidden)]
    fn checked_tensor(&self) -> Result<(&DLTensor, u64)>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ManagedTensor {}
    impl Sealed for super::LegacyManagedTensor {}
}

impl DlpackTensor for ManagedTensor {
    fn checked_tensor(&self) -> Result<(&DLTensor, u64)> {
        let flags = self.flags();
        let known = ffi::DLPACK_FLAG_BITMASK_READ_ONLY
            | ffi::DLPACK_FLAG_BITMASK_IS_COPIED
            | ffi::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
        if flags & !known != 0 {
            return Err(Error::invalid(format!(
                "the DLPack tensor has flags {flags:#x} this crate does not know ({:#x}); it cannot honour them",
                flags & !known
            )));
        }
        Ok((self.tensor()?, flags))
    }
}

impl DlpackTensor for LegacyManagedTensor {
    fn checked_tensor(&self) -> Result<(&DLTensor, u64)> {
        Ok((self.tensor(), 0))
    }
}

/// A checked description of an imported tensor.
struct Incoming<'t> {
    element_type: ElementType,
    dims: &'t [i64],
    strides: Option<&'t [i64]>,
    first: *mut c_void,
    device: DLDevice,
    padded_sub_byte: bool,
}

fn check_incoming(tensor: &DLTensor, flags: u64) -> Result<Incoming<'_>> {
    let element_type = element_type_of(tensor.dtype)?;
    let dims = checked_dims(tensor)?;
    if let Some(d) = dims.iter().find(|d| **d < 0) {
        return Err(Error::invalid(format!("the DLPack tensor has a negative dimension {d} in {dims:?}")));
    }
    let strides = checked_strides(tensor)?;
    if let Some(strides) = strides {
        if strides.iter().zip(dims).any(|(s, d)| *s < 0 && *d > 1) {
            return Err(Error::invalid(format!(
                "the DLPack tensor has negative strides {strides:?}; PJRT layouts cannot step backwards"
            )));
        }
    }
    checked_span(dims, strides, element_type.host_element_bytes().unwrap_or(1))?;
    let count = dims.iter().try_fold(1usize, |n, d| n.checked_mul(*d as usize));
    let count = count.ok_or_else(|| Error::invalid(format!("the DLPack shape {dims:?} overflows")))?;
    if tensor.data.is_null() && count > 0 {
        return Err(Error::invalid("the DLPack tensor's data pointer is NULL"));
    }
    (tensor.data as usize).checked_add(usize::try_from(tensor.byte_offset).unwrap_or(usize::MAX)).ok_or_else(|| {
        Error::invalid(format!("the DLPack byte_offset {} overflows the address", tensor.byte_offset))
    })?;
    Ok(Incoming {
        element_type,
        dims,
        strides,
        first: first_element(tensor),
        device: tensor.device,
        padded_sub_byte: flags & ffi::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0,
    })
}

/// The byte span from the first element to the end of the furthest one that `dims` and
/// (non-negative) element `strides` address, refused when it overflows the address space
/// (a producer's strides are never trusted for pointer arithmetic).
pub(crate) fn checked_span(dims: &[i64], strides: Option<&[i64]>, element_bytes: usize) -> Result<usize> {
    let overflow =
        || Error::invalid(format!("the DLPack shape {dims:?} with strides {strides:?} overflows the address space"));
    if dims.contains(&0) {
        return Ok(0);
    }
    let furthest = match strides {
        None => dims.iter().try_fold(1u64, |n, d| n.checked_mul(*d as u64)).ok_or_else(overflow)?.saturating_sub(1),
        Some(strides) => dims
            .iter()
            .zip(strides)
            .try_fold(0u64, |sum, (d, s)| {
                let s = if *d > 1 { u64::try_from(*s).ok()? } else { 0 };
                sum.checked_add((*d as u64 - 1).checked_mul(s)?)
            })
            .ok_or_else(overflow)?,
    };
    let bytes = furthest.checked_add(1).and_then(|n| n.checked_mul(element_bytes as u64)).ok_or_else(overflow)?;
    usize::try_from(bytes).ok().filter(|b| *b <= isize::MAX as usize).ok_or_else(overflow)
}

/// The dimension order of compact strides (each the product of the extents inside it), most
/// minor first, or `None` when they leave gaps or overlap. Extents of 1 (and empty arrays) take
/// any stride.
fn compact_minor_to_major(dims: &[i64], strides: &[i64]) -> Option<Vec<i64>> {
    if dims.contains(&0) {
        return Some((0..dims.len() as i64).rev().collect());
    }
    let mut order: Vec<usize> = (0..dims.len()).collect();
    // Size-1 dimensions first (any stride), then by stride; ties keep row-major order.
    order.sort_by_key(|&d| (dims[d] != 1, strides[d], std::cmp::Reverse(d)));
    let mut step = 1i64;
    for &d in &order {
        if dims[d] != 1 && strides[d] != step {
            return None;
        }
        step = step.checked_mul(dims[d])?;
    }
    Some(order.into_iter().map(|d| d as i64).collect())
}

impl Client {
    /// A buffer that views a DLPack tensor's memory in place (zero copy), through
    /// [`Client::view_of_device_pointer_with`]: the tensor's device must be one of this client's
    /// (`kDLCPU` on a CPU client; `kDLCUDA`/`kDLROCM` with a local hardware id on GPUs), its
    /// data type one of [`element_type_of`]'s, its strides compact (row-major, column-major or
    /// any dimension order; sent as the view's layout). The producer's deleter runs when the
    /// view is dropped (the plugin's on-delete hands it to this crate's release thread, see
    /// [`crate::flush_released`]), or at once when the import is refused.
    ///
    /// The view holds an external reference, so the plugin never donates (writes) it. A tensor
    /// flagged read-only (`DLPACK_FLAG_BITMASK_READ_ONLY`) stays read-only: exported again, the
    /// view says so.
    ///
    /// **Copies instead:** views need memory aligned as the plugin requires (64 bytes on CPU,
    /// [`Client::view_alignment`]) and whole-byte types; a host tensor that is not aligned
    /// (most `Vec`s and `ndarray` arrays), has gaps or overlaps in its strides, or holds a
    /// sub-byte type is refused with an error saying so: import it with
    /// [`Client::copy_of_dlpack`].
    ///
    /// ```
    /// use pjrt_client::ElementType;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1f64, 2., 3.], &[3])?;
    /// let view = client.view_of_dlpack(x.into_dlpack()?)?;
    /// assert_eq!(view.element_type()?, ElementType::F64);
    /// assert_eq!(view.to_vec::<f64>()?, [1., 2., 3.]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn view_of_dlpack<T: DlpackTensor>(&self, tensor: T) -> Result<Buffer> {
        let (raw, flags) = tensor.checked_tensor()?;
        let incoming = check_incoming(raw, flags)?;
        let device = device_of(self, incoming.device)?;
        let Incoming { element_type, dims, strides, first, .. } = incoming;
        if element_type.is_sub_byte() {
            return Err(Error::invalid(format!(
                "a view of {element_type} memory is not possible (sub-byte types are packed by the plugin its own \
                 way); import it with copy_of_dlpack"
            )));
        }
        if let Some(alignment) = self.view_alignment() {
            if first as usize % alignment != 0 {
                return Err(Error::invalid(format!(
                    "the DLPack tensor's data at {first:p} is not aligned to {alignment} bytes, as views on the {} \
                     plugin need; import it with copy_of_dlpack (one copy)",
                    self.platform_name()
                )));
            }
        }
        let mut options = ViewOptions::new();
        if let Some(strides) = strides {
            let minor_to_major = compact_minor_to_major(dims, strides).ok_or_else(|| {
                Error::invalid(format!(
                    "the DLPack strides {strides:?} of shape {dims:?} leave gaps or overlap; a view needs compact \
                     strides: import it with copy_of_dlpack"
                ))
            })?;
            options = options.with_layout(MemoryLayout::Tiled { minor_to_major, tiles: Vec::new() });
        }
        let dims = dims.to_vec();
        let keep = TensorOwner(Box::new(tensor));
        // SAFETY: `first` addresses the tensor's elements (the `from_raw` contract of the tensor
        // types), which compact strides keep within the dense size the view reads; the memory
        // stays valid until `on_delete` drops the tensor (its deleter), and the external
        // reference taken below keeps the plugin from writing it.
        let mut view = unsafe {
            self.view_of_device_pointer_with(
                first,
                element_type,
                &dims,
                Placement::Device(&device),
                &options,
                // The producer's deleter may take its own locks (a Python GIL, a CUDA context):
                // never inside the plugin's callback, on the release thread instead.
                Some(Box::new(move || release_later(keep))),
            )
        }?;
        let reference = increase_external_reference(self.plugin(), view.as_raw())?;
        if flags & ffi::DLPACK_FLAG_BITMASK_READ_ONLY != 0 {
            // The producer's memory must not be written: an export of the view says so too.
            view.attach(Box::new(ReadOnlyMemory(reference)));
        } else {
            view.attach(Box::new(reference));
        }
        Ok(view)
    }

    /// A buffer holding a copy of a DLPack host tensor (`kDLCPU`, on any client), for what
    /// [`Client::view_of_dlpack`] cannot view: unaligned memory, strides with gaps or
    /// overlaps (broadcasts), sub-byte types (packed, or a byte each when the producer says
    /// so). The tensor's deleter runs before this returns.
    ///
    /// ```
    /// use std::ptr::NonNull;
    /// use pjrt_client::dlpack::{ffi, ManagedTensor};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// // Every other element of a host array: strides with gaps, so a view is refused.
    /// static DATA: [u16; 6] = [1, 0, 2, 0, 3, 0];
    /// static mut SHAPE: [i64; 1] = [3];
    /// static mut STRIDES: [i64; 1] = [2];
    /// let raw = Box::into_raw(Box::new(ffi::DLManagedTensorVersioned {
    ///     version: ffi::DLPackVersion { major: 1, minor: 1 },
    ///     manager_ctx: std::ptr::null_mut(),
    ///     deleter: None, // (leaked in this example)
    ///     flags: ffi::DLPACK_FLAG_BITMASK_READ_ONLY,
    ///     dl_tensor: ffi::DLTensor {
    ///         data: DATA.as_ptr() as *mut _,
    ///         device: ffi::DLDevice { device_type: ffi::DLDeviceType::CPU, device_id: 0 },
    ///         ndim: 1,
    ///         dtype: ffi::DLDataType { code: ffi::code::UINT, bits: 16, lanes: 1 },
    ///         shape: &raw mut SHAPE as *mut i64,
    ///         strides: &raw mut STRIDES as *mut i64,
    ///         byte_offset: 0,
    ///     },
    /// }));
    /// // SAFETY: the tensor and the memory it addresses are static.
    /// let tensor = unsafe { ManagedTensor::from_raw(NonNull::new(raw).unwrap()) };
    /// let x = client.copy_of_dlpack(tensor)?;
    /// assert_eq!(x.to_vec::<u16>()?, [1, 2, 3]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn copy_of_dlpack<T: DlpackTensor>(&self, tensor: T) -> Result<Buffer> {
        let (raw, flags) = tensor.checked_tensor()?;
        let incoming = check_incoming(raw, flags)?;
        if incoming.device.device_type != DLDeviceType::CPU {
            return Err(Error::invalid(format!(
                "copy_of_dlpack reads host memory (kDLCPU); this tensor is on device type {}: copy it to the host \
                 with its own framework first",
                incoming.device.device_type.0
            )));
        }
        let bytes = gather_host(&incoming)?;
        let buffer = self.upload_bytes(
            &bytes,
            incoming.element_type,
            incoming.dims,
            &HostLayout::default(),
            Placement::Default,
        )?;
        drop(tensor);
        Ok(buffer)
    }
}

/// The owner of an imported tensor inside a view's on-delete (boxed, `Send`).
struct TensorOwner(#[allow(dead_code)] Box<dyn Send>);

/// The elements of a host tensor, dense row-major, a byte per element for sub-byte types.
fn gather_host(incoming: &Incoming<'_>) -> Result<Vec<u8>> {
    let Incoming { element_type, dims, strides, first, padded_sub_byte, .. } = *incoming;
    let count: usize = dims.iter().map(|d| *d as usize).product();
    let first = first as *const u8;
    if element_type.is_sub_byte() {
        if strides.is_some_and(|s| compact_minor_to_major(dims, s) != Some((0..dims.len() as i64).rev().collect())) {
            return Err(Error::invalid("sub-byte DLPack tensors are copied only when compact row-major"));
        }
        if padded_sub_byte {
            // SAFETY: the tensor's contract: `count` elements of a byte each from `first`.
            return Ok(unsafe { std::slice::from_raw_parts(first, count) }.to_vec());
        }
        let bits = element_type.bits().expect("an array type");
        let packed = element_type.packed_bytes(count).expect("no overflow: count fits in memory");
        // SAFETY: the tensor's contract: `count` packed elements from `first`.
        let packed = unsafe { std::slice::from_raw_parts(first, packed) };
        let mask = (1u16 << bits) as u8 - 1;
        return Ok((0..count)
            .map(|i| {
                let bit = i * bits;
                let word = packed[bit / 8] as u16 | (*packed.get(bit / 8 + 1).unwrap_or(&0) as u16) << 8;
                ((word >> (bit % 8)) as u8) & mask
            })
            .collect());
    }
    let size = element_type.host_element_bytes().expect("an array type");
    // Every offset below is within this span, so the pointer arithmetic cannot overflow.
    checked_span(dims, strides, size)?;
    let mut out =
        Vec::with_capacity(count.checked_mul(size).ok_or_else(|| Error::invalid("the DLPack tensor is too large"))?);
    let row_major: Vec<i64> = {
        let mut s = vec![1i64; dims.len()];
        for d in (0..dims.len().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * dims[d + 1];
        }
        s
    };
    let strides = strides.unwrap_or(&row_major);
    let mut index = vec![0i64; dims.len()];
    for _ in 0..count {
        let offset: i64 = index.iter().zip(strides).map(|(i, s)| i * s).sum();
        // SAFETY: the tensor's contract: every index its shape and strides address is an
        // element of its memory; strides are non-negative (checked).
        let element = unsafe { std::slice::from_raw_parts(first.add(offset as usize * size), size) };
        out.extend_from_slice(element);
        for d in (0..dims.len()).rev() {
            index[d] += 1;
            if index[d] < dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mapped_dtype_maps_back() {
        for &(element_type, _, _) in DTYPES {
            assert_eq!(element_type_of(dtype_of(element_type).unwrap()).unwrap(), element_type);
        }
        assert_eq!(DTYPES.len(), ElementType::ALL.len() - 2, "all but INVALID and TOKEN");
    }

    #[test]
    fn memory_kinds_map_to_dlpack_device_types() {
        for kind in ["device", "pinned_host", "unpinned_host"] {
            assert_eq!(device_type_of_memory("cpu", kind), Some(DLDeviceType::CPU), "{kind}");
        }
        assert_eq!(device_type_of_memory("cuda", "device"), Some(DLDeviceType::CUDA));
        assert_eq!(device_type_of_memory("cuda", "pinned_host"), Some(DLDeviceType::CUDA_HOST));
        assert_eq!(device_type_of_memory("gpu", "unpinned_host"), Some(DLDeviceType::CPU));
        assert_eq!(device_type_of_memory("rocm", "device"), Some(DLDeviceType::ROCM));
        assert_eq!(device_type_of_memory("rocm", "pinned_host"), Some(DLDeviceType::ROCM_HOST));
        assert_eq!(device_type_of_memory("cuda", "fake_scratch"), None);
        assert_eq!(device_type_of_memory("cpu", "fake_scratch"), None);
        assert_eq!(device_type_of_memory("tpu", "device"), None);
    }

    #[test]
    fn spans_are_checked_for_overflow() {
        assert_eq!(checked_span(&[2, 3], None, 4).unwrap(), 24);
        assert_eq!(checked_span(&[2, 3], Some(&[6, 2]), 4).unwrap(), (6 + 4 + 1) * 4);
        assert_eq!(checked_span(&[0, 3], Some(&[i64::MAX, 1]), 4).unwrap(), 0);
        assert_eq!(checked_span(&[1, 3], Some(&[-7, 1]), 1).unwrap(), 3, "extent 1: any stride");
        assert!(checked_span(&[2, 3], Some(&[i64::MAX, 1]), 4).is_err());
        assert!(checked_span(&[i64::MAX, 4], None, 8).is_err());
    }

    #[test]
    fn compact_strides_become_a_dimension_order() {
        assert_eq!(compact_minor_to_major(&[2, 3], &[3, 1]), Some(vec![1, 0]));
        assert_eq!(compact_minor_to_major(&[2, 3], &[1, 2]), Some(vec![0, 1]));
        assert_eq!(compact_minor_to_major(&[2, 1, 3], &[3, 99, 1]), Some(vec![1, 2, 0]));
        assert_eq!(compact_minor_to_major(&[2, 3], &[6, 2]), None, "gaps");
        assert_eq!(compact_minor_to_major(&[2, 3], &[0, 1]), None, "a broadcast");
    }
}
