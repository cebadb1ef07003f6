//! What every args struct shares: the [`Args`] trait (zero-filled construction, the header's
//! `STRUCT_SIZE`), and the `extension_start` field's type [`Ext`], a pointer to the
//! [`PJRT_Extension_Base`] that heads every extension node (with its [`PJRT_Extension_Type`]).
//!
//! Rules kept by every declaration:
//! - every C enum is an `i32` newtype with associated constants, so an unknown value from a newer
//!   plugin is data, not undefined behaviour;
//! - every args struct gets `STRUCT_SIZE` = offset of its last field + that field's size (the
//!   header's `*_STRUCT_SIZE`), never `size_of` (which would include tail padding);
//! - args are built only through [`Args::new`], which zero-fills and sets `struct_size`.

#![allow(non_camel_case_types, non_snake_case, missing_docs)]

/// Every args struct: zero-filled construction with the right `struct_size`.
///
/// # Safety
/// Implementors must be `#[repr(C)]`, start with a `usize` `struct_size`, and be valid when
/// all-zero (pointers, integers, bools and `Option<fn>` only).
pub unsafe trait Args: Sized {
    /// Offset of the last field plus its size: what the header calls `*_STRUCT_SIZE`.
    const STRUCT_SIZE: usize;
    /// A zero-filled value with `struct_size` set.
    fn new() -> Self {
        // SAFETY: the trait's contract says all-zero is a valid value and the first field is
        // the `usize` struct_size.
        unsafe {
            let mut value: Self = std::mem::zeroed();
            *(&mut value as *mut Self as *mut usize) = Self::STRUCT_SIZE;
            value
        }
    }
}

/// The `extension_start` field type.
pub type Ext = *mut PJRT_Extension_Base;

c_enum!(
    /// `PJRT_Extension_Type` (append-only; unknown values must be skipped).
    PJRT_Extension_Type {
        Gpu_Custom_Call = 0, Profiler = 1, Custom_Partitioner = 2, Stream = 3, Layouts = 4,
        FFI = 5, MemoryDescriptions = 6, Triton = 7, RawBuffer = 8, PhaseCompile = 9,
        Example = 10, Unknown = 11, CrossHostTransfers = 12, ExecutableMetadata = 13,
        Callback = 14, HostAllocator = 15, TpuTopology = 16, TpuExecutable = 17, Megascale = 18,
        Shardings = 19, AbiVersion = 20, Collectives = 21, MultiSlice = 22,
        HostMemoryAllocator = 23, XlaTransform = 24,
    }
);

/// `PJRT_Extension_Base`: the head of every extension struct.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PJRT_Extension_Base {
    pub struct_size: usize,
    pub type_: PJRT_Extension_Type,
    pub next: *mut PJRT_Extension_Base,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn extension_base_layout() {
        assert_eq!(std::mem::size_of::<PJRT_Extension_Base>(), 24);
        assert_eq!(offset_of!(PJRT_Extension_Base, type_), 8);
        assert_eq!(offset_of!(PJRT_Extension_Base, next), 16);
    }
}
