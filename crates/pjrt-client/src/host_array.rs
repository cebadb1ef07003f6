//! [`HostArray`]: a dense array in host memory, typed by a PJRT [`ElementType`] — what a
//! buffer holds, on the host. File formats (`.npy`, safetensors in the `pjrt-formats` crate)
//! convert to and from it; [`crate::sharding`] splits and gathers it across devices.

use crate::error::{Error, Result};
use pjrt_types::{native_bytes, native_values, ElementType, NativeType};

/// A dense, row-major array in host memory with a PJRT element type.
///
/// The bytes are in the host format of [`ElementType::host_bytes`]: little-endian elements of
/// whole bytes, and for sub-byte types one element per byte, the value in the low bits (signed
/// values may also be sign-extended). [`HostArray::new`] checks both the size and the values,
/// so every `HostArray` uploads without surprises.
///
/// ```
/// use pjrt_client::{ElementType, HostArray, UploadOptions};
/// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
/// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
/// let x = HostArray::from_elements(vec![2, 2], &[1f32, 2., 3., 4.])?;
/// let rows = x.split(0, 2)?;
/// assert_eq!(rows[1].to_vec::<f32>()?, [3., 4.]);
/// assert_eq!(HostArray::concatenate(&rows, 0)?, x);
///
/// let buffer = client.upload_with(&x, &UploadOptions::new())?;
/// assert_eq!(buffer.to_host_array()?, x);
///
/// // Sub-byte types: one element per byte; int4 8 does not exist.
/// assert!(HostArray::new(ElementType::S4, vec![2], vec![0x07, 0x0f]).is_ok());
/// assert!(HostArray::new(ElementType::S4, vec![1], vec![0x10]).is_err());
/// # Ok::<(), pjrt_client::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HostArray {
    element_type: ElementType,
    /// Non-negative, and their product fits `usize` (checked in `new`).
    dims: Vec<i64>,
    data: Vec<u8>,
}

/// The dimensions as sizes, or `None` if one is negative or their product overflows.
pub(crate) fn dims_to_sizes(dims: &[i64]) -> Option<(Vec<usize>, usize)> {
    let sizes: Vec<usize> = dims.iter().map(|d| usize::try_from(*d).ok()).collect::<Option<_>>()?;
    let count = sizes.iter().try_fold(1usize, |n, d| n.checked_mul(*d))?;
    Some((sizes, count))
}

impl HostArray {
    /// An array of dimensions `dims` from its host bytes. An error if a dimension is negative,
    /// if `data` is not exactly the size of `dims` in `element_type`
    /// ([`ElementType::host_bytes`]), if the type is not an array type, or if a byte of a
    /// sub-byte type is not a value of it ([`ElementType::check_host_values`]).
    pub fn new(element_type: ElementType, dims: Vec<i64>, data: Vec<u8>) -> Result<Self> {
        let count = dims_to_sizes(&dims).map(|(_, count)| count);
        let expected = count.and_then(|c| element_type.host_bytes(c)).ok_or_else(|| {
            Error::invalid(format!("an array of {element_type} and dimensions {dims:?} has no host size"))
        })?;
        if data.len() != expected {
            return Err(Error::invalid(format!(
                "an array of {element_type} and dimensions {dims:?} takes {expected} bytes, not {}",
                data.len()
            )));
        }
        element_type.check_host_values(&data)?;
        Ok(HostArray { element_type, dims, data })
    }

    /// An array of dimensions `dims` holding `elements` (row-major). PRED arrays are made from
    /// `bool`s.
    pub fn from_elements<T: NativeType>(dims: Vec<i64>, elements: &[T]) -> Result<Self> {
        HostArray::new(T::ELEMENT_TYPE, dims, native_bytes(elements).to_vec())
    }

    /// The elements as `T`, which must match the element type. PRED bytes other than 0 and 1
    /// read as `true`, the way numpy casts bytes to `bool`.
    pub fn to_vec<T: NativeType>(&self) -> Result<Vec<T>> {
        if self.element_type != T::ELEMENT_TYPE {
            return Err(Error::invalid(format!("the array holds {}, not {}", self.element_type, T::ELEMENT_TYPE)));
        }
        Ok(native_values(&self.data))
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The dimensions (non-negative), as PJRT and [`crate::Buffer::dimensions`] give them.
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// The host bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The element type, dimensions and bytes.
    pub fn into_parts(self) -> (ElementType, Vec<i64>, Vec<u8>) {
        (self.element_type, self.dims, self.data)
    }

    /// The number of elements (1 for a scalar).
    pub fn element_count(&self) -> usize {
        self.sizes().iter().product()
    }

    /// The dimensions as sizes (checked in `new`).
    fn sizes(&self) -> Vec<usize> {
        self.dims.iter().map(|d| *d as usize).collect()
    }

    fn element_bytes(&self) -> usize {
        // An array exists only for types with a host size (checked in `new`).
        self.element_type.host_element_bytes().unwrap_or(1)
    }

    /// Splits the array into `parts` equal slices along `axis` (an error if the axis does not
    /// divide).
    pub fn split(&self, axis: usize, parts: usize) -> Result<Vec<HostArray>> {
        let pieces = split_along(&self.data, &self.sizes(), self.element_bytes(), axis, parts)?;
        Ok(pieces
            .into_iter()
            .map(|data| {
                let mut dims = self.dims.clone();
                dims[axis] /= parts as i64;
                HostArray { element_type: self.element_type, dims, data }
            })
            .collect())
    }

    /// Concatenates arrays of equal element type and dimensions (except along `axis`): the
    /// inverse of [`HostArray::split`].
    pub fn concatenate(parts: &[HostArray], axis: usize) -> Result<HostArray> {
        let first = parts.first().ok_or_else(|| Error::invalid("nothing to concatenate"))?;
        let rank = first.dims.len();
        if axis >= rank {
            return Err(Error::invalid(format!("cannot concatenate rank-{rank} arrays along axis {axis}")));
        }
        for p in parts {
            let same_other_dims = p.dims.len() == rank && (0..rank).all(|i| i == axis || p.dims[i] == first.dims[i]);
            if p.element_type != first.element_type || !same_other_dims {
                return Err(Error::invalid(
                    "arrays to concatenate must have the same element type and the same other dimensions",
                ));
            }
        }
        let sizes = first.sizes();
        let outer: usize = sizes[..axis].iter().product();
        let inner: usize = sizes[axis + 1..].iter().product::<usize>() * first.element_bytes();
        let rows: Vec<(&[u8], usize)> =
            parts.iter().map(|p| (p.data.as_slice(), p.dims[axis] as usize * inner)).collect();
        let data = interleave(&rows, outer);
        let mut dims = first.dims.clone();
        dims[axis] = parts.iter().map(|p| p.dims[axis]).sum();
        Ok(HostArray { element_type: first.element_type, dims, data })
    }
}

/// Splits row-major data of `shape` (each element `unit` items of `T`) into `parts` equal
/// pieces along `axis`; the arithmetic of [`HostArray::split`] and [`crate::sharding::shard_slice`].
/// `data` must hold the whole shape.
pub(crate) fn split_along<T: Copy>(
    data: &[T],
    shape: &[usize],
    unit: usize,
    axis: usize,
    parts: usize,
) -> Result<Vec<Vec<T>>> {
    let rank = shape.len();
    if axis >= rank {
        return Err(Error::invalid(format!("cannot split a rank-{rank} array along axis {axis}")));
    }
    if parts == 0 || shape[axis] % parts != 0 {
        return Err(Error::invalid(format!(
            "axis {axis} has size {}, which does not split into {parts} equal parts",
            shape[axis]
        )));
    }
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product::<usize>() * unit;
    let step = shape[axis] / parts;
    Ok((0..parts)
        .map(|p| {
            let mut piece = Vec::with_capacity(outer * step * inner);
            for o in 0..outer {
                let start = (o * shape[axis] + p * step) * inner;
                piece.extend_from_slice(&data[start..start + step * inner]);
            }
            piece
        })
        .collect())
}

/// The inverse of [`split_along`]: for each of `outer` rows, each part's next `chunk` items in
/// turn. Each part `(items, chunk)` must hold `outer * chunk` items.
pub(crate) fn interleave<T: Copy>(parts: &[(&[T], usize)], outer: usize) -> Vec<T> {
    let mut data = Vec::with_capacity(parts.iter().map(|(items, _)| items.len()).sum());
    for o in 0..outer {
        for (items, chunk) in parts {
            data.extend_from_slice(&items[o * chunk..(o + 1) * chunk]);
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_concatenate_round_trip() {
        let a = HostArray::from_elements(vec![4, 3], &(0..12).collect::<Vec<i32>>()).unwrap();
        for axis in 0..2 {
            let parts = if axis == 0 { 2 } else { 3 };
            let pieces = a.split(axis, parts).unwrap();
            assert_eq!(HostArray::concatenate(&pieces, axis).unwrap(), a);
        }
        let rows = a.split(0, 2).unwrap();
        assert_eq!(rows[1].to_vec::<i32>().unwrap(), vec![6, 7, 8, 9, 10, 11]);
        let cols = a.split(1, 3).unwrap();
        assert_eq!(cols[2].to_vec::<i32>().unwrap(), vec![2, 5, 8, 11]);
        assert!(a.split(0, 3).is_err());
        assert!(a.split(2, 1).is_err());
        let b = HostArray::from_elements(vec![4, 3], &[0f32; 12]).unwrap();
        assert!(HostArray::concatenate(&[a, b], 0).is_err());
    }

    #[test]
    fn sizes_and_values_are_checked() {
        assert!(HostArray::new(ElementType::F32, vec![2], vec![0; 7]).is_err());
        assert!(HostArray::new(ElementType::F32, vec![i64::MAX, 2], vec![]).is_err());
        assert!(HostArray::new(ElementType::F32, vec![-1], vec![]).is_err());
        assert!(HostArray::new(ElementType::TOKEN, vec![], vec![]).is_err());
        assert!(HostArray::new(ElementType::U4, vec![1], vec![0xff]).is_err());
        assert!(HostArray::new(ElementType::S4, vec![1], vec![0xff]).is_ok());
        let pred = HostArray::new(ElementType::PRED, vec![3], vec![2, 1, 0]).unwrap();
        assert_eq!(pred.to_vec::<bool>().unwrap(), [true, true, false]);
        assert!(pred.to_vec::<u8>().is_err());
    }
}
