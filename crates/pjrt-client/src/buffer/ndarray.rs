//! `ndarray` conveniences (feature `ndarray`): buffers from array views (no copy when the view
//! is contiguous; strided views through byte strides) and back into `ArrayD`.

use ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn};

use crate::buffer::{Buffer, HostLayout, Placement};
use crate::client::Client;
use crate::element_type::NativeType;
use crate::error::{Error, Result};

impl Client {
    /// Uploads an array (or view). A contiguous standard-layout array is read in place; a
    /// strided one with non-negative strides is read through byte strides; anything else is
    /// copied to standard layout first.
    pub fn buffer_from_array<T, S, D>(&self, array: &ArrayBase<S, D>, placement: Placement<'_>) -> Result<Buffer>
    where
        T: NativeType,
        S: Data<Elem = T>,
        D: Dimension,
    {
        let dims: Vec<i64> = array.shape().iter().map(|&d| d as i64).collect();
        if let Some(slice) = array.as_slice() {
            return self.buffer_from_slice(slice, &dims, placement);
        }
        let element = std::mem::size_of::<T>() as isize;
        let strides = array.strides();
        if !array.is_empty() && strides.iter().all(|s| *s >= 0) {
            // The furthest element the view touches, from its first element.
            let last: isize = array.shape().iter().zip(strides).map(|(&n, &s)| (n as isize - 1) * s).sum();
            let span = ((last + 1) * element) as usize;
            let layout = HostLayout {
                byte_strides: Some(strides.iter().map(|s| (s * element) as i64).collect()),
                ..Default::default()
            };
            // No slice over `span`: the gaps between the view's elements may belong to someone
            // else (another view of the same array, borrowed mutably), and a `&[u8]` over them
            // would alias it. The plugin is given the pointer and reads only the elements.
            // SAFETY: with non-negative strides every element of the view lies in
            // [as_ptr, as_ptr + span) and is readable (the array borrows it) for this call, which
            // returns only once the plugin no longer reads; the strides are checked against
            // `span` inside.
            return unsafe {
                self.upload_borrowed(array.as_ptr() as *const u8, span, T::ELEMENT_TYPE, &dims, &layout, placement)
            };
        }
        let standard = array.as_standard_layout();
        let slice = standard.as_slice().ok_or_else(|| Error::invalid("could not make the array contiguous"))?;
        self.buffer_from_slice(slice, &dims, placement)
    }
}

impl Buffer {
    /// Copies the buffer into a new `ArrayD<T>` (T must match the element type).
    pub fn to_array<T: NativeType>(&self) -> Result<ArrayD<T>> {
        let shape: Vec<usize> = self.dimensions()?.iter().map(|&d| d as usize).collect();
        let values = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(&shape), values)
            .map_err(|e| Error::invalid(format!("the buffer's data does not fit its shape: {e}")))
    }
}
