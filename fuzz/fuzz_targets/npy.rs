//! `.npy` reader and writer: any bytes either fail to parse with an error, or parse to a
//! consistent array that the writer turns into a file that parses back to the same array.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pjrt_formats::npy::NpyArray;

fuzz_target!(|data: &[u8]| {
    let Ok(array) = NpyArray::from_bytes(data) else { return };
    array.validate().expect("a parsed array is consistent");
    assert!(array.element_count() <= array.data.len().max(1), "more elements than bytes");

    let written = array.to_bytes();
    let header = array.header_bytes();
    assert_eq!(header.len() % 64, 0, "data must start at a multiple of 64 bytes");
    assert_eq!(&written[..header.len()], &header[..]);
    let mut streamed = Vec::new();
    array.write_to(&mut streamed).expect("writing to a Vec cannot fail");
    assert_eq!(streamed, written, "write_to and to_bytes differ");

    let back = NpyArray::from_bytes(&written).expect("what to_bytes writes must parse");
    assert_eq!(back, array, "round trip changed the array");
    // What we write is canonical: writing again gives the same bytes.
    assert_eq!(back.to_bytes(), written);
});
