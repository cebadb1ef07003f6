//! The compile options JAX wrote (tests/data/jax/*/compile_options.pb) go through
//! `CompileOptions` without losing anything: unedited they are sent byte for byte, and after
//! edits every field the edits did not touch, at the top level and inside
//! `executable_build_options`, still has its exact bytes. And the CPU plugin compiles them.

use std::path::{Path, PathBuf};

use pjrt_client::compile_options::{proto::OptionOverrideProto, OptionValue};
use pjrt_client::{CompileOptions, ExecuteOptions, Program};
use pjrt_formats::npy::NpyArray;
use prost::encoding::{decode_key, decode_varint, WireType};
use prost::Message as _;

use crate::support;

const FAST_MIN_MAX: &str = "xla_cpu_enable_fast_min_max";

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax")
}

/// Every `compile_options.pb` JAX wrote, with its case name.
fn option_files() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(data_dir())
        .expect("tests/data/jax exists")
        .flatten()
        .filter_map(|e| {
            let bytes = std::fs::read(e.path().join("compile_options.pb")).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), bytes))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 30, "expected the JAX compile options, found {}", files.len());
    files
}

/// One field entry: its number, its exact bytes, and its payload if length-delimited. A parser
/// of its own here, so the check does not lean on the code it checks.
struct Entry {
    number: u32,
    raw: Vec<u8>,
    payload: Option<Vec<u8>>,
}

fn entries(bytes: &[u8]) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let start = rest;
        let (number, wire_type) = decode_key(&mut rest).expect("a field key");
        let mut payload = None;
        match wire_type {
            WireType::Varint => {
                decode_varint(&mut rest).expect("a varint");
            }
            WireType::SixtyFourBit => rest = &rest[8..],
            WireType::ThirtyTwoBit => rest = &rest[4..],
            WireType::LengthDelimited => {
                let len = decode_varint(&mut rest).expect("a length") as usize;
                payload = Some(rest[..len].to_vec());
                rest = &rest[len..];
            }
            WireType::StartGroup | WireType::EndGroup => panic!("JAX wrote a group"),
        }
        out.push(Entry { number, raw: start[..start.len() - rest.len()].to_vec(), payload });
    }
    out
}

/// The exact bytes of every entry `keep` selects, in order.
fn raw_where(entries: &[Entry], keep: impl Fn(&Entry) -> bool) -> Vec<Vec<u8>> {
    entries.iter().filter(|e| keep(e)).map(|e| e.raw.clone()).collect()
}

/// `executable_build_options` (3): the payload of its only occurrence.
fn build_options(top: &[Entry]) -> Vec<Entry> {
    let builds: Vec<&Entry> = top.iter().filter(|e| e.number == 3).collect();
    assert_eq!(builds.len(), 1, "one executable_build_options");
    entries(builds[0].payload.as_ref().expect("a message"))
}

/// The key of an `env_option_overrides` (7) entry.
fn override_key(entry: &Entry) -> Vec<u8> {
    let fields = entries(entry.payload.as_ref().expect("a map entry"));
    fields.iter().rev().find(|f| f.number == 1).and_then(|f| f.payload.clone()).unwrap_or_default()
}

/// The edits of the test: an XLA option, the replica count it already has, and the Shardy switch
/// turned around.
fn edit(options: CompileOptions, shardy: bool) -> CompileOptions {
    let replicas = options.num_replicas_requested();
    options.xla_option(FAST_MIN_MAX, false).num_replicas(replicas).use_shardy_partitioner(!shardy)
}

fn shardy_of(options: &CompileOptions) -> bool {
    options.proto().executable_build_options.as_ref().is_some_and(|b| b.use_shardy_partitioner)
}

#[test]
fn jax_compile_options_survive_edits_field_by_field() {
    for (case, input) in option_files() {
        let read = CompileOptions::from_proto_bytes(&input).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(read.to_bytes().unwrap(), input, "{case}: unedited, the bytes go out as they came");

        let shardy = shardy_of(&read);
        let edited = edit(read.clone(), shardy);
        let output = edited.to_bytes().unwrap_or_else(|e| panic!("{case}: {e}"));
        let (before, after) = (entries(&input), entries(&output));

        // Top level: everything but the build options (3) and the overrides (7) untouched, in order.
        let other = |e: &Entry| e.number != 3 && e.number != 7;
        assert_eq!(raw_where(&after, other), raw_where(&before, other), "{case}: top-level fields");
        let position = |entries: &[Entry]| entries.iter().position(|e| e.number == 3);
        assert_eq!(position(&after), position(&before), "{case}: executable_build_options moved");
        // Overrides: the other keys untouched, this key once, set to false.
        let fast = FAST_MIN_MAX.as_bytes();
        let other_key = |e: &Entry| e.number == 7 && override_key(e) != fast;
        assert_eq!(raw_where(&after, other_key), raw_where(&before, other_key), "{case}: other XLA options");
        let ours: Vec<&Entry> = after.iter().filter(|e| e.number == 7 && override_key(e) == fast).collect();
        assert_eq!(ours.len(), 1, "{case}: {FAST_MIN_MAX} entries");
        let value = entries(ours[0].payload.as_ref().unwrap()).into_iter().find(|f| f.number == 2).unwrap();
        let value = OptionOverrideProto::decode(value.payload.unwrap().as_slice()).unwrap();
        assert_eq!(value.value, Some(OptionValue::Bool(false)), "{case}");

        // Inside the build options: everything but use_shardy_partitioner (19) untouched, in
        // order: debug_options, device_assignment, and num_replicas too (set to what it was).
        let (build_before, build_after) = (build_options(&before), build_options(&after));
        assert!(build_before.iter().any(|e| e.number == 3), "{case}: JAX wrote debug_options");
        let not_shardy = |e: &Entry| e.number != 19;
        assert_eq!(
            raw_where(&build_after, not_shardy),
            raw_where(&build_before, not_shardy),
            "{case}: executable_build_options fields"
        );
        assert_eq!(shardy_of(&edited), !shardy, "{case}: use_shardy_partitioner");
        assert_eq!(edited.xla_options()[FAST_MIN_MAX].value, Some(OptionValue::Bool(false)), "{case}");
        // What is sent reads back as the same options.
        assert_eq!(CompileOptions::from_proto_bytes(&output).unwrap(), edited, "{case}");
    }
}

/// The JAX options of `nan_minmax_fast_min_max` ask for fast min/max (NaN not propagated); edited
/// to turn that off, with everything else JAX wrote kept, the CPU plugin compiles them and the
/// program propagates NaN as in the `nan_minmax_default` case (same program and inputs, JAX's
/// default options).
#[test]
fn edited_jax_options_compile_on_the_cpu_plugin() {
    let fast = data_dir().join("nan_minmax_fast_min_max");
    let default = data_dir().join("nan_minmax_default");
    let read = |dir: &Path, file: &str| NpyArray::read(&dir.join(file)).unwrap().to_vec::<f32>().unwrap();
    let outputs = ["out0.npy", "out1.npy", "out2.npy"];
    let bits = |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
    let recorded = |dir: &Path| outputs.iter().map(|f| bits(&read(dir, f))).collect::<Vec<_>>();
    assert_ne!(recorded(&fast), recorded(&default), "the two cases must differ for this test to mean anything");
    for f in ["in0.npy", "in1.npy"] {
        assert_eq!(bits(&read(&fast, f)), bits(&read(&default, f)), "the two cases share their inputs");
    }

    let input = std::fs::read(fast.join("compile_options.pb")).unwrap();
    let jax = CompileOptions::from_proto_bytes(&input).unwrap();
    assert_eq!(jax.xla_options()[FAST_MIN_MAX].value, Some(OptionValue::Bool(true)));
    let shardy = shardy_of(&jax);
    let program = Program::from_file(fast.join("program.mlir")).unwrap();
    let client = support::client("cpu", 1);
    let args: Vec<_> = ["in0.npy", "in1.npy"].iter().map(|f| client.upload(&read(&fast, f), &[8]).unwrap()).collect();
    let run = |options: &CompileOptions| {
        let exe = client.compile(&program, options).unwrap();
        let out = exe.execute(&[&args[0], &args[1]], &ExecuteOptions::new()).unwrap();
        out.iter().map(|b| bits(&b.to_vec::<f32>().unwrap())).collect::<Vec<_>>()
    };
    // As JAX wrote them: JAX's fast min/max numbers. Edited: the default ones.
    assert_eq!(run(&jax), recorded(&fast));
    assert_eq!(run(&edit(jax, shardy)), recorded(&default));
}
