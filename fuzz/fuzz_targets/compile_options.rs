//! Compile-options encoding.
//!
//! 1. The input as a serialized `CompileOptionsProto` (`CompileOptions::from_proto_bytes`): when it
//!    is accepted, the bytes sent to a plugin (`to_bytes`) must decode to options with at least one
//!    replica and one partition (XLA aborts the process otherwise), and agree with the typed model.
//! 2. The same input, read as integers, drives the builder (`num_replicas`, `num_partitions`,
//!    `DeviceAssignment::new`, `xla_option`): `validate` must never panic and never accept a
//!    count below 1 or an assignment that disagrees with the counts.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use pjrt_client::compile_options::proto::CompileOptionsProto;
use pjrt_client::{CompileOptions, DeviceAssignment};
use prost::Message;

fn check_sendable(options: &CompileOptions) {
    let bytes = options.to_bytes().expect("valid options must encode");
    let decoded = CompileOptionsProto::decode(bytes.as_slice()).expect("the bytes sent must decode");
    let build = decoded.executable_build_options.as_ref().expect("executable_build_options must be present");
    assert!(build.num_replicas >= 1, "num_replicas {} would abort the plugin", build.num_replicas);
    assert!(build.num_partitions >= 1, "num_partitions {} would abort the plugin", build.num_partitions);
    assert_eq!(build.num_replicas, options.num_replicas_requested() as i64);
    assert_eq!(build.num_partitions, options.num_partitions_requested() as i64);
    // Compared as canonical encodings: NaN option values are not equal to themselves.
    let model = options.proto().encode_to_vec();
    assert_eq!(decoded.encode_to_vec(), model, "the bytes sent differ from the typed model");
    // What we send is accepted again, unchanged.
    let again = CompileOptions::from_proto_bytes(&bytes).expect("the bytes sent must be accepted again");
    assert_eq!(again.proto().encode_to_vec(), model);
    if let Some(assignment) = options.assignment().expect("a valid option set has a valid assignment") {
        assert_eq!(assignment.num_replicas() as i64, build.num_replicas);
        assert_eq!(assignment.num_partitions() as i64, build.num_partitions);
    }
}

#[derive(Arbitrary, Debug)]
enum Edit {
    Replicas(usize),
    Partitions(usize),
    /// Rows of device ids, each row cut to at most 8 ids, at most 8 rows.
    Assignment(Vec<Vec<i64>>),
    Portable(bool),
    Spmd(bool),
    Shardy(bool),
    XlaInt(String, i64),
    XlaBool(String, bool),
    XlaFloat(String, f64),
    XlaString(String, String),
}

fn build(u: &mut Unstructured) -> arbitrary::Result<()> {
    let mut options = CompileOptions::new();
    let edits: Vec<Edit> = u.arbitrary()?;
    for edit in edits.into_iter().take(16) {
        options = match edit {
            Edit::Replicas(n) => options.num_replicas(n),
            Edit::Partitions(n) => options.num_partitions(n),
            Edit::Assignment(mut rows) => {
                rows.truncate(8);
                rows.iter_mut().for_each(|r| r.truncate(8));
                match DeviceAssignment::new(rows.clone()) {
                    Ok(a) => {
                        assert!(!rows.is_empty() && !rows[0].is_empty());
                        assert_eq!((a.num_replicas(), a.num_partitions()), (rows.len(), rows[0].len()));
                        assert_eq!(a.device_ids().collect::<Vec<_>>(), rows.concat());
                        options.device_assignment(&a)
                    }
                    Err(_) => {
                        assert!(rows.is_empty() || rows.iter().any(|r| r.len() != rows[0].len()) || rows[0].is_empty());
                        options
                    }
                }
            }
            Edit::Portable(on) => options.compile_portable_executable(on),
            Edit::Spmd(on) => options.use_spmd_partitioning(on),
            Edit::Shardy(on) => options.use_shardy_partitioner(on),
            Edit::XlaInt(name, v) => options.xla_option(name, v),
            Edit::XlaBool(name, v) => options.xla_option(name, v),
            Edit::XlaFloat(name, v) => options.xla_option(name, v),
            Edit::XlaString(name, v) => options.xla_option(name, v),
        };
    }
    let (replicas, partitions) = (options.num_replicas_requested(), options.num_partitions_requested());
    match options.validate() {
        Ok(()) => {
            assert!(replicas >= 1 && partitions >= 1, "accepted {replicas} replicas × {partitions} partitions");
            check_sendable(&options);
        }
        Err(_) => {
            assert!(options.to_bytes().is_err(), "to_bytes must refuse what validate refuses");
        }
    }
    if replicas < 1 || partitions < 1 {
        assert!(options.validate().is_err());
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    if let Ok(options) = CompileOptions::from_proto_bytes(data) {
        check_sendable(&options);
    }
    let _ = build(&mut Unstructured::new(data));
});
