//! StableHLO text parser (pjrt-stablehlo): any text either gives an error whose offset is
//! inside it, or parses to a module whose print parses back to it.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| pjrt_stablehlo::fuzz_check_text(data));
