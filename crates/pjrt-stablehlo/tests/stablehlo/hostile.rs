//! Damaged files give errors, never panics: every test file truncated at many lengths and with
//! bits flipped at many places. (A reader that panicked, overflowed its stack or looped would
//! fail or hang this test.)

use crate::files;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn check(name: &str, what: &str, bytes: &[u8]) {
    let r = std::panic::catch_unwind(|| {
        if let Ok(m) = pjrt_stablehlo::read_bytecode(bytes) {
            // Whatever reads also prints.
            let _ = pjrt_stablehlo::print(&m);
        }
    });
    assert!(r.is_ok(), "{name}: {what} panicked");
}

#[test]
fn truncated_and_bit_flipped_files_give_errors() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut cases = 0;
    for path in files::all() {
        let name = path.display().to_string();
        let bc = files::bytecode(&path);
        // Every truncation of short files, 400 spread over long ones.
        let step = (bc.len() / 400).max(1);
        for len in (0..bc.len()).step_by(step) {
            let r = pjrt_stablehlo::read_bytecode(&bc[..len]);
            assert!(r.is_err(), "{name}: truncated to {len} bytes read without an error");
            let e = r.unwrap_err();
            assert!(e.offset() <= len, "{name}: error offset {} past the {len} bytes", e.offset());
            cases += 1;
        }
        // 300 single-bit flips and 100 random byte overwrites.
        for i in 0..400 {
            let mut damaged = bc.clone();
            let at = (rng.next() % bc.len() as u64) as usize;
            if i < 300 {
                damaged[at] ^= 1 << (rng.next() % 8);
            } else {
                damaged[at] = rng.next() as u8;
            }
            check(&name, &format!("damage #{i} at byte {at}"), &damaged);
            cases += 1;
        }
    }
    assert!(cases > 10_000, "{cases}");
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let bc = files::bytecode(&files::repo().join("tests/data/jax_export/jax-0.10.2/while_loop/model.jaxexport"));
    let limits = pjrt_stablehlo::Limits { max_region_depth: 2, ..Default::default() };
    let e = pjrt_stablehlo::read_bytecode_with(&bc, &limits).unwrap_err();
    assert!(matches!(e, pjrt_stablehlo::Error::Limit { .. }), "{e}");
    let limits = pjrt_stablehlo::Limits { max_attr_depth: 1, ..Default::default() };
    let e = pjrt_stablehlo::read_bytecode_with(&bc, &limits).unwrap_err();
    assert!(matches!(e, pjrt_stablehlo::Error::Limit { .. }), "{e}");
}

#[test]
fn not_bytecode_and_newer_versions_are_typed_errors() {
    let e = pjrt_stablehlo::read_bytecode(b"MLIR text").unwrap_err();
    assert!(matches!(e, pjrt_stablehlo::Error::Malformed { offset: 0, .. }), "{e}");
    let e = pjrt_stablehlo::read_bytecode(b"ML\xefR\x0fproducer\0").unwrap_err();
    assert!(matches!(e, pjrt_stablehlo::Error::Unsupported { offset: 4, .. }), "{e}");
}
