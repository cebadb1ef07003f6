//! The DLPack ABI: our own `#[repr(C)]` declarations of the structs of `dlpack.h` (v0.8's
//! `DLManagedTensor` and v1's `DLManagedTensorVersioned`), with no logic. C enums stay integers
//! (newtypes with constants), so a code from a newer producer is data, not undefined behaviour.

use std::ffi::c_void;

/// The DLPack major version whose `DLManagedTensorVersioned` layout these declarations follow.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack minor version whose codes this crate knows.
pub const DLPACK_MINOR_VERSION: u32 = 1;

/// `DLPackVersion`: a different major version means a different layout of everything after the
/// `deleter`/`flags` of [`DLManagedTensorVersioned`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    /// `major`
    pub major: u32,
    /// `minor`
    pub minor: u32,
}

/// `DLDeviceType`, kept as the raw `int32_t`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDeviceType(pub i32);

impl DLDeviceType {
    /// `kDLCPU`: host memory.
    pub const CPU: DLDeviceType = DLDeviceType(1);
    /// `kDLCUDA`: CUDA device memory.
    pub const CUDA: DLDeviceType = DLDeviceType(2);
    /// `kDLCUDAHost`: pinned host memory (`cudaMallocHost`).
    pub const CUDA_HOST: DLDeviceType = DLDeviceType(3);
    /// `kDLOpenCL`
    pub const OPENCL: DLDeviceType = DLDeviceType(4);
    /// `kDLVulkan`
    pub const VULKAN: DLDeviceType = DLDeviceType(7);
    /// `kDLMetal`
    pub const METAL: DLDeviceType = DLDeviceType(8);
    /// `kDLVPI`
    pub const VPI: DLDeviceType = DLDeviceType(9);
    /// `kDLROCM`: AMD GPU memory.
    pub const ROCM: DLDeviceType = DLDeviceType(10);
    /// `kDLROCMHost`
    pub const ROCM_HOST: DLDeviceType = DLDeviceType(11);
    /// `kDLExtDev`
    pub const EXT_DEV: DLDeviceType = DLDeviceType(12);
    /// `kDLCUDAManaged`
    pub const CUDA_MANAGED: DLDeviceType = DLDeviceType(13);
    /// `kDLOneAPI`
    pub const ONE_API: DLDeviceType = DLDeviceType(14);
    /// `kDLWebGPU`
    pub const WEBGPU: DLDeviceType = DLDeviceType(15);
    /// `kDLHexagon`
    pub const HEXAGON: DLDeviceType = DLDeviceType(16);
    /// `kDLMAIA`
    pub const MAIA: DLDeviceType = DLDeviceType(17);
    /// `kDLTrn`
    pub const TRN: DLDeviceType = DLDeviceType(18);
}

/// `DLDevice`
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// `device_type`
    pub device_type: DLDeviceType,
    /// `device_id`: 0 for host memory.
    pub device_id: i32,
}

/// `DLDataTypeCode` values (the `code` byte of [`DLDataType`]).
pub mod code {
    /// `kDLInt`
    pub const INT: u8 = 0;
    /// `kDLUInt`
    pub const UINT: u8 = 1;
    /// `kDLFloat`
    pub const FLOAT: u8 = 2;
    /// `kDLOpaqueHandle`
    pub const OPAQUE_HANDLE: u8 = 3;
    /// `kDLBfloat`
    pub const BFLOAT: u8 = 4;
    /// `kDLComplex`
    pub const COMPLEX: u8 = 5;
    /// `kDLBool`
    pub const BOOL: u8 = 6;
    /// `kDLFloat8_e3m4`
    pub const FLOAT8_E3M4: u8 = 7;
    /// `kDLFloat8_e4m3`
    pub const FLOAT8_E4M3: u8 = 8;
    /// `kDLFloat8_e4m3b11fnuz`
    pub const FLOAT8_E4M3B11FNUZ: u8 = 9;
    /// `kDLFloat8_e4m3fn`
    pub const FLOAT8_E4M3FN: u8 = 10;
    /// `kDLFloat8_e4m3fnuz`
    pub const FLOAT8_E4M3FNUZ: u8 = 11;
    /// `kDLFloat8_e5m2`
    pub const FLOAT8_E5M2: u8 = 12;
    /// `kDLFloat8_e5m2fnuz`
    pub const FLOAT8_E5M2FNUZ: u8 = 13;
    /// `kDLFloat8_e8m0fnu`
    pub const FLOAT8_E8M0FNU: u8 = 14;
    /// `kDLFloat6_e2m3fn`
    pub const FLOAT6_E2M3FN: u8 = 15;
    /// `kDLFloat6_e3m2fn`
    pub const FLOAT6_E3M2FN: u8 = 16;
    /// `kDLFloat4_e2m1fn`
    pub const FLOAT4_E2M1FN: u8 = 17;
}

/// `DLDataType`: a type code, its bits and its vector lanes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DLDataType {
    /// `code`: one of [`code`].
    pub code: u8,
    /// `bits` per lane.
    pub bits: u8,
    /// `lanes` (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: a view of memory, owning nothing.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// `data` (the start of the allocation; the array begins `byte_offset` bytes later).
    pub data: *mut c_void,
    /// `device`
    pub device: DLDevice,
    /// `ndim`
    pub ndim: i32,
    /// `dtype`
    pub dtype: DLDataType,
    /// `shape`: `ndim` extents.
    pub shape: *mut i64,
    /// `strides`, in elements; NULL means compact row-major.
    pub strides: *mut i64,
    /// `byte_offset`
    pub byte_offset: u64,
}

/// `DLManagedTensor` (DLPack v0.8, unversioned).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// `dl_tensor`
    pub dl_tensor: DLTensor,
    /// `manager_ctx`: the producer's.
    pub manager_ctx: *mut c_void,
    /// `deleter`: frees the tensor (and itself); may be NULL.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the memory.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy the consumer owns alone.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements take a byte each (default:
/// packed).
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// `DLManagedTensorVersioned` (DLPack v1).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// `version`
    pub version: DLPackVersion,
    /// `manager_ctx`: the producer's.
    pub manager_ctx: *mut c_void,
    /// `deleter`: frees the tensor (and itself); may be NULL.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `flags`: `DLPACK_FLAG_BITMASK_*`.
    pub flags: u64,
    /// `dl_tensor`
    pub dl_tensor: DLTensor,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_c_header_on_64_bit_targets() {
        assert_eq!(std::mem::size_of::<DLDataType>(), 4);
        assert_eq!(std::mem::size_of::<DLDevice>(), 8);
        assert_eq!(std::mem::size_of::<DLTensor>(), 48);
        assert_eq!(std::mem::offset_of!(DLTensor, shape), 24);
        assert_eq!(std::mem::size_of::<DLManagedTensor>(), 64);
        assert_eq!(std::mem::offset_of!(DLManagedTensorVersioned, flags), 24);
        assert_eq!(std::mem::offset_of!(DLManagedTensorVersioned, dl_tensor), 32);
        assert_eq!(std::mem::size_of::<DLManagedTensorVersioned>(), 80);
    }
}
