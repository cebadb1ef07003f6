//! StableHLO's own serializer's artifacts at every version on VHLO's version log (made by
//! tools/gen_vhlo_testdata.py with jaxlib 0.10.2 and 0.12.0.1): each reads into the module
//! jaxlib's deserializer reads it as (upgraded to current StableHLO forms), given as text.

use std::path::PathBuf;

use pjrt_stablehlo::ir::{Attr, Module};
use serde_json::Value as Json;

use crate::files;

fn data() -> PathBuf {
    files::repo().join("tests/data/vhlo")
}

/// One artifact of the test data: its program, version and bytes.
pub struct Artifact {
    pub program: String,
    pub version: String,
    pub bytes: Vec<u8>,
    /// The `.mlir` file of the module jaxlib's deserializer reads it as.
    pub reads_as: String,
}

/// The index of each jaxlib that made the data.
fn indexes() -> Vec<Json> {
    ["index-jax-0.10.2.json", "index-jax-0.12.0.1.json"]
        .iter()
        .map(|f| serde_json::from_slice(&std::fs::read(data().join(f)).unwrap()).unwrap())
        .collect()
}

/// Every (program, version) artifact, rebuilt from its stored body: the header (magic,
/// bytecode version, producer) the generator cut off, then the body. Where both jaxlibs wrote
/// a version, the newer jaxlib's artifact is taken.
pub fn artifacts() -> Vec<Artifact> {
    let mut out: Vec<Artifact> = Vec::new();
    for index in indexes().iter().rev() {
        for (program, versions) in index["programs"].as_object().unwrap() {
            for (version, a) in versions.as_object().unwrap() {
                if out.iter().any(|x| x.program == *program && x.version == *version) {
                    continue;
                }
                let bc = a["bytecode_version"].as_u64().unwrap();
                assert!(bc < 128);
                let mut bytes = b"ML\xefR".to_vec();
                bytes.push(((bc as u8) << 1) | 1);
                bytes.extend_from_slice(a["producer"].as_str().unwrap().as_bytes());
                bytes.push(0);
                bytes.extend(std::fs::read(data().join(a["body"].as_str().unwrap())).unwrap());
                let reads_as = a["reads_as"].as_str().unwrap().to_string();
                out.push(Artifact { program: program.clone(), version: version.clone(), bytes, reads_as });
            }
        }
    }
    out.sort_by(|a, b| (&a.program, version_key(&a.version)).cmp(&(&b.program, version_key(&b.version))));
    out
}

fn version_key(v: &str) -> Vec<u32> {
    v.split('.').map(|x| x.parse().unwrap()).collect()
}

/// Every version on the log the data spans: 0.9.0 .. 0.20.0, 1.0.0 .. 1.22.0.
#[test]
fn the_data_covers_every_version_on_the_log() {
    let mut versions: Vec<String> = artifacts().into_iter().map(|a| a.version).collect();
    versions.sort_by_key(|v| version_key(v));
    versions.dedup();
    let mut want: Vec<String> = (9..=20).map(|m| format!("0.{m}.0")).collect();
    want.extend((0..=22).map(|m| format!("1.{m}.0")));
    assert_eq!(versions, want);
}

/// The module a `.mlir` file of the data gives, normalized as the text tests compare.
fn text_module(file: &str) -> Module {
    let text = std::fs::read_to_string(data().join(file)).unwrap();
    crate::text::normalized(pjrt_stablehlo::parse_text(&text).unwrap_or_else(|e| panic!("{file}: {e}")))
}

/// `got` with each attribute the text parser keeps as text (`Attr::Opaque`, as it keeps
/// `#stablehlo.replica_group_mesh_axes`) made that text, where the attribute prints as it.
fn opaque_where(mut got: Module, want: &Module) -> Module {
    fn ops(got: &mut [pjrt_stablehlo::ir::Op], want: &[pjrt_stablehlo::ir::Op]) {
        for (g, w) in got.iter_mut().zip(want) {
            for ((gn, ga), (wn, wa)) in g.attributes.iter_mut().zip(&w.attributes) {
                if let Attr::Opaque(text) = wa {
                    if gn == wn && pjrt_stablehlo::attr_text(ga) == *text {
                        *ga = wa.clone();
                    }
                }
            }
            for (gr, wr) in g.regions.iter_mut().zip(&w.regions) {
                for (gb, wb) in gr.blocks.iter_mut().zip(&wr.blocks) {
                    ops(&mut gb.ops, &wb.ops);
                }
            }
        }
    }
    ops(&mut got.ops, &want.ops);
    got
}

#[test]
fn every_version_reads_into_the_module_of_its_text() {
    let (mut failures, mut count) = (Vec::new(), 0);
    let mut texts = std::collections::HashMap::new();
    for a in artifacts() {
        count += 1;
        let want = texts.entry(a.reads_as.clone()).or_insert_with(|| text_module(&a.reads_as));
        match pjrt_stablehlo::read_bytecode(&a.bytes) {
            Err(e) => failures.push(format!("{} {}: {e}", a.program, a.version)),
            Ok(m) => {
                let got = opaque_where(crate::text::normalized(m), want);
                if got != *want {
                    failures.push(format!(
                        "{} {}: another module: {}",
                        a.program,
                        a.version,
                        crate::text::first_difference(&got, want)
                    ));
                }
            }
        }
    }
    assert!(count >= 800, "only {count} artifacts");
    assert!(failures.is_empty(), "{} of {count} artifacts:\n{}", failures.len(), failures.join("\n"));
}

/// Every op's location, in walk order, each followed by its regions' block arguments'.
fn locations(m: &Module) -> Vec<pjrt_stablehlo::ir::Location> {
    let mut out = Vec::new();
    for op in m.walk() {
        out.push((*op.location).clone());
        for b in op.regions.iter().flat_map(|r| &r.blocks) {
            out.extend((0..b.args.len()).map(|i| b.arg_location(i).clone()));
        }
    }
    out
}

/// The locations jaxlib reads (names, call sites, files, file ranges, fused, unknown; of ops
/// and of block arguments) read the same.
#[test]
fn every_version_reads_the_locations_of_its_text() {
    let (mut failures, mut count) = (Vec::new(), 0);
    let mut texts = std::collections::HashMap::new();
    for a in artifacts() {
        let want = texts.entry(a.reads_as.clone()).or_insert_with(|| {
            let text = std::fs::read_to_string(data().join(&a.reads_as)).unwrap();
            locations(&pjrt_stablehlo::parse_text(&text).unwrap())
        });
        let got = locations(&pjrt_stablehlo::read_bytecode(&a.bytes).unwrap());
        count += 1;
        if got != *want {
            let i = got.iter().zip(want.iter()).position(|(x, y)| x != y).unwrap_or(0);
            failures.push(format!("{} {}: op {i}: {:?} != {:?}", a.program, a.version, got.get(i), want.get(i)));
        }
    }
    assert!(failures.is_empty(), "{} of {count} artifacts:\n{}", failures.len(), failures.join("\n"));
}

/// `a`'s bytes with another producer string, and `from` (an op or attribute name in its
/// string section) replaced by `to` (as long).
fn altered(a: &Artifact, producer: &str, from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let end = a.bytes.iter().position(|&b| b == 0).unwrap();
    let mut out = a.bytes[..5].to_vec();
    out.extend_from_slice(producer.as_bytes());
    let mut body = a.bytes[end..].to_vec();
    let at = body.windows(from.len()).position(|w| w == from.as_bytes()).unwrap_or_else(|| panic!("no {from}"));
    body[at..at + from.len()].copy_from_slice(to.as_bytes());
    out.extend(body);
    out
}

fn artifact(program: &str, version: &str) -> Artifact {
    artifacts().into_iter().find(|a| a.program == program && a.version == version).unwrap()
}

/// An op this reader does not know, in an artifact newer than it knows: the error names the
/// op and the artifact's version and says it is newer, not damaged.
#[test]
fn an_unknown_op_in_a_newer_artifact_is_named_as_newer() {
    let a = artifact("collectives", "1.22.0");
    let e =
        pjrt_stablehlo::read_bytecode(&altered(&a, "StableHLO_v1.99.0", "all_gather_v2", "all_gather_v9")).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, pjrt_stablehlo::Error::Unsupported { .. }), "{e:?}");
    assert!(text.contains("all_gather_v9") && text.contains("1.99.0") && text.contains("newer"), "{text}");
    assert!(!text.contains("damaged"), "{text}");
}

/// The same in an artifact of a version this reader reads: named, with the version, as
/// damage or a form the reader misses (never "export it again" without the version).
#[test]
fn an_unknown_op_in_a_known_version_names_op_and_version() {
    let a = artifact("collectives", "1.10.0");
    let e =
        pjrt_stablehlo::read_bytecode(&altered(&a, "StableHLO_v1.10.0", "all_gather_v2", "all_gather_v9")).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, pjrt_stablehlo::Error::Unsupported { .. }), "{e:?}");
    assert!(text.contains("all_gather_v9") && text.contains("StableHLO 1.10.0"), "{text}");
}

/// A missing inherent attribute of an old (pre-properties) artifact names the attribute and
/// the op it belongs to.
#[test]
fn a_missing_attribute_names_the_op_and_the_version() {
    let a = artifact("conv", "0.9.0");
    // The attribute dictionary's name `input_batch_dimension`, renamed.
    let e = pjrt_stablehlo::read_bytecode(&altered(
        &a,
        "StableHLO_v0.9.0",
        "input_batch_dimension",
        "input_batch_dimensioX",
    ))
    .unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, pjrt_stablehlo::Error::Malformed { .. }), "{e:?}");
    assert!(
        text.contains("missing input_batch_dimension")
            && text.contains("vhlo.convolution_v1")
            && text.contains("StableHLO 0.9.0"),
        "{text}"
    );
}

/// Every artifact's module written for its own version (every version the data has, 0.9.0 ..
/// 1.22.0: the writer targets all) reads back the same (and is byte for byte StableHLO's:
/// `byte_identity_with_stablehlos_serializer`).
#[test]
fn every_version_written_reads_back_the_same() {
    let (mut failures, mut written) = (Vec::new(), 0);
    for a in artifacts() {
        let target: pjrt_stablehlo::StableHloVersion = a.version.parse().unwrap();
        assert!(target <= pjrt_stablehlo::NEWEST_READ_VERSION, "{} {}", a.program, a.version);
        let module = pjrt_stablehlo::read_bytecode(&a.bytes).unwrap();
        let bytes = match pjrt_stablehlo::write_bytecode(&module, target) {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{} {}: {e}", a.program, a.version));
                continue;
            }
        };
        written += 1;
        match pjrt_stablehlo::read_bytecode(&bytes) {
            Ok(back) if crate::text::normalized(back.clone()) == crate::text::normalized(module.clone()) => {
                if back.producer != a.bytes_producer() {
                    failures.push(format!("{} {}: producer {}", a.program, a.version, back.producer));
                }
            }
            Ok(_) => failures.push(format!("{} {}: reads back another module", a.program, a.version)),
            Err(e) => failures.push(format!("{} {}: {e}", a.program, a.version)),
        }
    }
    assert!(failures.is_empty(), "{} failed:\n{}", failures.len(), failures.join("\n"));
    // Every artifact of every version 0.9.0 .. 1.22.0 (54 of them at 1.21.0 and 1.22.0).
    assert_eq!(written, 865, "{written} written");
}

/// StableHLO 1.21.0 and 1.22.0 changed nothing in VHLO (the table's `CURRENT` rows hold
/// through 1.22.0): jaxlib 0.12.0.1's artifact of each program at either is its 1.20.0 one
/// with another producer, and what this writer writes for 1.21.0 and 1.22.0 is what it writes
/// for 1.20.0 with another producer.
#[test]
fn versions_1_21_and_1_22_are_1_20_with_another_producer() {
    let all = artifacts();
    // What follows the header (magic, bytecode version, producer).
    let body = |b: &[u8]| b[b.iter().position(|&x| x == 0).unwrap() + 1..].to_vec();
    let mut compared = 0;
    for a in all.iter().filter(|a| a.version == "1.20.0") {
        let module = pjrt_stablehlo::read_bytecode(&a.bytes).unwrap();
        let ours_1_20 =
            pjrt_stablehlo::write_bytecode(&module, pjrt_stablehlo::StableHloVersion::new(1, 20, 0)).unwrap();
        for version in ["1.21.0", "1.22.0"] {
            let newer = all.iter().find(|n| n.program == a.program && n.version == version).unwrap();
            assert_eq!(body(&newer.bytes), body(&a.bytes), "{} {version}", a.program);
            assert_eq!(newer.bytes_producer(), format!("StableHLO_v{version}"));
            let target: pjrt_stablehlo::StableHloVersion = version.parse().unwrap();
            let ours = pjrt_stablehlo::write_bytecode(&module, target).unwrap();
            assert_eq!(body(&ours), body(&ours_1_20), "{} {version}", a.program);
            compared += 1;
        }
    }
    assert_eq!(compared, 2 * 27, "{compared}");
}

impl Artifact {
    /// The producer string of the artifact (`StableHLO_v1.3.0`).
    fn bytes_producer(&self) -> String {
        let end = self.bytes.iter().position(|&b| b == 0).unwrap();
        String::from_utf8(self.bytes[5..end].to_vec()).unwrap()
    }
}

/// What tools/gen_vhlo_testdata.py recorded when it gave each artifact to this writer and
/// ours to jaxlib's deserializer: every one is written (the writer targets every version the
/// data has, 0.9.0 .. 1.22.0), reads into the module StableHLO's artifact reads as, and is byte
/// for byte StableHLO's: jaxlib 0.10.2's 730 (0.9.0 .. 1.17.0) and jaxlib 0.12.0.1's 865
/// (0.9.0 .. 1.22.0).
#[test]
fn jaxlib_read_what_the_writer_wrote_as_it_reads_stablehlos() {
    for index in indexes() {
        let w = &index["written"];
        let jaxlib = index["jaxlib"].as_str().unwrap();
        let artifacts: usize =
            index["programs"].as_object().unwrap().values().map(|v| v.as_object().unwrap().len()).sum();
        assert_eq!(w["differs"].as_array().unwrap().len(), 0, "{jaxlib}: {}", w["differs"]);
        assert_eq!(w["refused_by_jaxlib"].as_array().unwrap().len(), 0, "{jaxlib}: {}", w["refused_by_jaxlib"]);
        assert!(w["not_written"].as_object().unwrap().is_empty(), "{jaxlib}: {}", w["not_written"]);
        assert_eq!(w["same"].as_u64().unwrap(), artifacts as u64, "{jaxlib}");
        let expected = match jaxlib {
            "0.10.2" => 730,
            _ => 865,
        };
        assert_eq!(artifacts, expected, "{jaxlib}");
        // Byte for byte its serializer's: all of the newest jaxlib's; of jaxlib 0.10.2's, all but
        // `structure` at 0.12.0 .. 1.17.0, where its serializer wrote other use-list orders than
        // 0.12.0.1's (so what the writer writes is the newest serializer's).
        let identical = w["byte_identical"].as_u64().unwrap();
        let want = if jaxlib == "0.10.2" { 703 } else { artifacts as u64 };
        assert_eq!(identical, want, "{jaxlib}: byte for byte");
    }
}

/// Where jaxlib refuses to write a program for a version (`tan` before 1.4.0, batched gather
/// before 1.1.0, `composite` before 0.19.0, mesh-axes replica groups before 1.16.0), this
/// writer refuses it too, naming what the version lacks (`WriteError::NotInVersion`); where
/// jaxlib writes it, this writer does (the other tests).
#[test]
fn the_writer_refuses_what_jaxlib_refuses() {
    let all = artifacts();
    let (mut checked, mut failures) = (0, Vec::new());
    for index in indexes() {
        for (program, refused) in index["refusals"].as_object().unwrap() {
            // The newest artifact of the program: the module to write for the refused versions.
            let Some(newest) = all.iter().rfind(|a| a.program == *program) else {
                continue; // jaxlib writes it at no version (Shardy programs): nothing to read.
            };
            let module = pjrt_stablehlo::read_bytecode(&newest.bytes).unwrap();
            for (version, why) in refused.as_object().unwrap() {
                let target: pjrt_stablehlo::StableHloVersion = version.parse().unwrap();
                checked += 1;
                match pjrt_stablehlo::write_bytecode(&module, target) {
                    Err(pjrt_stablehlo::WriteError::NotInVersion { needs, .. }) if needs > target => {}
                    other => failures.push(format!("{program} {version} (jaxlib: {why}): {other:?}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {checked}:\n{}", failures.len(), failures.join("\n"));
    // 80 (program, version) pairs of each jaxlib's index: those at 1.21.0 and 1.22.0 are of
    // programs jaxlib writes at no version (nothing to read them from).
    assert_eq!(checked, 160, "{checked} refusals checked");
}

/// MLIR bytecode's PrefixVarInt at `*at` (the count of trailing zeros of the first byte says
/// how many bytes follow).
fn read_varint(b: &[u8], at: &mut usize) -> u64 {
    let first = b[*at];
    if first == 0 {
        let v = u64::from_le_bytes(b[*at + 1..*at + 9].try_into().unwrap());
        *at += 9;
        return v;
    }
    let n = first.trailing_zeros() as usize + 1;
    let mut word = [0u8; 8];
    word[..n].copy_from_slice(&b[*at..*at + n]);
    *at += n;
    u64::from_le_bytes(word) >> n
}

/// The sections of an artifact after its header: (id, offset of the data in the file, data).
fn sections(b: &[u8]) -> Vec<(u8, usize, &[u8])> {
    let mut at = 4;
    read_varint(b, &mut at);
    at += b[at..].iter().position(|&x| x == 0).unwrap() + 1;
    let mut out = Vec::new();
    while at < b.len() {
        let code = b[at];
        at += 1;
        let len = read_varint(b, &mut at) as usize;
        if code & 0x80 != 0 {
            let align = read_varint(b, &mut at) as usize;
            while at % align != 0 {
                at += 1;
            }
        }
        out.push((code & 0x7f, at, &b[at..at + len]));
        at += len;
    }
    out
}

/// Where `ours` first differs from `theirs` (StableHLO's), by section: its id (MLIR's
/// numbering: 0 strings, 1 dialects, 2 attributes/types, 3 their offsets, 4 IR, 5 resources,
/// 6 resource offsets, 7 properties) and the offset in it, or the order of the sections.
pub fn first_byte_difference(ours: &[u8], theirs: &[u8]) -> Option<String> {
    if ours == theirs {
        return None;
    }
    let (a, b) = (sections(ours), sections(theirs));
    let order = |s: &[(u8, usize, &[u8])]| s.iter().map(|x| x.0).collect::<Vec<_>>();
    if order(&a) != order(&b) {
        return Some(format!("section order {:?}, StableHLO's {:?}", order(&a), order(&b)));
    }
    for ((id, _, x), (_, _, y)) in a.iter().zip(&b) {
        if x != y {
            let i = x.iter().zip(y.iter()).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()));
            let show = |s: &[u8]| format!("{:02x?}", &s[i.saturating_sub(4)..(i + 12).min(s.len())]);
            return Some(format!(
                "section {id} at {i} of {}/{}: ours {} StableHLO's {}",
                x.len(),
                y.len(),
                show(x),
                show(y)
            ));
        }
    }
    Some("the header".to_string())
}

/// Every artifact written for its own version is byte for byte what StableHLO's serializer
/// wrote (the whole file, header included, against the artifact the test data rebuilds): the
/// tables in MLIR's numbering order, the sections in its order, the use-list orders its
/// passes leave. Prints, per version and per section, how many are (`cargo test --
/// --nocapture byte_identity`), and each that is not with where it first differs.
#[test]
fn byte_identity_with_stablehlos_serializer() {
    let mut per_version: std::collections::BTreeMap<Vec<u32>, (String, usize, usize)> = Default::default();
    let (mut differ, mut written) = (Vec::new(), 0);
    let mut same_sections: std::collections::BTreeMap<u8, usize> = Default::default();
    for a in artifacts() {
        let target: pjrt_stablehlo::StableHloVersion = a.version.parse().unwrap();
        if target > pjrt_stablehlo::NEWEST_READ_VERSION {
            continue;
        }
        let module = pjrt_stablehlo::read_bytecode(&a.bytes).unwrap();
        let ours = pjrt_stablehlo::write_bytecode(&module, target).unwrap();
        written += 1;
        let (a_sections, b_sections) = (sections(&ours), sections(&a.bytes));
        for (id, _, data) in &a_sections {
            if b_sections.iter().any(|(i, _, d)| i == id && d == data) {
                *same_sections.entry(*id).or_insert(0) += 1;
            }
        }
        let entry = per_version.entry(version_key(&a.version)).or_insert((a.version.clone(), 0, 0));
        entry.2 += 1;
        match first_byte_difference(&ours, &a.bytes) {
            None => entry.1 += 1,
            Some(d) => differ.push(format!("{} {}: {d}", a.program, a.version)),
        }
    }
    for (version, same, of) in per_version.values() {
        println!("{version}: {same} of {of} byte for byte StableHLO's");
    }
    for (id, n) in &same_sections {
        println!("section {id}: {n} of {written} byte for byte StableHLO's");
    }
    println!("all: {} of {written}", written - differ.len());
    assert_eq!(written, 865, "{written} written");
    assert!(differ.is_empty(), "{} of {written} differ:\n{}", differ.len(), differ.join("\n"));
}

/// The "every location kind" program (tools/gen_vhlo_testdata.py's `locations`) keeps every
/// location it has when written at each version: block arguments' (a name around a file
/// location, and an unknown one) and file ranges (`"f.py":5:6 to 7:8`, `"f.py":9:1 to :12`).
#[test]
fn the_locations_program_keeps_its_locations_when_written() {
    use pjrt_stablehlo::ir::Location;
    let (mut checked, mut ranges, mut args) = (0, 0, 0);
    for a in artifacts().into_iter().filter(|a| a.program == "locations") {
        let target: pjrt_stablehlo::StableHloVersion = a.version.parse().unwrap();
        if target > pjrt_stablehlo::NEWEST_READ_VERSION {
            continue;
        }
        let module = pjrt_stablehlo::read_bytecode(&a.bytes).unwrap();
        let want = locations(&module);
        ranges += want.iter().filter(|l| matches!(l, Location::FileLineColRange { .. })).count();
        args += module
            .walk()
            .flat_map(|op| &op.regions)
            .flat_map(|r| &r.blocks)
            .filter(|b| !b.arg_locations.is_empty())
            .count();
        let back = pjrt_stablehlo::read_bytecode(&pjrt_stablehlo::write_bytecode(&module, target).unwrap()).unwrap();
        assert_eq!(locations(&back), want, "{}", a.version);
        checked += 1;
    }
    assert!(checked >= 30, "{checked} versions");
    assert_eq!((ranges, args), (2 * checked, checked), "two ranges and one block with argument locations each");
}
