//! Bitcasts: the same bytes seen as another element type or shape (`PJRT_Buffer_Bitcast`, 0.98).

use std::ptr::NonNull;

use crate::buffer::checks::{check_array, not_deleted};
use crate::buffer::layout::dense_byte_size;
use crate::buffer::Buffer;
use crate::call::pjrt_call;
use crate::error::{Error, Result};
use crate::sys::{self, Args};
use pjrt_types::ElementType;

impl Buffer {
    /// The same bytes seen as another element type and/or shape (`PJRT_Buffer_Bitcast`, 0.98),
    /// with the default layout. The dense byte sizes must be equal (`f32[4]` → `f32[2,2]` or `s32[4]`).
    ///
    /// The memory moves to the new buffer: this buffer then reports [`Buffer::is_deleted`] (both
    /// CPU plugins donate the source).
    pub fn bitcast(&self, element_type: ElementType, dims: &[i64]) -> Result<Buffer> {
        let api = self.client().api();
        let new_size = check_array(api, element_type, dims)?;
        not_deleted(self)?;
        let old_type = self.element_type()?;
        let old_dims = self.dimensions()?;
        let old_size = dense_byte_size(old_type, old_dims)?;
        if new_size != old_size {
            return Err(Error::invalid(format!(
                "cannot bitcast {old_type}{old_dims:?} ({old_size} bytes) to {element_type}{dims:?} ({new_size} bytes)"
            )));
        }
        let mut args = sys::PJRT_Buffer_Bitcast_Args::new();
        args.buffer = self.as_raw();
        args.element_type = sys::PJRT_Buffer_Type(element_type.to_i32());
        args.dims = dims.as_ptr();
        args.num_dims = dims.len();
        pjrt_call!(api, PJRT_Buffer_Bitcast, &mut args)?;
        let mut buffer = NonNull::new(args.out_buffer)
            .map(|raw| Buffer::from_raw(self.client(), raw))
            .ok_or_else(|| Error::invalid("PJRT_Buffer_Bitcast returned no buffer"))?;
        buffer.set_known_shape(element_type, dims);
        Ok(buffer)
    }
}
