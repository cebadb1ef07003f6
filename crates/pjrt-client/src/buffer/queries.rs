//! Buffer queries beyond the basics: where the data lives (on the CPU, its unsafe pointer),
//! dynamic and unpadded dimensions, memory layouts (the buffer's and the client's default).

use std::ffi::c_void;

use crate::buffer::checks::not_deleted;
use crate::buffer::layout::MemoryLayout;
use crate::buffer::Buffer;
use crate::call::{checked_slice, pjrt_call};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::sys::{self, Args};
use pjrt_types::ElementType;

// DLPack still names these by their old home; to go once `dlpack/mod.rs` imports them from
// `buffer::external_reference`.
pub(crate) use crate::buffer::external_reference::{increase_external_reference, RawExternalReference};

impl Client {
    /// The layout the client gives a new array of `element_type` and `dims` when no device
    /// layout is asked for (the Layouts extension's `Client_GetDefaultLayout`, read as a
    /// [`MemoryLayout`]). Uploads with [`crate::UploadOptions::device_layout`] differ from it.
    ///
    /// ```
    /// use pjrt_client::{ElementType, MemoryLayout};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// assert_eq!(client.default_memory_layout(ElementType::F32, &[2, 3])?, MemoryLayout::dense(2));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn default_memory_layout(&self, element_type: ElementType, dims: &[i64]) -> Result<MemoryLayout> {
        let plugin = self.plugin();
        let Some(ext) = plugin.layouts_extension() else {
            return Err(self
                .api()
                .unsupported_feature("the Layouts extension (PJRT_Layouts_PJRT_Client_GetDefaultLayout)", 51));
        };
        let serialized = ext.client_default_layout(self, element_type, dims)?;
        serialized.as_str().and_then(MemoryLayout::parse).ok_or_else(|| {
            Error::invalid(format!("cannot read the default layout {serialized}: not XLA's layout notation"))
        })
    }
}

impl Buffer {
    /// Whether the buffer lives in memory the host CPU can address directly.
    pub fn is_on_cpu(&self) -> Result<bool> {
        let mut args = sys::PJRT_Buffer_IsOnCpu_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_IsOnCpu, &mut args)?;
        // SAFETY: a byte of `args`, initialised by `new` and perhaps rewritten by the plugin.
        Ok(unsafe { crate::call::plugin_bool(&raw const args.is_on_cpu) })
    }

    /// The indices of the dimensions whose size is only known at run time (empty: all static).
    /// Empty too when the plugin answers UNIMPLEMENTED, as XLA's C API client reads that answer
    /// ("not dynamic").
    pub fn dynamic_dimension_indices(&self) -> Result<Vec<usize>> {
        let rank = self.dimensions()?.len();
        let mut args = sys::PJRT_Buffer_DynamicDimensionIndices_Args::new();
        args.buffer = self.as_raw();
        match pjrt_call!(self.client().api(), PJRT_Buffer_DynamicDimensionIndices, &mut args) {
            Err(e) if e.is_unimplemented() => return Ok(Vec::new()),
            other => other?,
        }
        const F: &str = "PJRT_Buffer_DynamicDimensionIndices";
        // SAFETY: the array is owned by the buffer, which is alive; copied at once.
        let indices = unsafe { checked_slice(args.dynamic_dim_indices, args.num_dynamic_dims, F, "indices") }?;
        if let Some(bad) = indices.iter().find(|i| **i >= rank) {
            return Err(Error::invalid(format!("{F} returned index {bad} for a rank-{rank} buffer")));
        }
        Ok(indices.to_vec())
    }

    /// The dimensions without padding: equal to [`Buffer::dimensions`] except for dynamic
    /// dimensions, which may be smaller.
    pub fn unpadded_dimensions(&self) -> Result<Vec<i64>> {
        let dims = self.dimensions()?.to_vec();
        let mut args = sys::PJRT_Buffer_UnpaddedDimensions_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_UnpaddedDimensions, &mut args)?;
        const F: &str = "PJRT_Buffer_UnpaddedDimensions";
        // SAFETY: the array is owned by the buffer, which is alive; copied at once.
        let unpadded = unsafe { checked_slice(args.unpadded_dims, args.num_dims, F, "dimensions") }?.to_vec();
        if unpadded.len() != dims.len() || unpadded.iter().zip(&dims).any(|(u, d)| *u < 0 || u > d) {
            return Err(Error::invalid(format!("{F} returned {unpadded:?} for a buffer of dimensions {dims:?}")));
        }
        Ok(unpadded)
    }

    /// The buffer's memory layout: through the Layouts extension where the plugin has it, else
    /// through the deprecated `PJRT_Buffer_GetMemoryLayout`.
    pub fn memory_layout(&self) -> Result<MemoryLayout> {
        not_deleted(self)?;
        let plugin = self.client().plugin();
        if let Some(ext) = plugin.layouts_extension() {
            let serialized = ext.buffer_layout(self)?;
            if let Some(layout) = serialized.as_str().and_then(MemoryLayout::parse) {
                return Ok(layout);
            }
            // A notation this crate cannot read: ask the older slot, and name both if it fails.
            return self.legacy_memory_layout().map_err(|e| {
                Error::invalid(format!("cannot read the layout {serialized} from the Layouts extension; {e}"))
            });
        }
        self.legacy_memory_layout()
    }

    /// The layout as the deprecated `PJRT_Buffer_GetMemoryLayout` slot reports it (prefer
    /// [`Buffer::memory_layout`]).
    pub fn legacy_memory_layout(&self) -> Result<MemoryLayout> {
        not_deleted(self)?;
        let rank = self.dimensions()?.len();
        let mut args = sys::PJRT_Buffer_GetMemoryLayout_Args::new();
        args.buffer = self.as_raw();
        args.layout.struct_size = sys::PJRT_Buffer_MemoryLayout::STRUCT_SIZE;
        pjrt_call!(self.client().api(), PJRT_Buffer_GetMemoryLayout, &mut args)?;
        const F: &str = "PJRT_Buffer_GetMemoryLayout";
        let layout = args.layout;
        match layout.type_ {
            sys::PJRT_Buffer_MemoryLayout_Type::Tiled => {
                // SAFETY: `type_` says the tiled member is the one written.
                let tiled = unsafe { layout.layout.tiled };
                // SAFETY: the arrays are owned by the buffer (alive); copied at once.
                let minor_to_major =
                    unsafe { checked_slice(tiled.minor_to_major, tiled.minor_to_major_size, F, "minor_to_major") }?
                        .to_vec();
                let mut sorted = minor_to_major.clone();
                sorted.sort_unstable();
                if sorted != (0..rank as i64).collect::<Vec<_>>() {
                    return Err(Error::invalid(format!(
                        "{F} returned minor_to_major {minor_to_major:?} for a rank-{rank} buffer"
                    )));
                }
                // SAFETY: as above.
                let sizes = unsafe { checked_slice(tiled.tile_dim_sizes, tiled.num_tiles, F, "tile sizes") }?;
                let total = sizes
                    .iter()
                    .try_fold(0usize, |n, s| n.checked_add(*s))
                    .ok_or_else(|| Error::invalid(format!("{F} returned impossible tile sizes")))?;
                // SAFETY: as above.
                let flat = unsafe { checked_slice(tiled.tile_dims, total, F, "tile dimensions") }?;
                let mut tiles = Vec::with_capacity(sizes.len());
                let mut at = 0;
                for size in sizes {
                    tiles.push(flat[at..at + size].to_vec());
                    at += size;
                }
                Ok(MemoryLayout::Tiled { minor_to_major, tiles })
            }
            sys::PJRT_Buffer_MemoryLayout_Type::Strides => {
                // SAFETY: `type_` says the strides member is the one written.
                let strides = unsafe { layout.layout.strides };
                // SAFETY: owned by the buffer; copied at once.
                let byte_strides =
                    unsafe { checked_slice(strides.byte_strides, strides.num_byte_strides, F, "byte strides") }?
                        .to_vec();
                if byte_strides.len() != rank {
                    return Err(Error::invalid(format!("{F} returned {} strides for rank {rank}", byte_strides.len())));
                }
                Ok(MemoryLayout::Strides { byte_strides })
            }
            other => Err(Error::invalid(format!("{F} returned an unknown layout type {}", other.0))),
        }
    }

    /// A platform-dependent address of the buffer's data (on CPU a host address). It may become
    /// invalid at any moment unless an [`ExternalReference`](crate::ExternalReference) is held; dereferencing it is up to
    /// the caller and `unsafe`.
    pub fn unsafe_pointer(&self) -> Result<*mut c_void> {
        not_deleted(self)?;
        let mut args = sys::PJRT_Buffer_UnsafePointer_Args::new();
        args.buffer = self.as_raw();
        pjrt_call!(self.client().api(), PJRT_Buffer_UnsafePointer, &mut args)?;
        Ok(args.buffer_pointer as *mut c_void)
    }
}
