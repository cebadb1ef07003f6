//! DLPack and `ndarray` (feature `ndarray`): an owned array handed out as a DLPack tensor, and a
//! host tensor read as an array view, both without a copy.

use std::ptr::NonNull;

use ndarray::{Array, ArrayViewD, Dimension, IxDyn, ShapeBuilder, StrideShape};

use super::ffi::{self, DLDeviceType, DLManagedTensorVersioned};
use super::{checked_dims, checked_strides, dtype_of, first_element, ManagedTensor};
use crate::call::panic::no_unwind;
use crate::error::{Error, Result};
use pjrt_types::{ElementType, NativeType};

/// The allocation behind a tensor made from an array: the DLPack struct first.
#[repr(C)]
struct FromArray<T, D> {
    managed: DLManagedTensorVersioned,
    _array: Array<T, D>,
    shape: Box<[i64]>,
    strides: Box<[i64]>,
}

unsafe extern "C" fn delete_from_array<T, D>(tensor: *mut DLManagedTensorVersioned) {
    no_unwind(|| {
        if !tensor.is_null() {
            // SAFETY: the first field of a `FromArray<T, D>` leaked in `from_ndarray`; DLPack
            // calls the deleter once. Dropping an array calls no plugin.
            drop(unsafe { Box::from_raw(tensor.cast::<FromArray<T, D>>()) });
        }
    });
}

impl ManagedTensor {
    /// Hands an owned `ndarray` array to DLPack without a copy (`kDLCPU`): the tensor owns the
    /// array until its deleter runs. Arrays with negative strides are copied to standard layout
    /// first (DLPack strides may be negative, but PJRT cannot view them).
    ///
    /// Import it with [`crate::Client::view_of_dlpack`] when its first element is 64-byte
    /// aligned (the CPU plugins' rule for views); an array's own allocation usually is not, and
    /// then [`crate::Client::copy_of_dlpack`] copies it once.
    ///
    /// ```
    /// use pjrt_client::dlpack::ManagedTensor;
    /// use pjrt_client::ndarray::array;
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let a = array![[1f32, 2.], [3., 4.]].reversed_axes(); // column-major
    /// let tensor = ManagedTensor::from_ndarray(a)?;
    /// assert_eq!(tensor.strides(), Some(&[1i64, 2][..]));
    /// let x = client.copy_of_dlpack(tensor)?;
    /// assert_eq!(x.to_vec::<f32>()?, [1., 3., 2., 4.]);
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn from_ndarray<T: NativeType, D: Dimension + 'static>(array: Array<T, D>) -> Result<ManagedTensor> {
        let array =
            if array.strides().iter().any(|s| *s < 0) { array.as_standard_layout().into_owned() } else { array };
        let dtype = dtype_of(T::ELEMENT_TYPE)?;
        let ndim = i32::try_from(array.ndim()).map_err(|_| Error::invalid("the array's rank exceeds DLPack's"))?;
        let mut shape: Box<[i64]> = array.shape().iter().map(|d| *d as i64).collect();
        let mut strides: Box<[i64]> = array.strides().iter().map(|s| *s as i64).collect();
        let data = array.as_ptr() as *mut std::ffi::c_void;
        let managed = DLManagedTensorVersioned {
            version: ffi::DLPackVersion { major: ffi::DLPACK_MAJOR_VERSION, minor: ffi::DLPACK_MINOR_VERSION },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_from_array::<T, D>),
            flags: 0,
            dl_tensor: ffi::DLTensor {
                data,
                device: ffi::DLDevice { device_type: DLDeviceType::CPU, device_id: 0 },
                ndim,
                dtype,
                shape: shape.as_mut_ptr(),
                strides: strides.as_mut_ptr(),
                byte_offset: 0,
            },
        };
        // Moving the array and the boxes keeps their heap addresses.
        let raw = Box::into_raw(Box::new(FromArray { managed, _array: array, shape, strides }));
        let raw = NonNull::new(raw.cast::<DLManagedTensorVersioned>()).expect("Box::into_raw is never NULL");
        // SAFETY: the allocation owns the array, its shape and strides until the deleter, which
        // may run on any thread (`T: Send`, and the array's drop calls no plugin).
        Ok(unsafe { ManagedTensor::from_raw(raw) })
    }

    /// Reads a host tensor (`kDLCPU`) of element type `T` as an `ndarray` view, without a copy:
    /// e.g. a buffer exported with [`crate::Buffer::into_dlpack`] on a CPU client. Refused for
    /// other devices, another data type, sub-byte types and memory misaligned for `T`.
    ///
    /// A `bool` tensor (PRED) is read as `bool` only when every byte is 0 or 1, checked once
    /// here ([`Error::InvalidBool`] otherwise: a plugin keeps PRED bytes as it was given them,
    /// so an upload of `[2, 0]` exports 2); it can always be read as `u8`, nonzero meaning true.
    ///
    /// ```
    /// use pjrt_client::{ElementType, HostSource, UploadOptions};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let x = client.upload(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// let tensor = x.into_dlpack()?;
    /// let view = tensor.as_ndarray::<i32>()?;
    /// assert_eq!(view.shape(), [2, 3]);
    /// assert_eq!(view[[1, 2]], 6);
    /// assert_eq!(view.as_ptr() as *mut std::ffi::c_void, tensor.data_pointer()); // the buffer's memory
    ///     ///
    /// // PRED bytes other than 0 and 1 are no bools: read them as u8.
    /// let p = client.upload_with(HostSource::bytes(&[2, 0], ElementType::PRED, &[2]), &UploadOptions::new())?;
    /// let tensor = p.into_dlpack()?;
    /// assert!(matches!(tensor.as_ndarray::<bool>(), Err(pjrt_client::Error::InvalidBool { index: 0, byte: 2, .. })));
    /// assert_eq!(tensor.as_ndarray::<u8>()?.as_slice(), Some(&[2u8, 0][..]));
    /// # Ok::<(), pjrt_client::Error>(())
    /// ```
    pub fn as_ndarray<T: NativeType>(&self) -> Result<ArrayViewD<'_, T>> {
        let tensor = self.tensor()?;
        if tensor.device.device_type != DLDeviceType::CPU {
            return Err(Error::invalid(format!(
                "an ndarray view needs host memory (kDLCPU); the tensor is on device type {}",
                tensor.device.device_type.0
            )));
        }
        let pred = dtype_of(ElementType::PRED)?;
        let bools_as_bytes = T::ELEMENT_TYPE == ElementType::U8 && tensor.dtype == pred;
        if (tensor.dtype != dtype_of(T::ELEMENT_TYPE)? && !bools_as_bytes) || T::ELEMENT_TYPE.is_sub_byte() {
            return Err(Error::invalid(format!(
                "the tensor's DLPack type {:?} is not {}",
                tensor.dtype,
                T::ELEMENT_TYPE
            )));
        }
        let dims: Vec<usize> = checked_dims(tensor)?
            .iter()
            .map(|d| usize::try_from(*d).map_err(|_| Error::invalid(format!("negative dimension {d}"))))
            .collect::<Result<_>>()?;
        let count: usize = dims.iter().product();
        let mut first = first_element(tensor) as *const T;
        if count == 0 {
            first = NonNull::<T>::dangling().as_ptr();
        } else if first.is_null() || first as usize % std::mem::align_of::<T>() != 0 {
            return Err(Error::invalid(format!(
                "the tensor's data at {first:p} is NULL or misaligned for {}",
                T::ELEMENT_TYPE
            )));
        }
        // ndarray needs every element's offset within isize::MAX bytes.
        super::checked_span(checked_dims(tensor)?, checked_strides(tensor)?, std::mem::size_of::<T>())?;
        let strides: Option<Vec<usize>> = match checked_strides(tensor)? {
            None => None,
            Some(strides) => {
                if strides.iter().zip(&dims).any(|(s, d)| *s < 0 && *d > 1) {
                    return Err(Error::invalid(format!("negative strides {strides:?}")));
                }
                Some(strides.iter().map(|s| (*s).max(0) as usize).collect())
            }
        };
        let shape = || -> StrideShape<IxDyn> {
            match &strides {
                None => IxDyn(&dims).into(),
                Some(strides) => IxDyn(&dims).strides(IxDyn(strides)),
            }
        };
        if T::ELEMENT_TYPE == ElementType::PRED {
            // SAFETY: as for the view below, read as bytes (every byte is a `u8`); `T` is one
            // byte (`NativeType` of PRED), so the shape addresses the same bytes.
            let bytes = unsafe { ArrayViewD::<u8>::from_shape_ptr(shape(), first.cast::<u8>()) };
            if let Some((index, &byte)) = bytes.iter().enumerate().find(|(_, b)| **b > 1) {
                return Err(Error::InvalidBool { what: "the DLPack tensor", index, byte });
            }
        }
        // SAFETY: `from_raw`'s contract: every element the shape and (non-negative) strides
        // address is a live, aligned `T` of host memory nobody writes while `self` lives, and
        // the view borrows `self`. Its bytes are valid `T`s: every bit pattern is (the
        // `NativeType` contract), except for PRED, whose bytes were just checked to be 0 or 1
        // (and nobody writes them meanwhile); a `u8` view of PRED takes any byte.
        Ok(unsafe { ArrayViewD::from_shape_ptr(shape(), first) })
    }
}
