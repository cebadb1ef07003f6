//! Dense literals (`stablehlo.constant dense<...>`) of every element type the IR has, splat and
//! not, in each text form (literal, list, hex), with 0 to 17 elements of ranks 0 to 3: the IR
//! holds exactly the values the text says (each element checked against the values the test
//! chose), text → IR → text and text → IR → bytecode → IR give the same constants, and both
//! CPU plugins read the artifact the writer makes for them as they read the original text
//! themselves. A seeded property test does the same over random types, shapes and values.

use std::fmt::Write as _;

use pjrt_client::{Client, CompileOptions, ExecuteOptions, Program};
use pjrt_stablehlo::ir::{Attr, DenseData, Module};
use pjrt_stablehlo::{parse_text, print, print_pretty, read_bytecode, write_bytecode, StableHloVersion};

use crate::support;

/// How an element type's values are written and stored.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Bool,
    Int {
        bits: u32,
        signed: bool,
    },
    /// A float of `bits` bits (written as its bit pattern, `0x3C00`), stored in `bytes`.
    Float {
        bits: u32,
        bytes: usize,
    },
    /// A complex number of two floats of `bytes` bytes each.
    Complex {
        bytes: usize,
    },
}

/// Every element type of the IR a dense attribute can hold, by its MLIR name.
const TYPES: &[(&str, Kind)] = &[
    ("i1", Kind::Bool),
    ("i2", Kind::Int { bits: 2, signed: true }),
    ("i4", Kind::Int { bits: 4, signed: true }),
    ("i8", Kind::Int { bits: 8, signed: true }),
    ("i16", Kind::Int { bits: 16, signed: true }),
    ("i32", Kind::Int { bits: 32, signed: true }),
    ("i64", Kind::Int { bits: 64, signed: true }),
    ("ui2", Kind::Int { bits: 2, signed: false }),
    ("ui4", Kind::Int { bits: 4, signed: false }),
    ("ui8", Kind::Int { bits: 8, signed: false }),
    ("ui16", Kind::Int { bits: 16, signed: false }),
    ("ui32", Kind::Int { bits: 32, signed: false }),
    ("ui64", Kind::Int { bits: 64, signed: false }),
    ("bf16", Kind::Float { bits: 16, bytes: 2 }),
    ("f16", Kind::Float { bits: 16, bytes: 2 }),
    ("f32", Kind::Float { bits: 32, bytes: 4 }),
    ("f64", Kind::Float { bits: 64, bytes: 8 }),
    ("f8E4M3FN", Kind::Float { bits: 8, bytes: 1 }),
    ("f8E5M2", Kind::Float { bits: 8, bytes: 1 }),
    ("f8E4M3FNUZ", Kind::Float { bits: 8, bytes: 1 }),
    ("f8E5M2FNUZ", Kind::Float { bits: 8, bytes: 1 }),
    ("f8E4M3B11FNUZ", Kind::Float { bits: 8, bytes: 1 }),
    ("f8E4M3", Kind::Float { bits: 8, bytes: 1 }),
    ("f8E3M4", Kind::Float { bits: 8, bytes: 1 }),
    ("f8E8M0FNU", Kind::Float { bits: 8, bytes: 1 }),
    ("f4E2M1FN", Kind::Float { bits: 4, bytes: 1 }),
    ("f6E2M3FN", Kind::Float { bits: 6, bytes: 1 }),
    ("f6E3M2FN", Kind::Float { bits: 6, bytes: 1 }),
    ("complex<f32>", Kind::Complex { bytes: 4 }),
    ("complex<f64>", Kind::Complex { bytes: 8 }),
];

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One element: its text in a literal, and its bytes as the IR holds it.
#[derive(Clone, Debug)]
struct Value {
    text: String,
    bytes: Vec<u8>,
}

fn hex_bits(bits: u64, bytes: usize) -> Value {
    Value { text: format!("0x{:0width$X}", bits, width = bytes * 2), bytes: bits.to_le_bytes()[..bytes].to_vec() }
}

fn random_value(kind: Kind, rng: &mut Rng) -> Value {
    match kind {
        Kind::Bool => {
            let b = rng.next() & 1 == 1;
            Value { text: b.to_string(), bytes: vec![u8::from(b)] }
        }
        Kind::Int { bits, signed } => {
            let raw = if bits == 64 { rng.next() } else { rng.next() & ((1u64 << bits) - 1) };
            let text = if signed {
                let v = if bits == 64 { raw as i64 } else { ((raw << (64 - bits)) as i64) >> (64 - bits) };
                v.to_string()
            } else {
                raw.to_string()
            };
            let n = (bits as usize).div_ceil(8);
            Value { text, bytes: raw.to_le_bytes()[..n].to_vec() }
        }
        Kind::Float { bits, bytes } => {
            let raw = if bits == 64 { rng.next() } else { rng.next() & ((1u64 << bits) - 1) };
            hex_bits(raw, bytes)
        }
        Kind::Complex { bytes } => {
            let bits = 8 * bytes as u32;
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let (re, im) = (hex_bits(rng.next() & mask, bytes), hex_bits(rng.next() & mask, bytes));
            Value { text: format!("({}, {})", re.text, im.text), bytes: [re.bytes, im.bytes].concat() }
        }
    }
}

/// How a case writes its literal.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    /// `dense<v>`.
    Splat,
    /// `dense<[...]>` nested by shape (`dense<>` without elements).
    List,
    /// `dense<[...]>` whose elements are all the same value.
    ListAllEqual,
    /// `dense<"0x...">` of every element.
    Hex,
    /// `dense<"0x...">` of one element.
    HexSplat,
}

const FORMS: &[Form] = &[Form::Splat, Form::List, Form::ListAllEqual, Form::Hex, Form::HexSplat];

/// One constant: its type's text, its literal and the bytes of each element.
struct Case {
    ty: String,
    literal: String,
    elements: Vec<Vec<u8>>,
}

fn nested(out: &mut String, dims: &[u64], values: &mut impl Iterator<Item = String>) {
    match dims.split_first() {
        None => out.push_str(&values.next().unwrap()),
        Some((&n, rest)) => {
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push_str(", ");
                }
                nested(out, rest, values);
            }
            out.push(']');
        }
    }
}

fn tensor_type(dims: &[u64], element: &str) -> String {
    let mut t = String::from("tensor<");
    for d in dims {
        let _ = write!(t, "{d}x");
    }
    t.push_str(element);
    t.push('>');
    t
}

fn hex_of(bytes: &[u8]) -> String {
    let mut s = String::from("\"0x");
    for b in bytes {
        let _ = write!(s, "{b:02X}");
    }
    s.push('"');
    s
}

fn case(element: &str, kind: Kind, dims: &[u64], form: Form, rng: &mut Rng) -> Case {
    let count: u64 = dims.iter().product();
    let first = random_value(kind, rng);
    let values: Vec<Value> = match form {
        Form::Splat | Form::HexSplat | Form::ListAllEqual => vec![first.clone(); count as usize],
        Form::List | Form::Hex => (0..count).map(|_| random_value(kind, rng)).collect(),
    };
    let literal = match form {
        Form::Splat => first.text.clone(),
        Form::HexSplat => hex_of(&first.bytes),
        Form::Hex => hex_of(&values.iter().flat_map(|v| v.bytes.clone()).collect::<Vec<u8>>()),
        Form::List | Form::ListAllEqual if count == 0 && dims.first().is_none_or(|&d| d == 0) => String::new(),
        Form::List | Form::ListAllEqual => {
            let mut s = String::new();
            nested(&mut s, dims, &mut values.iter().map(|v| v.text.clone()));
            s
        }
    };
    Case {
        ty: tensor_type(dims, element),
        literal: format!("dense<{literal}>"),
        elements: values.into_iter().map(|v| v.bytes).collect(),
    }
}

/// The shapes of `n` elements the tests use: rank 0 for one element, then ranks 1 to 3.
fn shapes(n: u64) -> Vec<Vec<u64>> {
    let divisor = |m: u64| (2..=m).find(|d| m % d == 0).unwrap_or(1);
    let mut v = Vec::new();
    if n == 1 {
        v.push(vec![]);
    }
    v.push(vec![n]);
    if n == 0 {
        v.push(vec![2, 0]);
        v.push(vec![0, 3, 2]);
    } else {
        let a = divisor(n);
        v.push(vec![a, n / a]);
        let b = divisor(n / a);
        v.push(vec![n / a / b, a, b]);
    }
    v
}

/// A module whose `@main` returns each case's constant.
fn module_text(cases: &[Case]) -> String {
    let types: Vec<&str> = cases.iter().map(|c| c.ty.as_str()).collect();
    let mut s = format!("func.func public @main() -> ({}) {{\n", types.join(", "));
    for (i, c) in cases.iter().enumerate() {
        let _ = writeln!(s, "  %c{i} = stablehlo.constant {} : {}", c.literal, c.ty);
    }
    let names: Vec<String> = (0..cases.len()).map(|i| format!("%c{i}")).collect();
    let _ = writeln!(s, "  return {} : {}\n}}", names.join(", "), types.join(", "));
    s
}

/// The `value` of every constant of the module, in order.
fn constants(m: &Module) -> Vec<Attr> {
    m.walk().filter(|op| op.name == "stablehlo.constant").filter_map(|op| op.attr("value").cloned()).collect()
}

/// `got` equals `want`, or the first constant that differs, with the case's literal.
fn same_constants(cases: &[Case], got: &[Attr], want: &[Attr], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: {} : {} reads back as {:?}, not {:?}", cases[i].literal, cases[i].ty, got[i], want[i]);
    }
}

/// Each constant holds the values its case chose.
fn check_values(cases: &[Case], m: &Module, text: &str) {
    let got = constants(m);
    assert_eq!(got.len(), cases.len(), "{text}");
    for (c, a) in cases.iter().zip(&got) {
        let Attr::Dense { ty, data } = a else { panic!("{}: not a dense attribute: {a:?}", c.literal) };
        let d = DenseData::new(ty, data).unwrap_or_else(|e| panic!("{} : {}: {e}", c.literal, c.ty));
        assert_eq!(d.count(), c.elements.len() as u64, "{} : {}", c.literal, c.ty);
        for (i, e) in c.elements.iter().enumerate() {
            assert_eq!(d.element(i as u64), Some(&e[..]), "{} : {}: element {i}", c.literal, c.ty);
        }
        if c.elements.is_empty() {
            assert!(data.is_empty(), "{} : {}: data for no elements", c.literal, c.ty);
        }
    }
}

/// The checks that need no plugin: the values, then text → IR → text (generic and pretty) and
/// text → IR → bytecode → IR (for the newest StableHLO and for 1.16.1) give the same
/// constants. Gives the module parsed.
fn round_trips(cases: &[Case]) -> Module {
    let text = module_text(cases);
    let m = parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    check_values(cases, &m, &text);
    let want = constants(&m);
    let printed = print(&m);
    let again = parse_text(&printed).unwrap_or_else(|e| panic!("the print does not parse: {e}\n{printed}"));
    same_constants(cases, &constants(&again), &want, "text → IR → text");
    assert_eq!(print(&again), printed);
    let pretty = print_pretty(&m);
    let again = parse_text(&pretty).unwrap_or_else(|e| panic!("the pretty print does not parse: {e}\n{pretty}"));
    same_constants(cases, &constants(&again), &want, "text → IR → pretty text");
    for target in [pjrt_stablehlo::CURRENT_VERSION, StableHloVersion::new(1, 16, 1)] {
        let bytes = write_bytecode(&m, target).unwrap_or_else(|e| panic!("{target}: {e}\n{text}"));
        let back = read_bytecode(&bytes).unwrap_or_else(|e| panic!("{target}: {e}\n{text}"));
        same_constants(cases, &constants(&back), &want, &format!("text → IR → bytecode {target} → IR"));
    }
    m
}

/// Every element type, every form, 0 to 17 elements in ranks 0 to 3.
fn all_cases(rng: &mut Rng, element: &str, kind: Kind, counts: impl Iterator<Item = u64> + Clone) -> Vec<Case> {
    let mut cases = Vec::new();
    for n in counts {
        for dims in shapes(n) {
            for &form in FORMS {
                cases.push(case(element, kind, &dims, form, rng));
            }
        }
    }
    cases
}

#[test]
fn every_element_type_form_count_and_rank_reads_as_written_and_round_trips() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for &(element, kind) in TYPES {
        let cases = all_cases(&mut rng, element, kind, 0..=17);
        round_trips(&cases);
    }
}

/// The case: `dense<true>` of 2 to 8 `i1` elements is every element true.
#[test]
fn an_i1_splat_is_every_element() {
    for n in 0..=17u64 {
        for (literal, byte) in [("true", 1u8), ("false", 0)] {
            let text = format!(
                "func.func @main() -> tensor<{n}xi1> {{\n  %c = stablehlo.constant dense<{literal}> : tensor<{n}xi1>\n  return %c : tensor<{n}xi1>\n}}"
            );
            let m = parse_text(&text).unwrap();
            let Attr::Dense { ty, data } = &constants(&m)[0] else { unreachable!() };
            let d = DenseData::new(ty, data).unwrap();
            assert!((0..n).all(|i| d.element(i) == Some(&[byte][..])), "{text}");
            assert!(print(&m).contains(&format!("dense<{literal}> : tensor<{n}xi1>")) || n == 0, "{}", print(&m));
            let back = read_bytecode(&write_bytecode(&m, pjrt_stablehlo::CURRENT_VERSION).unwrap()).unwrap();
            assert_eq!(constants(&back), constants(&m), "{text}");
        }
    }
}

/// Random element types, shapes (ranks 0 to 3, dimensions 0 to 5), forms and values.
#[test]
fn random_dense_values_read_as_written_and_round_trip() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut constants_checked = 0;
    for _ in 0..150 {
        let mut cases = Vec::new();
        for _ in 0..16 {
            let (element, kind) = TYPES[rng.below(TYPES.len() as u64) as usize];
            let rank = rng.below(4) as usize;
            let dims: Vec<u64> = (0..rank).map(|_| rng.below(6)).collect();
            let form = FORMS[rng.below(FORMS.len() as u64) as usize];
            cases.push(case(element, kind, &dims, form, &mut rng));
        }
        round_trips(&cases);
        constants_checked += cases.len();
    }
    assert_eq!(constants_checked, 2400);
}

/// Compiles `program` on `client` and runs it without arguments: the outputs' bytes.
fn outputs(client: &Client, program: &Program) -> Result<Vec<Vec<u8>>, String> {
    let exe = client.compile(program, &CompileOptions::new()).map_err(|e| e.to_string())?;
    let outs = exe.execute(&[], &ExecuteOptions::new()).map_err(|e| e.to_string())?;
    let mut v = Vec::new();
    for o in outs.iter() {
        v.push(o.to_host_array().map_err(|e| e.to_string())?.data().to_vec());
    }
    Ok(v)
}

/// The plugin reads the original text, and the artifact the writer makes for the plugin's
/// StableHLO version from this crate's reading of it: the outputs are the same bytes.
fn plugin_reads_the_same(plugin: &str, element: &str, cases: &[Case]) -> Vec<Vec<u8>> {
    let client = support::client(plugin, 1);
    let target = support::plugin(plugin).portable_target().unwrap();
    let text = module_text(cases);
    let m = round_trips(cases);
    let original = outputs(&client, &Program::mlir_text(text.clone()).unwrap())
        .unwrap_or_else(|e| panic!("{plugin}: {element}: the plugin does not run the text: {e}\n{text}"));
    let written = write_bytecode(&m, target).unwrap();
    let ours = outputs(&client, &Program::mlir_bytecode(written).unwrap())
        .unwrap_or_else(|e| panic!("{plugin}: {element}: the plugin does not run what was written for {target}: {e}"));
    assert_eq!(original.len(), cases.len());
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(ours[i], original[i], "{plugin}: {} : {} written for {target}", c.literal, c.ty);
    }
    original
}

/// The element types a CPU plugin returns from a program, with the counts compared: every
/// count to 17 for `i1`, the boundaries of a byte and a few more for the others.
fn plugin_cases(rng: &mut Rng, element: &str, kind: Kind) -> Vec<Case> {
    if element == "i1" {
        all_cases(rng, element, kind, 0..=17)
    } else {
        all_cases(rng, element, kind, [0, 1, 2, 7, 8, 9, 17].into_iter())
    }
}

/// Both plugins: every `i1` case, and the plugin's outputs are the values the cases chose.
#[test]
fn both_plugins_read_written_i1_constants_as_they_read_the_text() {
    for plugin in support::PLUGINS {
        let mut rng = Rng(0xD1B5_4A32_D192_ED03);
        let cases = plugin_cases(&mut rng, "i1", Kind::Bool);
        let outs = plugin_reads_the_same(plugin, "i1", &cases);
        for (c, out) in cases.iter().zip(outs) {
            assert_eq!(out, c.elements.concat(), "{plugin}: {} : {}", c.literal, c.ty);
        }
    }
}

/// The other element types, on the 0.115 plugin: every type it returns (its compiler aborts
/// on a constant of an f6 type, which the 0.106 plugin refuses as a result type).
#[test]
fn the_plugin_reads_written_constants_of_every_type_as_it_reads_the_text() {
    let mut rng = Rng(0x94D0_49BB_1331_11EB);
    for &(element, kind) in TYPES.iter().filter(|(e, _)| *e != "i1" && !e.starts_with("f6")) {
        let cases = plugin_cases(&mut rng, element, kind);
        plugin_reads_the_same("cpu", element, &cases);
    }
}

/// `i1` hex data as both plugins' MLIR reads it: a byte per element, or one byte for every
/// element, any byte but 0 true. Each form this crate reads, it reads as the plugins do (one
/// module of them all); what it refuses (older MLIR's bits packed 8 to a byte, wrong lengths),
/// the plugins refuse too.
#[test]
fn i1_hex_data_reads_as_both_plugins_read_it() {
    let mut rng = Rng(0xBF58_476D_1CE4_E5B9);
    let mut read = Vec::new();
    let mut refused = Vec::new();
    for n in 0..=17u64 {
        let ty = format!("tensor<{n}xi1>");
        let mut forms: Vec<Vec<u8>> = vec![vec![0x00], vec![0x01], vec![0x05], vec![0xFF]];
        forms.push((0..n).map(|_| rng.below(256) as u8).collect());
        if n >= 9 {
            // Older MLIR's form: 8 to a byte.
            forms.push((0..n.div_ceil(8)).map(|_| rng.below(256) as u8).collect());
        }
        for bytes in forms {
            let elements = if bytes.len() == 1 { vec![bytes[0]; n as usize] } else { bytes.clone() };
            let c = Case {
                ty: ty.clone(),
                literal: format!("dense<{}>", hex_of(&bytes)),
                elements: elements.iter().map(|&b| vec![u8::from(b != 0)]).collect(),
            };
            match parse_text(&module_text(std::slice::from_ref(&c))) {
                Ok(m) => {
                    check_values(std::slice::from_ref(&c), &m, &c.literal);
                    read.push(c);
                }
                Err(e) => {
                    assert!(bytes.len() as u64 != n && bytes.len() != 1, "{} : {}: {e}", c.literal, c.ty);
                    assert!(e.to_string().contains("MLIR reads i1 hex data as a byte per element"), "{e}");
                    refused.push(c);
                }
            }
        }
    }
    assert_eq!(refused.len(), 9);
    for plugin in support::PLUGINS {
        let client = support::client(plugin, 1);
        let outs = plugin_reads_the_same(plugin, "i1", &read);
        for (c, out) in read.iter().zip(outs) {
            assert_eq!(out, c.elements.concat(), "{plugin}: {} : {}", c.literal, c.ty);
        }
        for c in &refused {
            let program = Program::mlir_text(module_text(std::slice::from_ref(c))).unwrap();
            assert!(outputs(&client, &program).is_err(), "{plugin} reads {} : {}", c.literal, c.ty);
        }
    }
}
