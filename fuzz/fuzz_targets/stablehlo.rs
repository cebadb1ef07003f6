//! StableHLO portable-artifact reader (pjrt-stablehlo): any bytes either give an error whose
//! offset is inside the input, or read to a module that prints.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match pjrt_stablehlo::read_bytecode(data) {
        Ok(module) => {
            let text = pjrt_stablehlo::print(&module);
            assert!(module.ops.is_empty() || !text.is_empty());
        }
        Err(e) => assert!(e.offset() <= data.len(), "error offset {} past {} bytes", e.offset(), data.len()),
    }
});
