//! Regression tests for the soundness findings (no undefined behaviour, no abort and no silent
//! data loss from the safe API), on the real CPU plugins wherever a case reaches them.
//!
//! `tools/memcheck.sh` runs this binary under valgrind on the 0.115 plugin: the over-read and
//! lifetime cases here must also be free of invalid reads and writes.

mod support;

use std::sync::Arc;

use pjrt_client::{
    AlignedHostBuffer, CompileOptions, ElementType, Error, HostBufferSemantics, HostLayout, Placement, Program,
};

fn upload(
    client: &pjrt_client::Client,
    data: &[u8],
    t: ElementType,
    dims: &[i64],
) -> pjrt_client::Result<pjrt_client::Buffer> {
    client.buffer_from_bytes(data, t, dims, &HostLayout::default(), Placement::Default)
}

/// Sub-byte types are one element per byte on the host: S4[5] takes 5 bytes (not the 3 a packed
/// buffer has, which the plugin would read past) and comes back with exactly its values.
#[test]
fn odd_counts_of_sub_byte_types_round_trip_exactly() {
    let cases: [(ElementType, Vec<i8>); 4] = [
        (ElementType::S4, vec![-8, -1, 0, 5, 7]),
        (ElementType::U4, vec![0, 1, 9, 15, 3]),
        (ElementType::S2, vec![-2, -1, 1]),
        (ElementType::U2, vec![3, 0, 2, 1, 3, 3, 1]),
    ];
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        for (t, values) in &cases {
            let bytes: Vec<u8> = values.iter().map(|v| *v as u8).collect();
            let dims = [values.len() as i64];
            let buffer = upload(&client, &bytes, *t, &dims).unwrap_or_else(|e| panic!("{name}: {t}: {e}"));
            assert_eq!(buffer.host_size().unwrap(), values.len(), "{name}: {t}: one byte per element");
            let mut back = buffer.to_host_bytes().unwrap();
            t.sign_extend_host_values(&mut back);
            let back: Vec<i8> = back.iter().map(|b| *b as i8).collect();
            assert_eq!(&back, values, "{name}: {t}");
            // The packed size is refused before the plugin could read past it.
            let packed = t.packed_bytes(values.len()).unwrap();
            let short = upload(&client, &bytes[..packed], *t, &dims);
            assert!(
                matches!(&short, Err(Error::InvalidArgument(m)) if m.contains("one byte per element")),
                "{name}: {t}: {short:?}"
            );
            // A byte with bits the type does not have is refused, not silently truncated.
            let mut bad = bytes.clone();
            bad[0] = 0x40;
            assert!(matches!(upload(&client, &bad, *t, &dims), Err(Error::InvalidArgument(_))), "{name}: {t}");
        }
    }
}

/// A PRED buffer holds whatever bytes it was given (the plugins pass them through); reading it as
/// `bool` maps them as numpy does (nonzero is true), so no `bool` ever holds another byte.
#[test]
fn pred_bytes_other_than_0_and_1_read_as_valid_bools() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let buffer = upload(&client, &[2, 1, 0, 255], ElementType::PRED, &[4]).unwrap();
        // The plugin keeps the bytes as they are...
        assert_eq!(buffer.to_host_bytes().unwrap(), [2, 1, 0, 255], "{name}");
        // ...and every way of reading them as bool gives valid bools.
        let values = buffer.to_vec::<bool>().unwrap();
        assert_eq!(values, [true, true, false, true], "{name}");
        let mut slice = [false; 4];
        buffer.copy_to_slice(&mut slice).unwrap();
        assert_eq!(slice, [true, true, false, true], "{name}");
        // The bytes behind the bools are 0 or 1 (a bool holding 2 would be undefined behaviour).
        for b in values.iter().chain(&slice) {
            // SAFETY: reading the byte behind a live bool (a pointer read, not a conversion,
            // which would assume the very validity checked here).
            let byte: u8 = unsafe { *(b as *const bool as *const u8) };
            assert!(byte <= 1, "{name}: {byte}");
        }
        // The same through a bitcast from bytes.
        let raw = upload(&client, &[7, 0, 0, 0], ElementType::U8, &[4]).unwrap();
        let pred = raw.bitcast(ElementType::PRED, &[4]).unwrap();
        assert_eq!(pred.to_vec::<bool>().unwrap(), [true, false, false, false], "{name}");
    }
}

/// `CopyDuringCall` (`kImmutableOnlyDuringCall`) uploads return without a done event to wait
/// for: the plugin must have copied the data before returning. Checked: the source is
/// overwritten right after the upload, and the buffer still holds the original values.
#[test]
fn copy_during_call_copies_during_the_call() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        for len in [4usize, 1 << 16] {
            let mut data: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let layout = HostLayout { semantics: HostBufferSemantics::CopyDuringCall, ..Default::default() };
            // SAFETY: viewing f32s as bytes.
            let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, len * 4) };
            let buffer =
                client.buffer_from_bytes(bytes, ElementType::F32, &[len as i64], &layout, Placement::Default).unwrap();
            data.iter_mut().for_each(|x| *x = -1.);
            drop(data);
            let back = buffer.to_vec::<f32>().unwrap();
            assert!(back.iter().enumerate().all(|(i, x)| *x == i as f32), "{name}: {len}");
        }
    }
}

/// A program that donates its argument to its result (`tf.aliasing_output`).
const DONATING: &str = r#"
module @donating {
  func.func public @main(%a: tensor<4xf32> {tf.aliasing_output = 0 : i32}) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"#;

/// A zero-copy upload may read the caller's `Arc<AlignedHostBuffer>` in place; donating it to an
/// execution would write the result into memory the caller still shares. It is never donated.
#[test]
fn zero_copy_uploads_are_never_donated() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(DONATING).unwrap(), &CompileOptions::new()).unwrap();
        let host = Arc::new(AlignedHostBuffer::from_slice(&[1f32, 2., 3., 4.]).unwrap());
        let buffer = client.buffer_from_aligned(&host, ElementType::F32, &[4], Placement::Default).unwrap();
        let out = exe.execute(&[&buffer]).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [2., 4., 6., 8.], "{name}");
        assert!(!buffer.is_deleted().unwrap(), "{name}: not donated");
        assert_eq!(buffer.to_vec::<f32>().unwrap(), [1., 2., 3., 4.], "{name}");
        let expected: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(host.as_bytes(), expected, "{name}: the caller's memory is unchanged");
    }
}
