//! `ndarray` conveniences (feature `ndarray`): uploads from arrays and views (no copy when the
//! view is contiguous; strided views through byte strides) and host arrays back into `ArrayD`.

use std::borrow::Cow;
use std::marker::PhantomData;

use ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn};

use crate::buffer::host_data::HostData;
use crate::buffer::upload::{HostSource, SourceData};
use crate::error::{Error, Result};
use crate::host_array::HostArray;
use pjrt_types::{native_bytes, NativeType};

/// An array (or view) as a [`HostSource`]: a contiguous standard-layout array is read in place;
/// a strided one with non-negative strides is read through byte strides (then
/// [`crate::UploadOptions::byte_strides`] must stay unset); anything else is copied to standard
/// layout first and moved to the plugin as owned data.
///
/// ```
/// use ndarray::{array, s};
/// use pjrt_client::UploadOptions;
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let a = array![[1f32, 2., 3.], [4., 5., 6.]];
/// let every_other_column = a.slice(s![.., ..;2]);
/// let x = client.upload_with(&every_other_column, &UploadOptions::new())?;
/// assert_eq!(x.to_vec::<f32>()?, [1., 3., 4., 6.]);
/// let back = x.to_host_array()?.to_ndarray::<f32>()?;
/// assert_eq!(back, every_other_column.into_dyn());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
impl<'h, T, S, D> From<&'h ArrayBase<S, D>> for HostSource<'h>
where
    T: NativeType,
    S: Data<Elem = T>,
    D: Dimension,
{
    fn from(array: &'h ArrayBase<S, D>) -> Self {
        let dims: Vec<i64> = array.shape().iter().map(|&d| d as i64).collect();
        let borrowed = |ptr: *const u8, len: usize, byte_strides: Option<Vec<i64>>| HostSource {
            data: SourceData::Borrowed { ptr, len, byte_strides, _borrow: PhantomData },
            element_type: T::ELEMENT_TYPE,
            dims: Cow::Owned(dims.clone()),
            misplaced_on_done: false,
        };
        if let Some(slice) = array.as_slice() {
            let bytes = native_bytes(slice);
            return borrowed(bytes.as_ptr(), bytes.len(), None);
        }
        let element = std::mem::size_of::<T>() as isize;
        let strides = array.strides();
        if !array.is_empty() && strides.iter().all(|s| *s >= 0) {
            // The furthest element the view touches, from its first element.
            let last: isize = array.shape().iter().zip(strides).map(|(&n, &s)| (n as isize - 1) * s).sum();
            let span = ((last + 1) * element) as usize;
            // No slice over `span`: the gaps between the view's elements may belong to someone
            // else (another view of the same array, borrowed mutably), and a `&[u8]` over them
            // would alias it. The plugin is given the pointer and reads only the elements:
            // with non-negative strides every element of the view lies in [as_ptr, as_ptr +
            // span), borrowed for 'h; the upload checks the strides against `span`.
            let byte_strides = strides.iter().map(|s| (s * element) as i64).collect();
            return borrowed(array.as_ptr() as *const u8, span, Some(byte_strides));
        }
        let standard = array.as_standard_layout().into_owned();
        let bytes = standard.as_slice().map(|s| native_bytes(s).to_vec()).unwrap_or_default();
        HostSource {
            data: SourceData::Owned(HostData::Bytes(bytes), None),
            element_type: T::ELEMENT_TYPE,
            dims: Cow::Owned(dims),
            misplaced_on_done: false,
        }
    }
}

impl HostArray {
    /// The array as an `ArrayD<T>` (T must match the element type).
    pub fn to_ndarray<T: NativeType>(&self) -> Result<ArrayD<T>> {
        let shape: Vec<usize> = self.dims().iter().map(|&d| d as usize).collect();
        let values = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(&shape), values)
            .map_err(|e| Error::invalid(format!("the array's data does not fit its dimensions: {e}")))
    }
}
