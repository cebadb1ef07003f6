//! Reading artifacts built here field by field (a tiny front-to-back FlatBuffers writer for
//! tests), hostile variants of them, and every truncation and many corruptions of a real one.

use super::flatbuffer::Table;
use super::schema::{slot, MAX_TREE_DEPTH};
use super::*;
use pjrt_client::sharding::Sharding;
use pjrt_client::ElementType;

/// A value to serialize. Tables list their fields by slot.
#[derive(Clone)]
enum V {
    U8(u8),
    U16(u16),
    U32(u32),
    Str(String),
    Bytes(Vec<u8>),
    Table(Vec<Option<V>>),
    Tables(Vec<V>),
    /// `n` vector entries that all point at one shared table.
    SharedTables(usize, Box<V>),
    Strs(Vec<String>),
    U16s(Vec<u16>),
    U32s(Vec<u32>),
    /// A vector header that claims `n` elements and has none.
    LyingVector(u32),
}

fn pad(buf: &mut Vec<u8>) {
    while buf.len() % 4 != 0 {
        buf.push(0);
    }
}

/// Writes `v` (a table, string or vector) at the end of `buf`, returning its position.
fn write(buf: &mut Vec<u8>, v: &V) -> usize {
    pad(buf);
    match v {
        V::Table(fields) => {
            // vtable first, then the table (its soffset is positive: the vtable is before it).
            let vt = buf.len();
            let vt_len = 4 + 2 * fields.len();
            let table_len = 4 + 4 * fields.len();
            buf.extend_from_slice(&(vt_len as u16).to_le_bytes());
            buf.extend_from_slice(&(table_len as u16).to_le_bytes());
            for (i, f) in fields.iter().enumerate() {
                let off: u16 = if f.is_some() { 4 + 4 * i as u16 } else { 0 };
                buf.extend_from_slice(&off.to_le_bytes());
            }
            pad(buf);
            let t = buf.len();
            buf.extend_from_slice(&((t - vt) as i32).to_le_bytes());
            buf.extend_from_slice(&vec![0; 4 * fields.len()]);
            for (i, f) in fields.iter().enumerate() {
                let at = t + 4 + 4 * i;
                match f {
                    None => {}
                    Some(V::U8(x)) => buf[at] = *x,
                    Some(V::U16(x)) => buf[at..at + 2].copy_from_slice(&x.to_le_bytes()),
                    Some(V::U32(x)) => buf[at..at + 4].copy_from_slice(&x.to_le_bytes()),
                    Some(child) => {
                        let c = write(buf, child);
                        buf[at..at + 4].copy_from_slice(&((c - at) as u32).to_le_bytes());
                    }
                }
            }
            t
        }
        V::Str(s) => {
            let at = buf.len();
            buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
            buf.extend_from_slice(s.as_bytes());
            buf.push(0);
            at
        }
        V::Bytes(b) => {
            let at = buf.len();
            buf.extend_from_slice(&(b.len() as u32).to_le_bytes());
            buf.extend_from_slice(b);
            at
        }
        V::U16s(xs) => {
            let at = buf.len();
            buf.extend_from_slice(&(xs.len() as u32).to_le_bytes());
            xs.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
            at
        }
        V::U32s(xs) => {
            let at = buf.len();
            buf.extend_from_slice(&(xs.len() as u32).to_le_bytes());
            xs.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
            at
        }
        V::LyingVector(n) => {
            let at = buf.len();
            buf.extend_from_slice(&n.to_le_bytes());
            at
        }
        V::Tables(_) | V::Strs(_) | V::SharedTables(..) => {
            let items: Vec<V> = match v {
                V::Tables(ts) => ts.clone(),
                V::Strs(ss) => ss.iter().map(|s| V::Str(s.clone())).collect(),
                _ => Vec::new(),
            };
            let count = if let V::SharedTables(n, _) = v { *n } else { items.len() };
            let at = buf.len();
            buf.extend_from_slice(&(count as u32).to_le_bytes());
            buf.extend_from_slice(&vec![0; 4 * count]);
            if let V::SharedTables(_, shared) = v {
                let c = write(buf, shared);
                for i in 0..count {
                    let slot = at + 4 + 4 * i;
                    buf[slot..slot + 4].copy_from_slice(&((c - slot) as u32).to_le_bytes());
                }
            } else {
                for (i, item) in items.iter().enumerate() {
                    let c = write(buf, item);
                    let slot = at + 4 + 4 * i;
                    buf[slot..slot + 4].copy_from_slice(&((c - slot) as u32).to_le_bytes());
                }
            }
            at
        }
        V::U8(_) | V::U16(_) | V::U32(_) => unreachable!("scalars live inside tables"),
    }
}

fn finish(root: &V) -> Vec<u8> {
    let mut buf = vec![0u8; 4];
    let t = write(&mut buf, root);
    buf[0..4].copy_from_slice(&(t as u32).to_le_bytes());
    buf
}

fn table(fields: &[(usize, V)]) -> V {
    let n = fields.iter().map(|(s, _)| s + 1).max().unwrap_or(0);
    let mut slots = vec![None; n];
    for (s, v) in fields {
        slots[*s] = Some(v.clone());
    }
    V::Table(slots)
}

fn leaf() -> V {
    table(&[(slot::pytree::KIND, V::U8(0))])
}

fn tuple(children: Vec<V>) -> V {
    table(&[(slot::pytree::KIND, V::U8(2)), (slot::pytree::CHILDREN, V::Tables(children))])
}

fn aval(dims: &[&str], dtype: u8) -> V {
    table(&[
        (slot::aval::KIND, V::U8(0)),
        (slot::aval::SHAPE, V::Strs(dims.iter().map(|d| d.to_string()).collect())),
        (slot::aval::DTYPE, V::U8(dtype)),
        (slot::aval::MEMORY_SPACE, V::U8(1)),
    ])
}

/// The fields of a valid one-input, one-output export (f32[2] -> f32[2]) on cpu.
fn fields() -> Vec<(usize, V)> {
    use slot::exported as f;
    let dict = table(&[(slot::pytree::KIND, V::U8(4))]);
    vec![
        (f::SERIALIZATION_VERSION, V::U16(3)),
        (f::FUNCTION_NAME, V::Str("f".into())),
        (f::IN_TREE, tuple(vec![tuple(vec![leaf()]), dict])),
        (f::OUT_TREE, leaf()),
        (f::PLATFORMS, V::Strs(vec!["cpu".into()])),
        (f::MLIR_MODULE, V::Bytes(b"ML\xefR fake module".to_vec())),
        (f::CALLING_CONVENTION_VERSION, V::U16(10)),
        (f::MODULE_KEPT_VAR_IDX, V::U16s(vec![0])),
        (f::NR_DEVICES, V::U32(1)),
        (f::UNIQUE_AVALS, V::Tables(vec![aval(&["2"], 10)])),
        (f::IN_AVALS_IDXS, V::U32s(vec![0])),
        (f::OUT_AVALS_IDXS, V::U32s(vec![0])),
        (f::IN_SHARDINGS_IDXS, V::U32s(vec![0])),
        (f::OUT_SHARDINGS_IDXS, V::U32s(vec![0])),
    ]
}

fn with(changes: &[(usize, V)]) -> Vec<u8> {
    let mut fs = fields();
    for (s, v) in changes {
        fs.retain(|(k, _)| k != s);
        fs.push((*s, v.clone()));
    }
    finish(&table(&fs))
}

fn without(slots: &[usize]) -> Vec<u8> {
    let mut fs = fields();
    fs.retain(|(k, _)| !slots.contains(k));
    finish(&table(&fs))
}

fn err(bytes: &[u8]) -> String {
    JaxExport::from_bytes(bytes).expect_err("must be refused").to_string()
}

fn real_artifact() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/jax_export/jax-0.10.2/pytree_outputs/model.jaxexport"
    ))
    .expect("the committed test artifact")
}

#[test]
fn a_minimal_export_reads_back() {
    let m = JaxExport::from_bytes(&with(&[])).unwrap();
    assert_eq!(m.function_name(), "f");
    assert_eq!(m.platforms(), ["cpu"]);
    assert_eq!(m.in_avals()[0].to_string(), "float32[2]");
    assert_eq!(m.in_avals()[0].element_type, Some(ElementType::F32));
    assert_eq!(m.in_shardings(), [JaxSharding::Unspecified]);
    assert_eq!(m.in_tree().leaf_paths(), ["[0][0]"]);
    assert_eq!(m.nr_devices(), 1);
    m.check_runnable("cpu").unwrap();
    assert!(JaxExport::looks_like(&with(&[])));
}

#[test]
fn older_inline_avals_and_shardings_and_short_device_count_are_read() {
    use slot::exported as f;
    let hlo_replicated = table(&[(slot::sharding::HLO_SHARDING_PROTO, V::Bytes(vec![0x08, 0x00]))]);
    let hlo_other = table(&[(slot::sharding::HLO_SHARDING_PROTO, V::Bytes(vec![0x08, 0x03]))]);
    let mut fs = fields();
    fs.retain(|(k, _)| {
        ![f::IN_AVALS_IDXS, f::OUT_AVALS_IDXS, f::IN_SHARDINGS_IDXS, f::OUT_SHARDINGS_IDXS, f::NR_DEVICES].contains(k)
    });
    fs.extend([
        (f::IN_AVALS, V::Tables(vec![aval(&["2"], 10)])),
        (f::OUT_AVALS, V::Tables(vec![aval(&["2"], 10)])),
        (f::IN_SHARDINGS, V::Tables(vec![hlo_replicated])),
        (f::OUT_SHARDINGS, V::Tables(vec![hlo_other])),
        (f::NR_DEVICES_SHORT, V::U16(1)),
    ]);
    let m = JaxExport::from_bytes(&finish(&table(&fs))).unwrap();
    assert_eq!(m.in_avals().len(), 1);
    assert_eq!(m.nr_devices(), 1);
    assert_eq!(m.in_shardings()[0].is_replicated(), Some(true));
    assert_eq!(m.out_shardings()[0].is_replicated(), Some(false));
}

#[test]
fn named_shardings_are_read() {
    use slot::exported as f;
    let mesh = table(&[
        (slot::mesh::AXIS_SIZES, V::U32s(vec![2, 4])),
        (slot::mesh::AXIS_NAMES, V::Strs(vec!["x".into(), "y".into()])),
    ]);
    let one_axis =
        |axes: &[&str]| table(&[(slot::ONE_AXIS_AXES, V::Strs(axes.iter().map(|a| a.to_string()).collect()))]);
    let spec = table(&[(slot::partition_spec::PARTITIONS, V::Tables(vec![one_axis(&["x"]), one_axis(&[])]))]);
    let named = table(&[(slot::named_sharding::SPEC, spec), (slot::named_sharding::ABSTRACT_MESH_IDX, V::U32(0))]);
    let bytes = with(&[
        (f::UNIQUE_ABSTRACT_MESHES, V::Tables(vec![mesh])),
        (f::UNIQUE_NAMED_SHARDINGS, V::Tables(vec![named])),
        (f::IN_SHARDINGS_IDXS, V::U32s(vec![1])),
        (f::NR_DEVICES, V::U32(8)),
    ]);
    let m = JaxExport::from_bytes(&bytes).unwrap();
    let JaxSharding::Named(n) = &m.in_shardings()[0] else { panic!("{:?}", m.in_shardings()) };
    assert_eq!(n.mesh.axis_sizes, [2, 4]);
    assert_eq!(n.mesh.axis_names, ["x", "y"]);
    assert_eq!(n.partitions, vec![vec!["x".to_string()], vec![]]);
    assert_eq!(m.in_shardings()[0].is_replicated(), Some(false));
    // Split over "x" of an x=2, y=4 mesh: not the whole mesh.
    let e = m.check_runnable("cpu").unwrap_err().to_string();
    assert!(e.contains("input 0 is sharded as") && e.contains("only replicated arrays and arrays split"), "{e}");
    // On a 1-D mesh of the model's device count the same spec is a split along dim 0.
    let mesh_1d =
        table(&[(slot::mesh::AXIS_SIZES, V::U32s(vec![8])), (slot::mesh::AXIS_NAMES, V::Strs(vec!["x".into()]))]);
    let spec = table(&[(slot::partition_spec::PARTITIONS, V::Tables(vec![one_axis(&["x"])]))]);
    let split = table(&[(slot::named_sharding::SPEC, spec), (slot::named_sharding::ABSTRACT_MESH_IDX, V::U32(0))]);
    let replicated = table(&[(slot::named_sharding::ABSTRACT_MESH_IDX, V::U32(0))]);
    let bytes = with(&[
        (f::UNIQUE_ABSTRACT_MESHES, V::Tables(vec![mesh_1d])),
        (f::UNIQUE_NAMED_SHARDINGS, V::Tables(vec![split, replicated])),
        (f::IN_SHARDINGS_IDXS, V::U32s(vec![1])),
        (f::OUT_SHARDINGS_IDXS, V::U32s(vec![2])),
        (f::NR_DEVICES, V::U32(8)),
    ]);
    let m = JaxExport::from_bytes(&bytes).unwrap();
    m.check_runnable("cpu").unwrap();
    assert_eq!(m.device_shardings().unwrap(), (vec![Sharding::Split(0)], vec![Sharding::Replicated]));
    // Several devices and no sharding: the compiler's choice cannot be laid out.
    let bytes = with(&[(f::NR_DEVICES, V::U32(8))]);
    let e = JaxExport::from_bytes(&bytes).unwrap().check_runnable("cpu").unwrap_err().to_string();
    assert!(e.contains("has no sharding"), "{e}");
    // An index past the unique shardings.
    let e = err(&with(&[(f::IN_SHARDINGS_IDXS, V::U32s(vec![5]))]));
    assert!(e.contains("sharding index 5 is out of range"), "{e}");
}

#[test]
fn what_cannot_run_is_refused_clearly() {
    use slot::exported as f;
    let effect = table(&[(slot::EFFECT_TYPE_NAME, V::Str("<class 'OrderedIO'>".into()))]);
    let m = JaxExport::from_bytes(&with(&[(f::ORDERED_EFFECTS, V::Tables(vec![effect]))])).unwrap();
    assert_eq!(m.ordered_effects(), ["<class 'OrderedIO'>"]);
    let e = m.check_runnable("cpu").unwrap_err().to_string();
    assert!(e.contains("ordered effects") && e.contains("token"), "{e}");

    let m = JaxExport::from_bytes(&with(&[(f::CALLING_CONVENTION_VERSION, V::U16(8))])).unwrap();
    assert!(m.check_runnable("cpu").unwrap_err().to_string().contains("calling convention version 8"));

    let m = JaxExport::from_bytes(&with(&[(f::PLATFORMS, V::Strs(vec!["tpu".into()]))])).unwrap();
    let e = m.check_runnable("cpu").unwrap_err().to_string();
    assert!(e.contains("exported for tpu but the client's platform is cpu"), "{e}");

    let m = JaxExport::from_bytes(&with(&[(f::UNIQUE_AVALS, V::Tables(vec![aval(&["2"], 22)]))])).unwrap();
    assert_eq!(m.in_avals()[0].dtype_name, "float0");
    assert!(m.check_runnable("cpu").unwrap_err().to_string().contains("float0"));

    let m = JaxExport::from_bytes(&with(&[(f::UNIQUE_AVALS, V::Tables(vec![aval(&["2*b + 1"], 10)]))])).unwrap();
    assert_eq!(m.in_avals()[0].dims, [Dim::Symbolic("2*b + 1".into())]);
    assert!(m.is_polymorphic());
    m.check_runnable("cpu").unwrap();
    let e = m.check_shapes(&[(ElementType::S32, vec![3])]).unwrap_err().to_string();
    assert!(e.contains("Dtype mismatch for args[0]: expected float32 and called with int32"), "{e}");
    let e = m.check_shapes(&[]).unwrap_err().to_string();
    assert!(e.contains("takes 1 inputs"), "{e}");

    // Dimensions are PJRT's i64: i64::MAX reads, a count above it (in u64 or beyond) is refused.
    let m = JaxExport::from_bytes(&with(&[(f::UNIQUE_AVALS, V::Tables(vec![aval(&["9223372036854775807"], 10)]))]))
        .unwrap();
    assert_eq!(m.in_avals()[0].fixed_dims(), Some(vec![i64::MAX]));
    for big in ["9223372036854775808", "18446744073709551615", "99999999999999999999999"] {
        let e = err(&with(&[(f::UNIQUE_AVALS, V::Tables(vec![aval(&["2", big], 10)]))]));
        assert!(e.contains("unique_avals"), "{e}");
        assert!(e.contains(&format!("aval dimension {big} is above 9223372036854775807")), "{e}");
    }
    let m = JaxExport::from_bytes(&with(&[])).unwrap();
    assert!(m.check_input(0, ElementType::F32, &[2]).is_ok());
    let e = m.check_input(0, ElementType::F32, &[-2]).unwrap_err().to_string();
    assert!(e.contains("input 0 is f32[-2], but the model expects float32[2]"), "{e}");

    for version in [0u16, 13, 999] {
        let e = err(&with(&[(f::SERIALIZATION_VERSION, V::U16(version))]));
        assert!(e.contains(&format!("serialization version {version} is not one this reader knows")), "{e}");
    }
}

#[test]
fn the_writers_jax_version_is_kept_and_named_when_the_version_is_too_new() {
    use slot::exported as f;
    // JAX 0.12: serialization version 12 and the writer's version.
    let m = JaxExport::from_bytes(&with(&[
        (f::SERIALIZATION_VERSION, V::U16(12)),
        (f::JAX_VERSION, V::Str("0.12.0.1".into())),
    ]))
    .unwrap();
    assert_eq!((m.serialization_version(), m.jax_version()), (12, Some("0.12.0.1")));
    assert!(m.to_string().contains("serialization version 12, written by JAX 0.12.0.1"), "{m}");
    // Older artifacts have none.
    let m = JaxExport::from_bytes(&with(&[])).unwrap();
    assert_eq!(m.jax_version(), None);
    assert!(m.to_string().contains("JAX version not recorded"), "{m}");
    // A newer schema is refused naming its version and its writer.
    let e = err(&with(&[(f::SERIALIZATION_VERSION, V::U16(13)), (f::JAX_VERSION, V::Str("0.13.0".into()))]));
    assert!(
        e.contains("serialization version 13, written by JAX 0.13.0, is not one this reader knows (1..=12)"),
        "{e}"
    );
    assert!(e.contains("export the model with JAX 0.12 or older"), "{e}");
    // A hostile writer string is cut and its control characters escaped in messages.
    let long = format!("0.13\n\u{1b}[31m{}", "é".repeat(100));
    let e = err(&with(&[(f::SERIALIZATION_VERSION, V::U16(13)), (f::JAX_VERSION, V::Str(long.clone()))]));
    assert!(e.contains("written by JAX 0.13\\n\\u{1b}[31m") && !e.contains('\u{1b}'), "{e}");
    assert!(e.len() < 400, "{e}");
    let m = JaxExport::from_bytes(&with(&[(f::JAX_VERSION, V::Str(long))])).unwrap();
    assert!(m.jax_version().unwrap().len() <= 64);
    // An unreadable version field is ignored (it only informs).
    let m = JaxExport::from_bytes(&with(&[(f::JAX_VERSION, V::U32(0xffff_fff0))])).unwrap();
    assert_eq!(m.jax_version(), None);
    // The calling-convention refusal names the writer.
    let m = JaxExport::from_bytes(&with(&[
        (f::CALLING_CONVENTION_VERSION, V::U16(11)),
        (f::JAX_VERSION, V::Str("0.13.0".into())),
    ]))
    .unwrap();
    let e = m.check_runnable("cpu").unwrap_err().to_string();
    assert!(e.contains("calling convention version 11 (written by JAX 0.13.0)"), "{e}");
}

#[test]
fn inconsistent_artifacts_are_refused() {
    use slot::exported as f;
    assert!(err(&without(&[f::MLIR_MODULE])).contains("holds no StableHLO module"));
    assert!(err(&with(&[(f::MLIR_MODULE, V::Bytes(b"module {}".to_vec()))])).contains("not MLIR bytecode"));
    assert!(err(&with(&[(f::MODULE_KEPT_VAR_IDX, V::U16s(vec![3]))])).contains("module_kept_var_idx [3]"));
    assert!(err(&with(&[(f::MODULE_KEPT_VAR_IDX, V::U16s(vec![0, 0]))])).contains("increasing"));
    assert!(err(&with(&[(f::IN_AVALS_IDXS, V::U32s(vec![7]))])).contains("aval index 7 is out of range"));
    assert!(err(&with(&[(f::OUT_TREE, tuple(vec![leaf(), leaf()]))])).contains("out_tree has 2 leaves"));
    assert!(err(&with(&[(f::NR_DEVICES, V::U32(0))])).contains("nr_devices is 0"));
    let token = table(&[(slot::aval::KIND, V::U8(1))]);
    assert!(err(&with(&[(f::UNIQUE_AVALS, V::Tables(vec![token]))])).contains("not a shaped array"));
}

#[test]
fn deep_nesting_is_refused() {
    let mut tree = leaf();
    for _ in 0..(MAX_TREE_DEPTH + 10) {
        tree = tuple(vec![tree]);
    }
    let e = err(&with(&[(slot::exported::OUT_TREE, tree)]));
    assert!(e.contains("nested deeper than"), "{e}");
}

#[test]
fn shared_subtrees_cannot_blow_up() {
    // 40 levels of nodes whose two children are one shared node: 2^40 leaves in a few KB.
    let mut tree = leaf();
    for _ in 0..40 {
        tree = table(&[(slot::pytree::KIND, V::U8(2)), (slot::pytree::CHILDREN, V::SharedTables(2, Box::new(tree)))]);
    }
    let bytes = with(&[(slot::exported::OUT_TREE, tree)]);
    assert!(bytes.len() < 8192);
    let e = err(&bytes);
    assert!(e.contains("expands to far more data"), "{e}");
    // A million references to one aval with a long shape.
    let shape: Vec<String> = (0..2000).map(|_| "1".to_string()).collect();
    let shape: Vec<&str> = shape.iter().map(String::as_str).collect();
    let bytes = with(&[
        (slot::exported::UNIQUE_AVALS, V::SharedTables(100_000, Box::new(aval(&shape, 10)))),
        (slot::exported::IN_AVALS_IDXS, V::U32s(vec![0; 100_000])),
    ]);
    assert!(err(&bytes).contains("expands to far more data"));
}

#[test]
fn lying_lengths_and_offsets_are_refused() {
    use slot::exported as f;
    for n in [u32::MAX, 1 << 30, 1000] {
        for slot in [f::PLATFORMS, f::MLIR_MODULE, f::MODULE_KEPT_VAR_IDX, f::UNIQUE_AVALS, f::IN_AVALS_IDXS] {
            let e = err(&with(&[(slot, V::LyingVector(n))]));
            assert!(e.contains("runs past the end"), "slot {slot}, length {n}: {e}");
        }
    }
    let mut bytes = with(&[]);
    let past_the_end = bytes.len() as u32 + 4;
    bytes[0..4].copy_from_slice(&past_the_end.to_le_bytes());
    assert!(err(&bytes).contains("points outside"));
    let mut bytes = with(&[]);
    let root = u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize;
    bytes[root..root + 4].copy_from_slice(&i32::MAX.to_le_bytes());
    assert!(err(&bytes).contains("vtable"));
    assert!(err(&[]).contains("too short"));
    assert!(err(&[0xff; 64]).contains("not a readable jax.export artifact"));
}

#[test]
fn every_truncation_of_a_real_artifact_is_an_error() {
    let bytes = real_artifact();
    assert!(JaxExport::from_bytes(&bytes).is_ok());
    // Only the zero padding after the last object may go.
    let meaningful = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    assert!(meaningful + 4 > bytes.len());
    for len in 0..meaningful {
        assert!(JaxExport::from_bytes(&bytes[..len]).is_err(), "truncated to {len} of {} bytes", bytes.len());
    }
}

#[test]
fn corrupting_any_byte_of_a_real_artifact_never_panics() {
    let bytes = real_artifact();
    let mut refused = 0;
    for i in 0..bytes.len() {
        for v in [0x00u8, 0x01, 0x7f, 0x80, 0xff] {
            let mut c = bytes.clone();
            if c[i] == v {
                continue;
            }
            c[i] = v;
            if JaxExport::from_bytes(&c).is_err() {
                refused += 1;
            }
        }
    }
    // Flips inside the MLIR module or in padding read fine; structural ones must be caught.
    assert!(refused > 100, "only {refused} corruptions were refused");
}

#[test]
fn offsets_that_point_back_at_themselves_are_errors() {
    // A uoffset of 0 makes a field point at itself: the only "cycle" the format allows, since
    // offsets are unsigned and move forward. It must read as a broken table, not loop.
    use slot::exported as f;
    for slot in [f::IN_TREE, f::OUT_TREE, f::VJP] {
        let mut bytes = with(&[(slot, leaf())]);
        let root = Table::root(&bytes).unwrap();
        let at = root.field_position(slot).unwrap();
        bytes[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
        assert!(err(&bytes).contains("not a readable jax.export artifact"), "slot {slot}");
    }
    // The same inside a vector of tables.
    let mut bytes = with(&[]);
    let root = Table::root(&bytes).unwrap();
    let avals = root.field_position(f::UNIQUE_AVALS).unwrap();
    let vector = avals + u32::from_le_bytes(bytes[avals..avals + 4].try_into().unwrap()) as usize;
    bytes[vector + 4..vector + 8].copy_from_slice(&0u32.to_le_bytes());
    assert!(err(&bytes).contains("unique_avals"));
}

#[test]
fn mesh_sizes_whose_product_overflows_are_refused() {
    // Found by the jax_export fuzz target.
    use slot::exported as f;
    let mesh = table(&[
        (slot::mesh::AXIS_SIZES, V::U32s(vec![u32::MAX, u32::MAX, u32::MAX])),
        (slot::mesh::AXIS_NAMES, V::Strs(vec!["x".into(), "y".into(), "z".into()])),
    ]);
    let bytes = with(&[
        (f::UNIQUE_ABSTRACT_MESHES, V::Tables(vec![mesh])),
        (f::UNIQUE_NAMED_SHARDINGS, V::Tables(vec![table(&[(slot::named_sharding::ABSTRACT_MESH_IDX, V::U32(0))])])),
        (f::IN_SHARDINGS_IDXS, V::U32s(vec![1])),
        (f::NR_DEVICES, V::U32(4)),
    ]);
    let m = JaxExport::from_bytes(&bytes).unwrap();
    assert!(m.device_shardings().unwrap_err().to_string().contains("only replicated arrays"));
}
