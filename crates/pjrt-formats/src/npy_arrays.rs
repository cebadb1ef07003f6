//! `.npy` arrays and the client's types: which element type a dtype uploads as, conversions to
//! and from [`HostArray`], and the uploads and downloads behind [`crate::ClientExt`] and
//! [`crate::BufferExt`].

use pjrt_client::{Buffer, Client, ElementType, HostArray, HostSource, Placement, UploadOptions};

use crate::error::{Error, Result};
use crate::npy::{dtype_of, element_type_of, Dtype, Endian, MappedNpy, NpyArray};

/// The element type an array of `dtype` uploads as for a parameter of type `wanted` (the rules
/// of [`crate::ClientExt::upload_npy`]; the values of a widened sub-byte array are checked at upload).
///
/// ```
/// use pjrt_formats::upload_element_type;
/// use pjrt_formats::npy::Dtype;
/// use pjrt_client::ElementType;
/// assert_eq!(upload_element_type(Dtype::I8, Some(ElementType::S4))?, ElementType::S4);
/// assert_eq!(upload_element_type(Dtype::V2, None)?, ElementType::BF16);
/// assert!(upload_element_type(Dtype::F32, Some(ElementType::S4)).is_err());
/// # Ok::<(), pjrt_formats::Error>(())
/// ```
pub fn upload_element_type(dtype: Dtype, wanted: Option<ElementType>) -> Result<ElementType> {
    let natural = element_type_of(dtype);
    Ok(match wanted {
        Some(ElementType::BF16) if matches!(dtype, Dtype::U16 | Dtype::V2) => ElementType::BF16,
        Some(w) if w.is_sub_byte() && matches!(dtype, Dtype::I8 | Dtype::U8 | Dtype::V1) => w,
        Some(w) if w != natural => {
            let hint = if w == ElementType::BF16 {
                " (give bf16 as raw 2-byte bits: `<u2` or `<V2`)"
            } else if w.is_sub_byte() {
                " (give a sub-byte type as int8 or uint8 values, one per element, or ml_dtypes' `|V1`)"
            } else {
                ""
            };
            return Err(Error::invalid(format!("the array is {dtype} ({natural}), but the parameter is {w}{hint}")));
        }
        _ => natural,
    })
}

/// The values an element of a sub-byte type can take, as integers (F4/F6: their bit codes).
fn sub_byte_range(element_type: ElementType) -> Option<(i16, i16)> {
    let bits = element_type.bits().filter(|_| element_type.is_sub_byte())? as u32;
    Some(match element_type {
        ElementType::S4 | ElementType::S2 | ElementType::S1 => (-(1 << (bits - 1)), (1 << (bits - 1)) - 1),
        _ => (0, (1 << bits) - 1),
    })
}

/// The element type `bytes` of `dtype` upload as for a parameter of type `wanted`
/// ([`upload_element_type`]), after checking that widened sub-byte values fit
/// ([`check_narrowed`]): the rules of every `.npy` upload.
fn checked_element_type(dtype: Dtype, bytes: &[u8], wanted: Option<ElementType>) -> Result<ElementType> {
    let element_type = upload_element_type(dtype, wanted)?;
    check_narrowed(dtype, element_type, bytes)?;
    Ok(element_type)
}

/// Checks that the bytes of a `dtype` array hold values of the sub-byte type `element_type`
/// (nothing to check for other types): `int8` and `uint8` by their numeric value (so int8 8 is
/// refused for S4 rather than read as its low bits, -8), `V1` as ml_dtypes stores it.
fn check_narrowed(dtype: Dtype, element_type: ElementType, bytes: &[u8]) -> Result<()> {
    let Some((low, high)) = sub_byte_range(element_type) else { return Ok(()) };
    let value = |b: u8| match dtype {
        Dtype::I8 => i16::from(b as i8),
        _ => i16::from(b),
    };
    match dtype {
        Dtype::V1 => Ok(element_type.check_host_values(bytes).map_err(pjrt_client::Error::from)?),
        Dtype::I8 | Dtype::U8 => match bytes.iter().position(|b| !(low..=high).contains(&value(*b))) {
            None => Ok(()),
            Some(i) => Err(Error::invalid(format!(
                "element {i} of the {dtype} array is {}, which is not a {element_type} value ({low}..={high}{})",
                value(bytes[i]),
                if element_type.is_integral() { "" } else { ", as bit codes" }
            ))),
        },
        _ => Ok(()),
    }
}

/// Uploads a `.npy` file held as stored (see [`crate::ClientExt::upload_npy`] for `wanted`). The plugin reads
/// its bytes directly: C-order files as they are, Fortran-order files through byte strides. Only
/// big-endian files, and Fortran-order files for a sub-byte parameter, are converted into a
/// copy first.
pub(crate) fn upload_mapped_npy(
    client: &Client,
    file: &MappedNpy,
    wanted: Option<ElementType>,
    placement: Placement<'_>,
) -> Result<Buffer> {
    // Every element's byte is in the file's bytes, in whatever order: the check needs no copy.
    let element_type = checked_element_type(file.dtype(), file.bytes(), wanted)?;
    let dims = file.dims();
    if file.is_c_order_little_endian() {
        // From the file's bytes without waiting for a copy: in place where aligned, else copied
        // by the plugin's threads; the buffer keeps those bytes as long as it needs them.
        return Ok(client.upload_with(
            HostSource::shared(file.shared_bytes(), element_type, dims),
            &UploadOptions::new().placement(placement),
        )?);
    }
    // Big-endian files, and Fortran-order ones of sub-byte types (which take no byte strides),
    // upload from a C-order little-endian copy.
    if file.endian() == Endian::Big || element_type.is_sub_byte() {
        let array = file.to_array();
        return Ok(client.upload_with(
            HostSource::bytes(&array.data, element_type, dims),
            &UploadOptions::new().placement(placement),
        )?);
    }
    // Fortran order: axis 0 varies fastest.
    let mut strides = Vec::with_capacity(dims.len());
    let mut stride = file.dtype().size() as i64;
    for &d in dims {
        strides.push(stride);
        stride = stride.saturating_mul(d.max(1));
    }
    let options = UploadOptions::new().placement(placement).byte_strides(strides);
    Ok(client.upload_with(HostSource::bytes(file.bytes(), element_type, dims), &options)?)
}

impl NpyArray {
    /// The [`HostArray`] this array uploads as: the `.npy` data as a PJRT element type. `wanted`
    /// is the parameter's element type when known; an array of another dtype is an error, except:
    ///
    /// - bf16: a `<u2` or `<V2` array (raw bits);
    /// - a sub-byte type (S4, U4, S2, U2, S1, U1, F4E2M1FN, F6*): an `int8` or `uint8` array of
    ///   values in the type's range (the form [`crate::BufferExt::to_npy`] writes; F4/F6 as their
    ///   bit codes), or a `|V1` array as ml_dtypes saves it (the value in the low bits, negative ones also
    ///   sign-extended). A value out of range is an error naming the element, never truncated.
    ///
    /// ```
    /// use pjrt_formats::npy::NpyArray;
    /// use pjrt_formats::{BufferExt, ClientExt};
    /// use pjrt_client::{ElementType, Placement};
    /// # let plugin = pjrt_client::Plugin::load(pjrt_plugins::resolve_or_install(None, |_| ())?.load_path())?;
    /// # let client = pjrt_client::Client::new(&plugin, &pjrt_client::ClientOptions::new())?;
    /// let values = NpyArray::from_elements(vec![3], &[-8i8, -1, 7])?;
    /// let s4 = client.upload_npy(&values, Some(ElementType::S4), Placement::Default)?;
    /// assert_eq!(s4.element_type()?, ElementType::S4);
    /// assert_eq!(s4.to_npy()?, values); // widened back to int8
    /// let too_big = NpyArray::from_elements(vec![1], &[8i8])?;
    /// assert!(client.upload_npy(&too_big, Some(ElementType::S4), Placement::Default).is_err());
    /// # Ok::<(), pjrt_formats::Error>(())
    /// ```
    pub fn to_host_array(&self, wanted: Option<ElementType>) -> Result<HostArray> {
        let element_type = checked_element_type(self.dtype, &self.data, wanted)?;
        Ok(HostArray::new(element_type, self.dims.clone(), self.data.clone())?)
    }

    /// The `.npy` array of a [`HostArray`]: bf16 as `<u2` bits, sub-byte types widened to `int8`
    /// or `uint8` as [`dtype_of`] says (S4 -1 is int8 -1, not its low bits `0x0f`). Types with
    /// no `.npy` dtype here (the 8-bit floats) are an error.
    pub fn from_host_array(array: &HostArray) -> Result<NpyArray> {
        let element_type = array.element_type();
        let dtype = dtype_of(element_type)
            .ok_or_else(|| Error::invalid(format!("{element_type} outputs cannot be written as .npy")))?;
        let mut data = array.data().to_vec();
        element_type.sign_extend_host_values(&mut data);
        Ok(NpyArray::new(dtype, array.dims().to_vec(), data)?)
    }
}

/// Uploads a `.npy` array (see [`NpyArray::to_host_array`] for `wanted`).
pub(crate) fn upload_npy(
    client: &Client,
    array: &NpyArray,
    wanted: Option<ElementType>,
    placement: Placement<'_>,
) -> Result<Buffer> {
    let element_type = checked_element_type(array.dtype, &array.data, wanted)?;
    Ok(client.upload_with(
        HostSource::bytes(&array.data, element_type, &array.dims),
        &UploadOptions::new().placement(placement),
    )?)
}

/// Downloads a buffer as a `.npy` array (see [`NpyArray::from_host_array`]).
pub(crate) fn download_npy(buffer: &Buffer) -> Result<NpyArray> {
    NpyArray::from_host_array(&buffer.to_host_array()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_byte_types_take_widened_arrays() {
        use ElementType as T;
        for t in [T::S4, T::U4, T::S2, T::U2, T::S1, T::U1, T::F4E2M1FN, T::F6E2M3FN, T::F6E3M2FN] {
            for d in [Dtype::I8, Dtype::U8, Dtype::V1] {
                assert_eq!(upload_element_type(d, Some(t)).unwrap(), t, "{d} for {t}");
            }
            let widened = dtype_of(t).unwrap();
            assert_eq!(widened, if matches!(t, T::S4 | T::S2 | T::S1) { Dtype::I8 } else { Dtype::U8 });
            let err = upload_element_type(Dtype::I16, Some(t)).unwrap_err().to_string();
            assert!(err.contains("int8 or uint8"), "{err}");
        }
        // No parameter type: the array's own type, V1 as raw bytes.
        assert_eq!(upload_element_type(Dtype::V1, None).unwrap(), T::U8);
        assert_eq!(upload_element_type(Dtype::I8, None).unwrap(), T::S8);
        assert!(upload_element_type(Dtype::V1, Some(T::S8)).is_err());
    }

    #[test]
    fn widened_values_are_checked_by_value() {
        use ElementType as T;
        let bytes = |v: &[i8]| v.iter().map(|v| *v as u8).collect::<Vec<u8>>();
        assert_eq!(sub_byte_range(T::S4), Some((-8, 7)));
        assert_eq!(sub_byte_range(T::U2), Some((0, 3)));
        assert_eq!(sub_byte_range(T::S1), Some((-1, 0)));
        assert_eq!(sub_byte_range(T::F6E3M2FN), Some((0, 63)));
        assert_eq!(sub_byte_range(T::S8), None);
        assert!(check_narrowed(Dtype::I8, T::S4, &bytes(&[-8, -1, 0, 7])).is_ok());
        // int8 8 is not an int4 value, even though its low bits (-8) are.
        let err = check_narrowed(Dtype::I8, T::S4, &bytes(&[0, 8])).unwrap_err().to_string();
        assert!(err.contains("element 1") && err.contains("is 8") && err.contains("-8..=7"), "{err}");
        assert!(check_narrowed(Dtype::U8, T::S4, &[7]).is_ok());
        assert!(check_narrowed(Dtype::U8, T::S4, &[15]).is_err());
        assert!(check_narrowed(Dtype::U8, T::U4, &[0, 15]).is_ok());
        let err = check_narrowed(Dtype::U8, T::U4, &[3, 16]).unwrap_err().to_string();
        assert!(err.contains("element 1") && err.contains("16") && err.contains("0..=15"), "{err}");
        assert!(check_narrowed(Dtype::I8, T::U4, &bytes(&[-1])).is_err());
        assert!(check_narrowed(Dtype::U8, T::F4E2M1FN, &[15]).is_ok());
        assert!(check_narrowed(Dtype::U8, T::F4E2M1FN, &[16]).unwrap_err().to_string().contains("bit codes"));
        assert!(check_narrowed(Dtype::U8, T::U1, &[2]).is_err());
        // V1 is ml_dtypes' storage: low bits, or negative values sign-extended.
        assert!(check_narrowed(Dtype::V1, T::S4, &[0x0f, 0xff, 0x08]).is_ok());
        assert!(check_narrowed(Dtype::V1, T::S4, &[0x10]).is_err());
        // Whole-byte types take any byte.
        assert!(check_narrowed(Dtype::U8, T::U8, &[255]).is_ok());
    }
}
