//! Dense host arrays (`.npy` files in particular) to and from buffers, plus the split/concatenate
//! helpers that multi-device runs need.

use crate::buffer::{Buffer, HostLayout, Placement};
use crate::client::Client;
use crate::element_type::ElementType;
use crate::error::{Error, Result};
use crate::npy::{Dtype, Endian, MappedNpy, NpyArray};

/// The element type a `.npy` dtype uploads as. `V2` (ml_dtypes' bfloat16) is bf16; `u2` data may
/// also be taken as bf16 when the program's parameter asks for it (see [`upload_npy`]).
pub fn element_type_of(dtype: Dtype) -> ElementType {
    match dtype {
        Dtype::Bool => ElementType::PRED,
        Dtype::I8 => ElementType::S8,
        Dtype::I16 => ElementType::S16,
        Dtype::I32 => ElementType::S32,
        Dtype::I64 => ElementType::S64,
        Dtype::U8 => ElementType::U8,
        Dtype::U16 => ElementType::U16,
        Dtype::U32 => ElementType::U32,
        Dtype::U64 => ElementType::U64,
        Dtype::F16 => ElementType::F16,
        Dtype::F32 => ElementType::F32,
        Dtype::F64 => ElementType::F64,
        Dtype::C64 => ElementType::C64,
        Dtype::C128 => ElementType::C128,
        Dtype::V2 => ElementType::BF16,
    }
}

/// The `.npy` dtype an element type is written as; bf16 is written as its raw bits (`<u2`).
pub fn dtype_of(element_type: ElementType) -> Option<Dtype> {
    Some(match element_type {
        ElementType::PRED => Dtype::Bool,
        ElementType::S8 => Dtype::I8,
        ElementType::S16 => Dtype::I16,
        ElementType::S32 => Dtype::I32,
        ElementType::S64 => Dtype::I64,
        ElementType::U8 => Dtype::U8,
        ElementType::U16 | ElementType::BF16 => Dtype::U16,
        ElementType::U32 => Dtype::U32,
        ElementType::U64 => Dtype::U64,
        ElementType::F16 => Dtype::F16,
        ElementType::F32 => Dtype::F32,
        ElementType::F64 => Dtype::F64,
        ElementType::C64 => Dtype::C64,
        ElementType::C128 => Dtype::C128,
        _ => return None,
    })
}

/// Uploads a `.npy` array. `wanted` is the parameter's element type when known: a `<u2` or `<V2`
/// array is then accepted for a bf16 parameter (raw bits). Any other mismatch is an error.
pub fn upload_npy(
    client: &Client,
    array: &NpyArray,
    wanted: Option<ElementType>,
    placement: Placement<'_>,
) -> Result<Buffer> {
    let element_type = upload_type(array.dtype, wanted)?;
    let dims: Vec<i64> = array.shape.iter().map(|d| *d as i64).collect();
    client.buffer_from_bytes(&array.data, element_type, &dims, &HostLayout::default(), placement)
}

/// The element type an array of `dtype` uploads as, for a parameter of type `wanted`.
fn upload_type(dtype: Dtype, wanted: Option<ElementType>) -> Result<ElementType> {
    let natural = element_type_of(dtype);
    Ok(match wanted {
        Some(ElementType::BF16) if matches!(dtype, Dtype::U16 | Dtype::V2) => ElementType::BF16,
        Some(w) if w != natural => {
            return Err(Error::invalid(format!(
                "the array is {dtype} ({natural}), but the parameter is {w}{}",
                if w == ElementType::BF16 { " (give bf16 as raw 2-byte bits: `<u2` or `<V2`)" } else { "" }
            )))
        }
        _ => natural,
    })
}

/// Uploads a memory-mapped `.npy` file (see [`upload_npy`] for `wanted`). The plugin reads the
/// mapping directly: C-order files as they are, Fortran-order files through byte strides. Only
/// big-endian files are converted into a copy first.
pub fn upload_mapped_npy(
    client: &Client,
    file: &MappedNpy,
    wanted: Option<ElementType>,
    placement: Placement<'_>,
) -> Result<Buffer> {
    let element_type = upload_type(file.dtype(), wanted)?;
    let dims: Vec<i64> = file.shape().iter().map(|d| *d as i64).collect();
    if file.is_c_order_little_endian() {
        return client.buffer_from_bytes(file.bytes(), element_type, &dims, &HostLayout::default(), placement);
    }
    if file.endian() == Endian::Big {
        let array = file.to_array();
        return client.buffer_from_bytes(&array.data, element_type, &dims, &HostLayout::default(), placement);
    }
    // Fortran order: axis 0 varies fastest.
    let mut strides = Vec::with_capacity(dims.len());
    let mut stride = file.dtype().size() as i64;
    for &d in &dims {
        strides.push(stride);
        stride = stride.saturating_mul(d.max(1));
    }
    let layout = HostLayout { byte_strides: Some(strides), ..Default::default() };
    client.buffer_from_bytes(file.bytes(), element_type, &dims, &layout, placement)
}

/// Downloads a buffer as a `.npy` array (bf16 as `<u2` bits).
pub fn download_npy(buffer: &Buffer) -> Result<NpyArray> {
    let element_type = buffer.element_type()?;
    let dtype = dtype_of(element_type)
        .ok_or_else(|| Error::invalid(format!("{element_type} outputs cannot be written as .npy")))?;
    let shape: Vec<usize> = buffer.dimensions()?.iter().map(|d| *d as usize).collect();
    let data = buffer.to_host_bytes()?;
    Ok(NpyArray::new(dtype, shape, data)?)
}

/// Splits an array into `parts` equal slices along `axis`.
pub fn split(array: &NpyArray, axis: usize, parts: usize) -> Result<Vec<NpyArray>> {
    let rank = array.shape.len();
    if axis >= rank {
        return Err(Error::invalid(format!("cannot split a rank-{rank} array along axis {axis}")));
    }
    if parts == 0 || array.shape[axis] % parts != 0 {
        return Err(Error::invalid(format!(
            "axis {axis} has size {}, which does not split into {parts} equal parts",
            array.shape[axis]
        )));
    }
    let outer: usize = array.shape[..axis].iter().product();
    let inner: usize = array.shape[axis + 1..].iter().product::<usize>() * array.dtype.size();
    let step = array.shape[axis] / parts;
    let mut out = Vec::with_capacity(parts);
    for p in 0..parts {
        let mut data = Vec::with_capacity(outer * step * inner);
        for o in 0..outer {
            let start = (o * array.shape[axis] + p * step) * inner;
            data.extend_from_slice(&array.data[start..start + step * inner]);
        }
        let mut shape = array.shape.clone();
        shape[axis] = step;
        out.push(NpyArray::new(array.dtype, shape, data)?);
    }
    Ok(out)
}

/// Concatenates arrays of equal dtype and shape (except along `axis`).
pub fn concatenate(parts: &[NpyArray], axis: usize) -> Result<NpyArray> {
    let first = parts.first().ok_or_else(|| Error::invalid("nothing to concatenate"))?;
    let rank = first.shape.len();
    if axis >= rank {
        return Err(Error::invalid(format!("cannot concatenate rank-{rank} arrays along axis {axis}")));
    }
    for p in parts {
        let same_other_dims = p.shape.len() == rank && (0..rank).all(|i| i == axis || p.shape[i] == first.shape[i]);
        if p.dtype != first.dtype || !same_other_dims {
            return Err(Error::invalid("arrays to concatenate must have the same dtype and the same other dimensions"));
        }
    }
    let outer: usize = first.shape[..axis].iter().product();
    let inner: usize = first.shape[axis + 1..].iter().product::<usize>() * first.dtype.size();
    let mut data = Vec::new();
    for o in 0..outer {
        for p in parts {
            let chunk = p.shape[axis] * inner;
            data.extend_from_slice(&p.data[o * chunk..(o + 1) * chunk]);
        }
    }
    let mut shape = first.shape.clone();
    shape[axis] = parts.iter().map(|p| p.shape[axis]).sum();
    Ok(NpyArray::new(first.dtype, shape, data)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_concatenate_round_trip() {
        let a = NpyArray::from_elements(vec![4, 3], &(0..12).collect::<Vec<i32>>()).unwrap();
        for axis in 0..2 {
            let parts = if axis == 0 { 2 } else { 3 };
            let pieces = split(&a, axis, parts).unwrap();
            assert_eq!(concatenate(&pieces, axis).unwrap(), a);
        }
        let rows = split(&a, 0, 2).unwrap();
        assert_eq!(rows[1].to_vec::<i32>().unwrap(), vec![6, 7, 8, 9, 10, 11]);
        let cols = split(&a, 1, 3).unwrap();
        assert_eq!(cols[2].to_vec::<i32>().unwrap(), vec![2, 5, 8, 11]);
        assert!(split(&a, 0, 3).is_err());
        assert!(split(&a, 2, 1).is_err());
    }
}
