//! pjrt-builder: random op sequences over random shapes and element types never panic, and
//! every program the builder accepts compiles on the CPU plugin (a refusal by XLA is a builder
//! bug: the builder must refuse first, with a `BuildError`).
//!
//! The input is read as parameters (element type, up to rank 3, dimensions 0..=3), then up to
//! 24 ops, each taking its operands from the values made so far (by index, modulo) and small
//! attributes; an op the builder refuses is skipped. The program returns every value made
//! (so XLA compiles all of it).

#![no_main]

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use pjrt_builder::{ComparisonDirection, ConvDimensions, Convolution, DotDimensions, Function, Value};
use pjrt_client::{Client, ClientOptions, CompileOptions, ElementType};

const ELEMENTS: &[ElementType] = &[
    ElementType::F32,
    ElementType::F32,
    ElementType::S32,
    ElementType::PRED,
    ElementType::F16,
    ElementType::BF16,
    ElementType::F64,
    ElementType::S8,
    ElementType::S64,
    ElementType::U8,
    ElementType::U32,
    ElementType::C64,
    ElementType::F8E4M3FN,
    ElementType::F8E5M2,
    ElementType::S4,
];

const DIRECTIONS: &[ComparisonDirection] = &[
    ComparisonDirection::Eq,
    ComparisonDirection::Ne,
    ComparisonDirection::Ge,
    ComparisonDirection::Gt,
    ComparisonDirection::Le,
    ComparisonDirection::Lt,
];

fn client() -> &'static Client {
    static CLIENT: OnceLock<Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        let path = pjrt_plugins::resolve_or_install(None, |_| ()).expect("the CPU plugin").path;
        let plugin = pjrt_client::Plugin::load(path).expect("loading the CPU plugin");
        Client::new(&plugin, &ClientOptions::new()).expect("a CPU client")
    })
}

#[derive(Arbitrary, Debug)]
enum Op {
    Unary(u8, u8),
    Binary(u8, u8, u8),
    Compare(u8, u8, u8),
    Select(u8, u8, u8),
    Clamp(u8, u8, u8),
    Convert(u8, u8),
    BitcastConvert(u8, u8),
    ReducePrecision(u8, u8, u8),
    Constant(u8, Vec<u8>, Vec<u8>),
    Iota(u8, Vec<u8>, u8),
    BroadcastInDim(u8, Vec<u8>, Vec<u8>),
    Reshape(u8, Vec<u8>),
    Transpose(u8, Vec<u8>),
    Slice(u8, Vec<u8>, Vec<u8>, Vec<u8>),
    DynamicSlice(u8, Vec<u8>, Vec<u8>),
    DynamicUpdateSlice(u8, u8, Vec<u8>),
    Concatenate(u8, u8, u8),
    Pad(u8, u8, Vec<i8>, Vec<i8>, Vec<u8>),
    Reverse(u8, Vec<u8>),
    GetDimensionSize(u8, u8),
    DotGeneral(u8, u8, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>),
    Convolution(u8, u8, u8, Vec<u8>, Vec<(i8, i8)>, u8, u8),
    Reduce(u8, u8, Vec<u8>, u8),
    Nn(u8, u8, u8, u8),
}

fn dims(raw: &[u8], max_rank: usize) -> Vec<i64> {
    raw.iter().take(max_rank).map(|&d| i64::from(d % 4)).collect()
}

fn ints(raw: &[u8], modulo: u8) -> Vec<i64> {
    raw.iter().take(4).map(|&d| i64::from(d % modulo)).collect()
}

fn apply<'f>(f: &'f Function, values: &[Value<'f>], op: &Op) -> Result<Value<'f>, pjrt_builder::BuildError> {
    let v = |i: &u8| &values[*i as usize % values.len()];
    let element = |i: &u8| ELEMENTS[*i as usize % ELEMENTS.len()];
    match op {
        Op::Unary(which, a) => {
            let a = v(a);
            match which % 25 {
                0 => a.abs(),
                1 => a.negate(),
                2 => a.exp(),
                3 => a.exp_minus_one(),
                4 => a.log(),
                5 => a.log_plus_one(),
                6 => a.logistic(),
                7 => a.tanh(),
                8 => a.sine(),
                9 => a.cosine(),
                10 => a.tan(),
                11 => a.sqrt(),
                12 => a.rsqrt(),
                13 => a.cbrt(),
                14 => a.floor(),
                15 => a.ceil(),
                16 => a.round_nearest_afz(),
                17 => a.round_nearest_even(),
                18 => a.sign(),
                19 => a.not(),
                20 => a.popcnt(),
                21 => a.count_leading_zeros(),
                22 => a.is_finite(),
                23 => a.real(),
                _ => a.imag(),
            }
        }
        Op::Binary(which, a, b) => {
            let (a, b) = (v(a), v(b));
            match which % 16 {
                0 => a.add(b),
                1 => a.subtract(b),
                2 => a.multiply(b),
                3 => a.divide(b),
                4 => a.remainder(b),
                5 => a.maximum(b),
                6 => a.minimum(b),
                7 => a.power(b),
                8 => a.atan2(b),
                9 => a.and(b),
                10 => a.or(b),
                11 => a.xor(b),
                12 => a.shift_left(b),
                13 => a.shift_right_arithmetic(b),
                14 => a.shift_right_logical(b),
                _ => a.complex(b),
            }
        }
        Op::Compare(d, a, b) => v(a).compare(v(b), DIRECTIONS[*d as usize % DIRECTIONS.len()]),
        Op::Select(p, a, b) => v(p).select(v(a), v(b)),
        Op::Clamp(lo, a, hi) => v(a).clamp(v(lo), v(hi)),
        Op::Convert(a, e) => v(a).convert(element(e)),
        Op::BitcastConvert(a, e) => v(a).bitcast_convert(element(e)),
        Op::ReducePrecision(a, e, m) => v(a).reduce_precision(i32::from(*e % 12), i32::from(*m % 25)),
        Op::Constant(e, d, bytes) => {
            let element = element(e);
            let d = dims(d, 3);
            let count: usize = d.iter().map(|&x| x as usize).product();
            let width = element.host_element_bytes().unwrap_or(1);
            let data: Vec<u8> =
                (0..count * width).map(|i| bytes.get(i % bytes.len().max(1)).copied().unwrap_or(0)).collect();
            f.constant_bits(element, &data, &d)
        }
        Op::Iota(e, d, dim) => f.iota(element(e), &dims(d, 3), i64::from(*dim % 3)),
        Op::BroadcastInDim(a, d, b) => v(a).broadcast_in_dim(&dims(d, 4), &ints(b, 4)),
        Op::Reshape(a, d) => v(a).reshape(&dims(d, 4)),
        Op::Transpose(a, p) => v(a).transpose(&ints(p, 4)),
        Op::Slice(a, s, l, st) => v(a).slice(&ints(s, 4), &ints(l, 5), &ints(st, 3)),
        Op::DynamicSlice(a, starts, sizes) => {
            let index = f.scalar(i32::from(starts.first().copied().unwrap_or(0) % 5) - 1)?;
            let starts: Vec<&Value<'f>> = starts.iter().map(|_| &index).collect();
            v(a).dynamic_slice(&starts, &ints(sizes, 4))
        }
        Op::DynamicUpdateSlice(a, u, starts) => {
            let index = f.scalar(i64::from(starts.first().copied().unwrap_or(0) % 4))?;
            let starts: Vec<&Value<'f>> = starts.iter().map(|_| &index).collect();
            v(a).dynamic_update_slice(v(u), &starts)
        }
        Op::Concatenate(a, b, d) => v(a).concatenate(&[v(b)], i64::from(*d % 4)),
        Op::Pad(a, p, low, high, interior) => {
            let small = |x: &[i8]| x.iter().take(4).map(|&x| i64::from(x % 3)).collect::<Vec<_>>();
            v(a).pad(v(p), &small(low), &small(high), &ints(interior, 3))
        }
        Op::Reverse(a, d) => v(a).reverse(&ints(d, 4)),
        Op::GetDimensionSize(a, d) => v(a).get_dimension_size(i64::from(*d % 4)),
        Op::DotGeneral(a, b, lb, rb, lc, rc) => {
            let dimensions = DotDimensions {
                lhs_batch: ints(lb, 4),
                rhs_batch: ints(rb, 4),
                lhs_contracting: ints(lc, 4),
                rhs_contracting: ints(rc, 4),
            };
            v(a).dot_general(v(b), &dimensions, None)
        }
        Op::Convolution(a, k, spatial, strides, padding, dil, groups) => {
            let spatial = usize::from(*spatial % 3);
            let layout = if dil & 0x80 == 0 {
                ConvDimensions::channels_last(spatial)
            } else {
                ConvDimensions::channels_first(spatial)
            };
            let pad: Vec<(i64, i64)> =
                padding.iter().take(spatial).map(|&(l, h)| (i64::from(l % 3), i64::from(h % 3))).collect();
            let mut conv = Convolution::new(layout)
                .strides(&strides.iter().take(spatial).map(|&s| i64::from(s % 3)).collect::<Vec<_>>())
                .groups(i64::from(groups % 3), i64::from(groups / 3 % 3));
            if pad.len() == spatial {
                conv = conv.padding(&pad);
            }
            let d = i64::from(dil % 4);
            conv = conv.dilation(&vec![d.max(1); spatial], &vec![(d / 2).max(1); spatial]);
            v(a).convolution(v(k), &conv)
        }
        Op::Reduce(a, init, d, body) => v(a).reduce(v(init), &ints(d, 4), |_, acc, x| match body % 5 {
            0 => acc.add(x),
            1 => acc.maximum(x),
            2 => acc.minimum(x),
            3 => acc.multiply(x),
            _ => acc.and(x),
        }),
        Op::Nn(which, a, b, axis) => {
            let (a, b, axis) = (v(a), v(b), i64::from(*axis % 4));
            match which % 18 {
                0 => a.matmul(b),
                1 => a.reduce_sum(&[axis]),
                2 => a.reduce_max(&[axis]),
                3 => a.reduce_min(&[axis]),
                4 => a.mean(&[axis]),
                5 => a.variance(&[axis]),
                6 => a.softmax(axis),
                7 => a.log_softmax(axis),
                8 => a.logsumexp(&[axis]),
                9 => a.argmax(axis, element(&(*which / 18))),
                10 => a.argmin(axis, ElementType::S32),
                11 => a.one_hot(axis, element(&(*which / 18))),
                12 => a.relu(),
                13 => a.gelu(),
                14 => a.silu(),
                15 => a.softmax_cross_entropy(b),
                16 => a.sparse_softmax_cross_entropy(b),
                _ => a.mean(&[]),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let f = Function::new("fuzz");
    let mut values: Vec<Value<'_>> = Vec::new();
    let parameters = u.int_in_range(1..=3u8).unwrap_or(1);
    for _ in 0..parameters {
        let element = ELEMENTS[u.choose_index(ELEMENTS.len()).unwrap_or(0)];
        let rank = u.int_in_range(0..=3usize).unwrap_or(0);
        let d: Vec<i64> = (0..rank).map(|_| i64::from(u.int_in_range(0..=3u8).unwrap_or(1))).collect();
        if let Ok(p) = f.parameter(element, &d) {
            values.push(p);
        }
    }
    if values.is_empty() {
        return;
    }
    for _ in 0..24 {
        let Ok(op) = Op::arbitrary(&mut u) else { break };
        if let Ok(value) = apply(&f, &values, &op) {
            values.push(value);
        }
    }
    let outputs: Vec<&Value<'_>> = values.iter().collect();
    let Ok(program) = f.finish(&outputs) else { return };
    // Mutations often give a program already compiled (ops refused, values unused): compile
    // each text once (XLA's compile dominates the time per input).
    static COMPILED: OnceLock<Mutex<HashSet<u64>>> = OnceLock::new();
    let text = program.text().unwrap_or("");
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    if !COMPILED.get_or_init(Default::default).lock().unwrap().insert(hasher.finish()) {
        return;
    }
    let client = client();
    f.check_plugin(client.plugin()).expect("the builder's ops are within the plugin's StableHLO");
    if let Err(e) = client.compile(&program, &CompileOptions::new()) {
        panic!("the builder accepted a program the plugin rejects: {e}\n{text}");
    }
});
