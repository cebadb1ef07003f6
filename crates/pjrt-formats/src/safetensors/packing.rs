//! Tensor byte sizes, and sub-byte types packed as safetensors stores them (two F4 per byte).

use pjrt_client::ElementType;

use super::SafetensorsError;

/// Byte size of a tensor in the file (sub-byte types packed), `None` on overflow; whether its
/// elements fill whole bytes (the format refuses those that do not).
pub(super) fn byte_size(element_type: ElementType, dims: &[i64]) -> Option<(usize, bool)> {
    let count = checked_count(dims)?;
    let bits = count.checked_mul(element_type.bits()?)?;
    let bytes = element_type.packed_bytes(count).filter(|b| *b <= isize::MAX as usize)?;
    Some((bytes, bits % 8 == 0))
}

/// The number of elements of these dimensions, `None` if one is negative or the product overflows.
pub(super) fn checked_count(dims: &[i64]) -> Option<usize> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
}

/// The bit stream order of packed sub-byte values: element `i` takes bits `[i*b, (i+1)*b)`,
/// counted from the least significant bit of byte 0. For F4 that is element 0 in the low
/// nibble of byte 0, element 1 in its high nibble: the layout of PyTorch's
/// `float4_e2m1fn_x2` ("val1 : val0" in bits 7654 : 3210, torch/headeronly/util/
/// Float4_e2m1fn_x2.h), whose storage bytes safetensors writes as its `F4` data
/// (bindings/python/src/lib.rs of huggingface/safetensors: two F4 values per byte).
fn bit_position(index: usize, bits: usize) -> (usize, usize) {
    let bit = index * bits;
    (bit / 8, bit % 8)
}

/// Packs values of a sub-byte type held one per byte (the host form PJRT and ml_dtypes use:
/// the value in the low bits, signed ones possibly sign-extended) into the packed form
/// safetensors stores, element 0 in the low bits of byte 0 (see the module docs). The last
/// byte is padded with zero bits when the values do not fill it. Whole-byte types come back
/// as they are. A byte that holds no value of the type is an error: nothing is truncated.
///
/// ```
/// use pjrt_formats::safetensors::{pack_sub_byte, unpack_sub_byte};
/// use pjrt_client::ElementType;
/// // float4_e2m1fn codes 1.0 (2), 6.0 (7), -0.5 (9): low nibble first, the last one padded.
/// let packed = pack_sub_byte(ElementType::F4E2M1FN, &[2, 7, 9])?;
/// assert_eq!(packed, [0x72, 0x09]);
/// assert_eq!(unpack_sub_byte(ElementType::F4E2M1FN, &packed, 3)?, [2, 7, 9]);
/// assert!(pack_sub_byte(ElementType::F4E2M1FN, &[16]).is_err());
/// # Ok::<(), pjrt_formats::safetensors::SafetensorsError>(())
/// ```
pub fn pack_sub_byte(element_type: ElementType, host: &[u8]) -> Result<Vec<u8>, SafetensorsError> {
    let Some(bits) = element_type.bits().filter(|_| element_type.is_sub_byte()) else { return Ok(host.to_vec()) };
    element_type.check_host_values(host).map_err(|e| SafetensorsError::Conversion(e.to_string()))?;
    let size = element_type
        .packed_bytes(host.len())
        .ok_or_else(|| SafetensorsError::Conversion(format!("{} {element_type} values are too many", host.len())))?;
    let mask = (1u16 << bits) - 1;
    let mut out = vec![0u8; size];
    for (i, &value) in host.iter().enumerate() {
        let (byte, shift) = bit_position(i, bits);
        // A value may straddle two bytes (6-bit types): its high bits go to the next one.
        let wide = (u16::from(value) & mask) << shift;
        out[byte] |= wide as u8;
        if wide > 0xff {
            out[byte + 1] |= (wide >> 8) as u8;
        }
    }
    Ok(out)
}

/// Unpacks `count` elements of a sub-byte type from the packed form safetensors stores into
/// one element per byte, the value in the low bits (what PJRT uploads take; the inverse of
/// [`pack_sub_byte`]). `packed` must be exactly `ceil(count * bits / 8)` bytes. Whole-byte
/// types come back as they are.
pub fn unpack_sub_byte(element_type: ElementType, packed: &[u8], count: usize) -> Result<Vec<u8>, SafetensorsError> {
    let Some(bits) = element_type.bits().filter(|_| element_type.is_sub_byte()) else { return Ok(packed.to_vec()) };
    let size = element_type.packed_bytes(count);
    if size != Some(packed.len()) {
        return Err(SafetensorsError::Conversion(format!(
            "{count} packed {element_type} elements take {} bytes, not {}",
            size.map_or_else(|| "too many".to_string(), |s| s.to_string()),
            packed.len()
        )));
    }
    let mask = (1u16 << bits) - 1;
    Ok((0..count)
        .map(|i| {
            let (byte, shift) = bit_position(i, bits);
            let low = u16::from(packed[byte]);
            let high = packed.get(byte + 1).map_or(0, |b| u16::from(*b) << 8);
            (((low | high) >> shift) & mask) as u8
        })
        .collect())
}
