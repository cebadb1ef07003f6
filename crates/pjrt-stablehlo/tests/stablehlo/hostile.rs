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
        // 200 truncations spread over each file (every one of files under 200 bytes).
        let step = (bc.len() / 200).max(1);
        for len in (0..bc.len()).step_by(step) {
            let r = pjrt_stablehlo::read_bytecode(&bc[..len]);
            assert!(r.is_err(), "{name}: truncated to {len} bytes read without an error");
            let e = r.unwrap_err();
            assert!(e.offset() <= len, "{name}: error offset {} past the {len} bytes", e.offset());
            cases += 1;
        }
        // 200 single-bit flips and 100 random byte overwrites.
        for i in 0..300 {
            let mut damaged = bc.clone();
            let at = (rng.next() % bc.len() as u64) as usize;
            if i < 200 {
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

/// A PrefixVarInt.
fn varint(out: &mut Vec<u8>, v: u64) {
    for n in 1..=8u32 {
        if v < 1 << (7 * n) {
            let enc = (v << n) | (1 << (n - 1));
            out.extend_from_slice(&enc.to_le_bytes()[..n as usize]);
            return;
        }
    }
    out.push(0);
    out.extend_from_slice(&v.to_le_bytes());
}

fn section(out: &mut Vec<u8>, id: u8, data: &[u8]) {
    out.push(id);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// Bytecode of one unregistered `builtin.module` op nesting `regions` regions (one op each),
/// the innermost op carrying `{a = [[[...]]]}`, arrays `arrays` deep.
fn nested(regions: usize, arrays: usize) -> Vec<u8> {
    nested_shared(regions, arrays, 1)
}

/// [`nested`] with each array holding the next `fanout` times (one entry, shared).
fn nested_shared(regions: usize, arrays: usize, fanout: u64) -> Vec<u8> {
    let mut out = b"ML\xefR".to_vec();
    varint(&mut out, 6);
    out.extend_from_slice(b"test\0");
    let strings: [&[u8]; 3] = [b"builtin", b"module", b"a"];
    let mut s = Vec::new();
    varint(&mut s, strings.len() as u64);
    for st in strings.iter().rev() {
        varint(&mut s, st.len() as u64 + 1);
    }
    for st in strings {
        s.extend_from_slice(st);
        s.push(0);
    }
    section(&mut out, 0, &s);
    let mut d = Vec::new();
    varint(&mut d, 1);
    varint(&mut d, 0); // builtin, no version
    varint(&mut d, 1); // one op name
    varint(&mut d, 0);
    varint(&mut d, 1);
    varint(&mut d, 1 << 1); // "module", not registered
    section(&mut out, 1, &d);
    // Attributes: 0 unknown loc, 1 "a", 2.. arrays (each holding the next; the last empty),
    // then the dictionary.
    let mut entries: Vec<Vec<u8>> = Vec::new();
    let mut e = Vec::new();
    varint(&mut e, 15);
    entries.push(e);
    let mut e = Vec::new();
    varint(&mut e, 2);
    varint(&mut e, 2);
    entries.push(e);
    for k in 0..arrays {
        let mut e = Vec::new();
        varint(&mut e, 0);
        if k + 1 < arrays {
            varint(&mut e, fanout);
            for _ in 0..fanout {
                varint(&mut e, (k + 3) as u64);
            }
        } else {
            varint(&mut e, 0);
        }
        entries.push(e);
    }
    let dict = entries.len() as u64;
    let mut e = Vec::new();
    varint(&mut e, 1);
    varint(&mut e, 1);
    varint(&mut e, 1);
    varint(&mut e, 2);
    entries.push(e);
    let mut offsets = Vec::new();
    varint(&mut offsets, entries.len() as u64);
    varint(&mut offsets, 0);
    varint(&mut offsets, 0);
    varint(&mut offsets, entries.len() as u64);
    for e in &entries {
        varint(&mut offsets, ((e.len() as u64) << 1) | 1);
    }
    section(&mut out, 2, &entries.concat());
    section(&mut out, 3, &offsets);
    let mut ir = Vec::new();
    varint(&mut ir, 1 << 1);
    for _ in 0..regions {
        varint(&mut ir, 0);
        ir.push(0x10);
        varint(&mut ir, 0);
        varint(&mut ir, 1 << 1); // one region, not isolated
        varint(&mut ir, 1); // one block
        varint(&mut ir, 0); // no values
        varint(&mut ir, 1 << 1); // one op, no arguments
    }
    varint(&mut ir, 0);
    ir.push(0x01);
    varint(&mut ir, 0);
    varint(&mut ir, dict);
    section(&mut out, 4, &ir);
    out
}

/// At the default limits the deepest accepted nesting (regions and attributes at once) fits a
/// test thread's 2 MiB stack in a debug build; one level more is a typed error.
#[test]
fn deepest_accepted_nesting_fits_the_stack() {
    let limits = pjrt_stablehlo::Limits::default();
    let m = pjrt_stablehlo::read_bytecode(&nested(limits.max_region_depth - 1, limits.max_attr_depth - 2)).unwrap();
    let text = pjrt_stablehlo::print(&m);
    assert!(text.contains("{a = [[[[") && text.contains("[[[[[]]]]]"), "{}", &text[text.len().saturating_sub(300)..]);
    for (regions, arrays) in
        [(limits.max_region_depth + 1, 1), (1, limits.max_attr_depth + 1), (100_000, 1), (1, 100_000)]
    {
        let e = pjrt_stablehlo::read_bytecode(&nested(regions, arrays)).unwrap_err();
        assert!(matches!(e, pjrt_stablehlo::Error::Limit { .. }), "{regions} regions, {arrays} arrays: {e}");
    }
}

/// Shared entries cannot blow up: 60 arrays each holding the next twice (a few hundred bytes
/// describing 2^60 nodes) are refused by the node limit, quickly.
#[test]
fn shared_entries_do_not_expand_exponentially() {
    let e = pjrt_stablehlo::read_bytecode(&nested_shared(1, 60, 2)).unwrap_err();
    assert!(matches!(e, pjrt_stablehlo::Error::Limit { .. }), "{e}");
    assert!(e.to_string().contains("max_attr_nodes"), "{e}");
    // Sharing within the limit reads: 2^10 leaves.
    let m = pjrt_stablehlo::read_bytecode(&nested_shared(1, 11, 2)).unwrap();
    assert_eq!(pjrt_stablehlo::print(&m).matches("[]").count(), 1 << 10);
}
