//! Writes portable artifacts again at the version each was written for, for
//! `tools/gen_vhlo_testdata.py` to check with jaxlib's deserializer: every `P@V.mlirbc` of
//! IN_DIR (an artifact of StableHLO version V) is read and written for V as OUT_DIR/`P@V.mlirbc`,
//! or OUT_DIR/`P@V.error` holds why not.
//!
//! `cargo run -p pjrt-stablehlo --example write_versions -- IN_DIR OUT_DIR`; without arguments
//! (as CI runs every example) the committed tanh(x) * y + 1 artifact is written for every minor
//! version 0.9.0 .. the newest the writer targets, and each read back.

use pjrt_stablehlo::{read_bytecode, write_bytecode, StableHloVersion, MINIMUM_VERSION, NEWEST_READ_VERSION};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [input, output] = args.as_slice() {
        std::fs::create_dir_all(output).unwrap();
        let mut entries: Vec<_> = std::fs::read_dir(input).unwrap().flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(version) = name.strip_suffix(".mlirbc").and_then(|n| n.rsplit_once('@')).map(|(_, v)| v) else {
                continue;
            };
            let target: StableHloVersion = version.parse().unwrap();
            let written = read_bytecode(&std::fs::read(&path).unwrap())
                .map_err(|e| e.to_string())
                .and_then(|m| write_bytecode(&m, target).map_err(|e| e.to_string()));
            let out = std::path::Path::new(output);
            match written {
                Ok(bytes) => std::fs::write(out.join(&name), bytes).unwrap(),
                Err(e) => std::fs::write(out.join(name.replace(".mlirbc", ".error")), e).unwrap(),
            }
        }
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
    let module = read_bytecode(&std::fs::read(path).unwrap()).unwrap();
    let mut count = 0;
    for (major, minors) in [(0, 9..=20), (1, 0..=NEWEST_READ_VERSION.minor)] {
        for minor in minors {
            let target = StableHloVersion::new(major, minor, 0);
            assert!(target >= MINIMUM_VERSION);
            let bytes = write_bytecode(&module, target).unwrap();
            assert_eq!(read_bytecode(&bytes).unwrap().walk().count(), module.walk().count());
            count += 1;
        }
    }
    println!("tanh_mul written and read back at {count} versions");
}
