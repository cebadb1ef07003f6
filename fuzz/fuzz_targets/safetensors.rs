//! Safetensors reader and writer: any bytes either fail to parse with an error, or parse to
//! tensors that exactly cover the data section, and that our writer turns into a file that
//! parses back to the same tensors and metadata.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pjrt_formats::safetensors::{self, SafeTensors, TensorView};

fuzz_target!(|data: &[u8]| {
    let Ok(file) = SafeTensors::from_bytes(data.to_vec()) else { return };
    let mut total = 0u64;
    for (_, view) in file.tensors() {
        assert_eq!(Some(view.bytes().len()), view.dtype().packed_bytes(view.element_count()), "bytes match dtype*shape");
        total += view.bytes().len() as u64;
    }
    assert_eq!(total, file.data_bytes(), "the tensors cover the data exactly");

    let tensors: Vec<(&str, TensorView<'_>)> = file.tensors().collect();
    let metadata: Vec<(&str, &str)> = file.metadata().iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let written = safetensors::to_bytes(&tensors, &metadata).expect("a parsed file can be written");
    let back = SafeTensors::from_bytes(written).expect("what the writer writes must parse");
    assert_eq!(back.tensors().collect::<Vec<_>>(), tensors, "round trip changed the tensors");
    assert_eq!(back.metadata(), file.metadata());
});
