//! StableHLO portable-artifact reader (pjrt-stablehlo): any bytes either give an error whose
//! offset is inside the input, or read to a module that prints.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pjrt_stablehlo::fuzz_check(data));
