//! The plugin's form of a memory layout ([`RawLayout`]): a [`MemoryLayout`] as the
//! `PJRT_Buffer_MemoryLayout` an upload, a view or a transfer hands the plugin, owning the arrays
//! it points into.

use std::ptr::NonNull;

use crate::buffer::layout::MemoryLayout;
use crate::error::Result;
use crate::sys::{self, Args};
use pjrt_types::ElementType;

/// A [`MemoryLayout`] in the plugin's form (`PJRT_Buffer_MemoryLayout`), owning the arrays it
/// points into. The plugin reads it during one call only; `&mut self` keeps it alive meanwhile.
pub(crate) struct RawLayout {
    // Heap arrays: moving the struct does not move them, so `raw`'s pointers stay valid.
    _minor_to_major: Box<[i64]>,
    _tile_dims: Box<[i64]>,
    _tile_dim_sizes: Box<[usize]>,
    _byte_strides: Box<[i64]>,
    raw: sys::PJRT_Buffer_MemoryLayout,
}

impl RawLayout {
    /// The layout for an array of `element_type` and `dims`, checked first
    /// ([`MemoryLayout::check`]) so the plugin never reads past an array or gets a malformed order.
    pub(crate) fn new(layout: &MemoryLayout, element_type: ElementType, dims: &[i64]) -> Result<RawLayout> {
        layout.check(element_type, dims)?;
        Ok(RawLayout::unchecked(layout))
    }

    /// The dense row-major layout of a rank-`rank` array (always valid).
    pub(crate) fn dense(rank: usize) -> RawLayout {
        RawLayout::unchecked(&MemoryLayout::dense(rank))
    }

    fn unchecked(layout: &MemoryLayout) -> RawLayout {
        // Empty arrays still get a non-NULL pointer: some plugins treat NULL as "absent".
        fn ptr<T>(v: &[T]) -> *const T {
            if v.is_empty() {
                NonNull::<T>::dangling().as_ptr()
            } else {
                v.as_ptr()
            }
        }
        let mut raw = sys::PJRT_Buffer_MemoryLayout::new();
        match layout {
            MemoryLayout::Tiled { minor_to_major, tiles } => {
                let minor_to_major: Box<[i64]> = minor_to_major.as_slice().into();
                let tile_dims: Box<[i64]> = tiles.iter().flatten().copied().collect();
                let tile_dim_sizes: Box<[usize]> = tiles.iter().map(Vec::len).collect();
                let mut tiled = sys::PJRT_Buffer_MemoryLayout_Tiled::new();
                tiled.minor_to_major = ptr(&minor_to_major);
                tiled.minor_to_major_size = minor_to_major.len();
                tiled.tile_dims = ptr(&tile_dims);
                tiled.tile_dim_sizes = ptr(&tile_dim_sizes);
                tiled.num_tiles = tile_dim_sizes.len();
                raw.layout = sys::PJRT_Buffer_MemoryLayout_Union { tiled };
                raw.type_ = sys::PJRT_Buffer_MemoryLayout_Type::Tiled;
                RawLayout {
                    _minor_to_major: minor_to_major,
                    _tile_dims: tile_dims,
                    _tile_dim_sizes: tile_dim_sizes,
                    _byte_strides: Box::new([]),
                    raw,
                }
            }
            MemoryLayout::Strides { byte_strides } => {
                let byte_strides: Box<[i64]> = byte_strides.as_slice().into();
                let mut strides = sys::PJRT_Buffer_MemoryLayout_Strides::new();
                strides.byte_strides = ptr(&byte_strides);
                strides.num_byte_strides = byte_strides.len();
                raw.layout = sys::PJRT_Buffer_MemoryLayout_Union { strides };
                raw.type_ = sys::PJRT_Buffer_MemoryLayout_Type::Strides;
                RawLayout {
                    _minor_to_major: Box::new([]),
                    _tile_dims: Box::new([]),
                    _tile_dim_sizes: Box::new([]),
                    _byte_strides: byte_strides,
                    raw,
                }
            }
        }
    }

    /// The plugin reads the layout during the call only; `&mut self` keeps it alive meanwhile.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut sys::PJRT_Buffer_MemoryLayout {
        &mut self.raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_layouts_point_into_their_own_arrays() {
        let tiled = MemoryLayout::Tiled { minor_to_major: vec![0, 1], tiles: vec![vec![2, 4], vec![1]] };
        let mut raw = RawLayout::new(&tiled, ElementType::F32, &[4, 8]).unwrap();
        let ptr = raw.as_mut_ptr();
        // SAFETY: built as tiled just above; the arrays live in `raw`.
        unsafe {
            assert_eq!((*ptr).type_, sys::PJRT_Buffer_MemoryLayout_Type::Tiled);
            assert_eq!((*ptr).struct_size, 76);
            let t = (*ptr).layout.tiled;
            assert_eq!(std::slice::from_raw_parts(t.minor_to_major, t.minor_to_major_size), [0, 1]);
            assert_eq!(std::slice::from_raw_parts(t.tile_dim_sizes, t.num_tiles), [2, 1]);
            assert_eq!(std::slice::from_raw_parts(t.tile_dims, 3), [2, 4, 1]);
        }
        let mut raw =
            RawLayout::new(&MemoryLayout::Strides { byte_strides: vec![4, 8] }, ElementType::F32, &[2, 3]).unwrap();
        let ptr = raw.as_mut_ptr();
        // SAFETY: built as strides just above.
        unsafe {
            assert_eq!((*ptr).type_, sys::PJRT_Buffer_MemoryLayout_Type::Strides);
            let s = (*ptr).layout.strides;
            assert_eq!(std::slice::from_raw_parts(s.byte_strides, s.num_byte_strides), [4, 8]);
        }
        assert!(RawLayout::new(&MemoryLayout::dense(3), ElementType::F32, &[2, 3]).is_err(), "checked first");
    }
}
