//! CHLO written as StableHLO (the writer's `chlo` lowering) against each plugin's own CHLO
//! lowering: every op JAX 0.10.2 or 0.12.0.1 emits, on every element type it uses the op for
//! (tests/data/chlo/jax-*.json, made by tools/list_chlo_ops.py), over inputs that cover the
//! special regions (±0, ±inf, NaN, subnormals, the largest and smallest numbers, the poles and
//! zeros of lgamma and digamma, ±1 for erf_inv and atanh, large arguments). On each plugin
//! the reference is the text with the chlo op, which the plugin's XLA lowers itself; ours is
//! the same text written as a portable artifact: for the newest version on the 0.115 plugin,
//! for StableHLO 1.16.1 on the 0.106 plugin. (The 0.106 plugin does not know chlo.mulhi: its
//! reference there is the 0.115 plugin's, exact integers either way.)
//!
//! Tolerances, in ULPs of the result's type (NaN must meet NaN and an infinity the same
//! infinity): the decompositions are StableHLO's own (chlo-legalize-to-stablehlo), which is
//! what each plugin's XLA runs on the text, so the same ops give the same bits: 0 ULPs. XLA
//! guarantees no more than that for its own lowering either (its elementary functions are
//! specified within a few ULPs, so another sequence of ops could differ by that much), and
//! the test asks for the plugin's own answer. The exceptions, stated where they are:
//! `tolerance` (erf, which XLA keeps as an op of its own: 2 ULPs, 1 for f16 and bf16, which
//! are computed in f32 and rounded) and `digamma_at_zero` (digamma(±0): the two plugins
//! disagree; we give the 0.115 plugin's -inf).

use std::collections::BTreeMap;

use pjrt_client::{Client, CompileOptions, ElementType, HostArray, Program, StableHloVersion};

use crate::{files, support};

/// ULPs allowed between our StableHLO and the plugin's own lowering of `op` on type `e`.
fn tolerance(op: &str, e: ElementType) -> u64 {
    match (op, e) {
        // XLA keeps erf as an op of its own (HLO's erf, not this decomposition): the same
        // approximations (Eigen's for f32, Cephes' for f64), evaluated in another order, so
        // up to 2 ULPs apart; f16 and bf16, computed in f32 and rounded, 1.
        ("erf", ElementType::F16 | ElementType::BF16) => 1,
        ("erf", _) => 2,
        // Everything else is the plugin's own decomposition, op for op: bit for bit.
        _ => 0,
    }
}

/// The MLIR name of an element type.
fn mlir(e: ElementType) -> &'static str {
    pjrt_stablehlo::mlir_element_name(e).unwrap()
}

fn element_of(name: &str) -> ElementType {
    ElementType::from_mlir_name(name).unwrap_or_else(|| match name {
        "complex<f32>" => ElementType::C64,
        "complex<f64>" => ElementType::C128,
        other => panic!("{other}"),
    })
}

/// The ops JAX 0.10.2 and 0.12.0.1 emit and the element types they emit each for.
fn jax_list() -> BTreeMap<String, Vec<ElementType>> {
    let mut out: BTreeMap<String, Vec<ElementType>> = BTreeMap::new();
    for version in ["0.10.2", "0.12.0.1"] {
        let text = std::fs::read_to_string(files::repo().join(format!("tests/data/chlo/jax-{version}.json"))).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        for (op, v) in json["ops"].as_object().unwrap() {
            let dtypes = out.entry(op.clone()).or_default();
            for d in v["dtypes"].as_array().unwrap() {
                let e = element_of(d.as_str().unwrap());
                if !dtypes.contains(&e) {
                    dtypes.push(e);
                }
            }
        }
    }
    assert!(out.len() >= 19, "{} ops", out.len());
    out
}

/// Float inputs covering the special regions, as f64 (rounded to the type when made).
fn float_inputs(e: ElementType, op: &str) -> Vec<f64> {
    let (min_sub, max_sub, min_normal, max) = match e {
        ElementType::F16 => (2f64.powi(-24), 2f64.powi(-14) - 2f64.powi(-24), 2f64.powi(-14), 65504.0),
        ElementType::BF16 => {
            (2f64.powi(-133), 2f64.powi(-126) - 2f64.powi(-133), 2f64.powi(-126), f64::from(half::bf16::MAX))
        }
        ElementType::F32 => (
            f64::from(f32::from_bits(1)),
            f64::from(f32::from_bits(0x007F_FFFF)),
            f64::from(f32::MIN_POSITIVE),
            f64::from(f32::MAX),
        ),
        _ => (f64::from_bits(1), f64::from_bits(0x000F_FFFF_FFFF_FFFF), f64::MIN_POSITIVE, f64::MAX),
    };
    let mut v =
        vec![0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, min_sub, -min_sub, max_sub, min_normal, max, -max];
    // A sweep over magnitudes, both signs.
    let mut m = min_normal;
    while m < max / 1.9 {
        v.extend([m, -m, m * 1.37, -m * 1.37]);
        m *= 64.0;
    }
    // The unit interval, finely, and just inside and at ±1.
    for i in -32..=32 {
        v.push(f64::from(i) / 32.0);
    }
    v.extend([
        0.999, -0.999, 0.9999999, -0.9999999, 1.0000001, 1e-3, -1e-3, 0.1, 2.5, 5.0, 7.9, 8.1, 10.0, 27.0, 88.0,
        89.4159851, 710.0,
    ]);
    // Poles, zeros and their neighbourhoods (lgamma, digamma), large arguments.
    for k in 0..12 {
        let p = -f64::from(k);
        v.extend([p, p + 1e-3, p - 1e-3, p + 0.5, p - 0.25, p + 0.99]);
    }
    v.extend([1.0, 2.0, 1.4616321449683622, 3.0, 1e5, 1e10, 1e20, 1e30, 1e300, -1e5, -1e10, -1e20, -1e30]);
    if op == "erf_inv" || op == "atanh" {
        v.extend([0.9999, -0.9999, 0.99999999, 1.0 - 1e-12, -1.0 + 1e-12]);
    }
    v
}

/// The bytes of `values` as element type `e` (complex: each value as the real part, the
/// next one's as the imaginary part).
fn float_bytes(e: ElementType, values: &[f64]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, &x) in values.iter().enumerate() {
        match e {
            ElementType::F16 => out.extend(half::f16::from_f64(x).to_le_bytes()),
            ElementType::BF16 => out.extend(half::bf16::from_f64(x).to_le_bytes()),
            ElementType::F32 => out.extend((x as f32).to_le_bytes()),
            ElementType::F64 => out.extend(x.to_le_bytes()),
            ElementType::C64 => {
                let im = values[(i * 7 + 3) % values.len()];
                out.extend((x as f32).to_le_bytes());
                out.extend((im as f32).to_le_bytes());
            }
            ElementType::C128 => {
                let im = values[(i * 7 + 3) % values.len()];
                out.extend(x.to_le_bytes());
                out.extend(im.to_le_bytes());
            }
            other => panic!("{other}"),
        }
    }
    out
}

/// Integer inputs: 0, ±1, the extremes, and mixed bit patterns.
fn int_bytes(e: ElementType, n: usize) -> Vec<u8> {
    let bytes = e.host_element_bytes().unwrap();
    let mut out = Vec::new();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let fixed = [0u64, 1, u64::MAX, 2, u64::MAX - 1, 1 << (bytes * 8 - 1), (1 << (bytes * 8 - 1)) - 1];
    for i in 0..n {
        let v = if i < fixed.len() {
            fixed[i]
        } else {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        out.extend(&v.to_le_bytes()[..bytes]);
    }
    if e == ElementType::PRED {
        out.iter_mut().for_each(|b| *b &= 1);
    }
    out
}

/// The element's bits as an ordered integer (floats: sign-magnitude to two's complement).
fn ordered(e: ElementType, bytes: &[u8]) -> (i128, bool, bool) {
    let (bits, width) = match bytes.len() {
        2 => (u64::from(u16::from_le_bytes([bytes[0], bytes[1]])), 16),
        4 => (u64::from(u32::from_le_bytes(bytes.try_into().unwrap())), 32),
        8 => (u64::from_le_bytes(bytes.try_into().unwrap()), 64),
        _ => (u64::from(bytes[0]), 8),
    };
    let value = match e {
        ElementType::F16 => half::f16::from_bits(bits as u16).to_f64(),
        ElementType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
        ElementType::F32 | ElementType::C64 => f64::from(f32::from_bits(bits as u32)),
        ElementType::F64 | ElementType::C128 => f64::from_bits(bits),
        _ => return (i128::from(bits), false, false),
    };
    let sign = 1u64 << (width - 1);
    let magnitude = i128::from(bits & (sign - 1));
    (if bits & sign != 0 { -magnitude } else { magnitude }, value.is_nan(), value.is_infinite())
}

/// The largest distance in ULPs between two outputs of element type `e` (`None` when a NaN
/// or an infinity differs, or when an integer differs at all).
fn max_ulps(e: ElementType, a: &[u8], b: &[u8]) -> Result<u64, String> {
    let part = match e {
        ElementType::C64 => 4,
        ElementType::C128 => 8,
        other => other.host_element_bytes().unwrap(),
    };
    let mut worst = 0u64;
    for (i, (x, y)) in a.chunks(part).zip(b.chunks(part)).enumerate() {
        let ((ix, nx, fx), (iy, ny, fy)) = (ordered(e, x), ordered(e, y));
        let float = !e.is_integral() && e != ElementType::PRED;
        if nx || ny || fx || fy || !float {
            if (nx, ny) == (true, true) {
                continue;
            }
            if ix != iy {
                return Err(format!("element {i}: {x:02x?} against {y:02x?}"));
            }
            continue;
        }
        worst = worst.max((ix - iy).unsigned_abs() as u64);
    }
    Ok(worst)
}

fn run(client: &Client, program: &Program, args: &[HostArray], what: &str) -> Vec<(ElementType, Vec<u8>)> {
    let outs = crate::compile_and_run(client, program, args, what);
    outs.iter().map(|a| (a.element_type(), a.data().to_vec())).collect()
}

/// The outputs of `program`, or `None` when the plugin does not compile it.
fn try_run(client: &Client, program: &Program, args: &[HostArray]) -> Option<Vec<(ElementType, Vec<u8>)>> {
    client.compile(program, &CompileOptions::new()).ok()?;
    Some(run(client, program, args, "a program that compiled"))
}

/// The one place the plugins' own lowerings disagree: digamma(±0) (and so polygamma(0, ±0))
/// is NaN on the 0.106
/// plugin (StableHLO's decomposition: a pole) and -inf on the 0.115 plugin (the limit from
/// above), which the writer gives. The 0.106 reference is checked to be NaN at exactly the
/// inputs the CPU reads as zero (±0 and the subnormals it flushes), and taken as -inf there.
fn digamma_at_zero(
    e: ElementType,
    x: &HostArray,
    is_digamma: impl Fn(usize) -> bool,
    mut reference: Vec<(ElementType, Vec<u8>)>,
) -> Vec<(ElementType, Vec<u8>)> {
    let per = e.host_element_bytes().unwrap();
    let minus_inf = float_bytes(e, &[f64::NEG_INFINITY]);
    let out = &mut reference[0].1;
    for (i, input) in x.data().chunks(per).enumerate() {
        let value = match e {
            ElementType::F16 => half::f16::from_le_bytes([input[0], input[1]]).to_f64(),
            ElementType::BF16 => half::bf16::from_le_bytes([input[0], input[1]]).to_f64(),
            ElementType::F32 => f64::from(f32::from_le_bytes(input.try_into().unwrap())),
            _ => f64::from_le_bytes(input.try_into().unwrap()),
        };
        let zero_to_the_cpu = value == 0.0 || (value.is_finite() && !is_normal_in(e, value));
        let slot = &mut out[i * per..(i + 1) * per];
        if zero_to_the_cpu && is_digamma(i) {
            assert!(ordered(e, slot).1, "digamma {e} on 0.106 at {value}: {slot:02x?}, not NaN");
            slot.copy_from_slice(&minus_inf);
        }
    }
    reference
}

/// Whether `v` is a normal number of the type digamma of `e` is computed in (f32 for f16,
/// bf16 and f32).
fn is_normal_in(e: ElementType, v: f64) -> bool {
    let min = if e == ElementType::F64 { f64::MIN_POSITIVE } else { f64::from(f32::MIN_POSITIVE) };
    v.abs() >= min
}

/// One program: the chlo op on arguments of element type `e`, its text and arguments.
fn program(op: &str, e: ElementType) -> (String, Vec<HostArray>) {
    let t = mlir(e);
    let float = !e.is_integral() && e != ElementType::PRED;
    let (n, data) = if float {
        let values = float_inputs(e, op);
        (values.len(), float_bytes(e, &values))
    } else {
        (64, int_bytes(e, 64))
    };
    let array = |data: Vec<u8>, dims: Vec<i64>| HostArray::new(e, dims, data).unwrap();
    match op {
        "top_k" => {
            // Rows of 8 with ties (the values of each row repeat), k = 3 and k the whole row.
            let rows = n / 8;
            let per = data.len() / n;
            let mut data = data[..rows * 8 * per].to_vec();
            for r in 0..rows {
                let (a, b) = ((r * 8 + 1) * per, (r * 8 + 5) * per);
                let tie: Vec<u8> = data[a..a + per].to_vec();
                data[b..b + per].copy_from_slice(&tie);
            }
            let text = format!(
                "func.func public @main(%x: tensor<{rows}x8x{t}>) -> (tensor<{rows}x3x{t}>, tensor<{rows}x3xi32>, tensor<{rows}x8x{t}>, tensor<{rows}x8xi32>) {{\n  \
                 %0:2 = chlo.top_k(%x, k = 3) : tensor<{rows}x8x{t}> -> (tensor<{rows}x3x{t}>, tensor<{rows}x3xi32>)\n  \
                 %1:2 = chlo.top_k(%x, k = 8) : tensor<{rows}x8x{t}> -> (tensor<{rows}x8x{t}>, tensor<{rows}x8xi32>)\n  \
                 return %0#0, %0#1, %1#0, %1#1 : tensor<{rows}x3x{t}>, tensor<{rows}x3xi32>, tensor<{rows}x8x{t}>, tensor<{rows}x8xi32>\n}}"
            );
            (text, vec![array(data, vec![rows as i64, 8])])
        }
        "next_after" | "mulhi" | "zeta" | "polygamma" => {
            // y: the inputs rotated, so that every special value meets every kind of other.
            let per = data.len() / n;
            let mut y = data[per * 5..].to_vec();
            y.extend(&data[..per * 5]);
            // polygamma's order n: the naturals it is defined for, and two it is not.
            let (data, y) = if op == "polygamma" {
                let orders: Vec<f64> = (0..n).map(|i| [0.0, 1.0, 2.0, 3.0, 5.0, -1.0, 1.5][i % 7]).collect();
                (float_bytes(e, &orders), data)
            } else {
                (data, y)
            };
            let text = format!(
                "func.func public @main(%x: tensor<{n}x{t}>, %y: tensor<{n}x{t}>) -> tensor<{n}x{t}> {{\n  \
                 %0 = chlo.{op} %x, %y : tensor<{n}x{t}>, tensor<{n}x{t}> -> tensor<{n}x{t}>\n  \
                 return %0 : tensor<{n}x{t}>\n}}"
            );
            (text, vec![array(data, vec![n as i64]), array(y, vec![n as i64])])
        }
        _ => {
            let out = if op.starts_with("is_") { "i1" } else { t };
            let text = format!(
                "func.func public @main(%x: tensor<{n}x{t}>) -> tensor<{n}x{out}> {{\n  \
                 %0 = chlo.{op} %x : tensor<{n}x{t}> -> tensor<{n}x{out}>\n  \
                 return %0 : tensor<{n}x{out}>\n}}"
            );
            (text, vec![array(data, vec![n as i64])])
        }
    }
}

#[test]
fn every_lowered_chlo_op_gives_the_plugins_answers() {
    let new = support::client("cpu", 1);
    let old = support::client("cpu-0.106", 1);
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut list = jax_list();
    // Not emitted by JAX, lowered as StableHLO writes them: checked too.
    for op in ["is_inf", "is_pos_inf", "is_neg_inf"] {
        list.insert(
            format!("chlo.{op}"),
            vec![ElementType::F16, ElementType::BF16, ElementType::F32, ElementType::F64],
        );
    }
    for (op, dtypes) in &list {
        let op = op.strip_prefix("chlo.").unwrap();
        for &e in dtypes {
            let (text, args) = program(op, e);
            // Each plugin's own lowering of the text is the reference for what runs on it.
            let reference_new =
                run(&new, &Program::mlir_text(text.clone()).unwrap(), &args, &format!("{op} {e} as text"));
            // (The 0.106 plugin does not know chlo.mulhi: there the 0.115 plugin's answers are
            // the reference, exact integers either way.)
            let text_program = Program::mlir_text(text.clone()).unwrap();
            let reference_old = if op == "mulhi" {
                try_run(&old, &text_program, &args).unwrap_or_else(|| reference_new.clone())
            } else {
                run(&old, &text_program, &args, &format!("{op} {e} as text on 0.106"))
            };
            let reference_old = match op {
                "digamma" => digamma_at_zero(e, &args[0], |_| true, reference_old),
                // polygamma(0, x) is digamma(x): the orders cycle from 0 every 7 elements.
                "polygamma" => digamma_at_zero(e, &args[1], |i| i % 7 == 0, reference_old),
                _ => reference_old,
            };
            let source = Program::mlir_text(text.clone()).unwrap();
            // Every op JAX emits is written, on every type (an op the writer does not lower is
            // WriteError::Chlo, naming it).
            let current = source
                .portable_artifact(pjrt_stablehlo::CURRENT_VERSION)
                .unwrap_or_else(|err| panic!("{op} {e}: {err}"));
            let written = pjrt_stablehlo::read_bytecode(current.code()).unwrap();
            assert!(written.walk().all(|o| !o.name.starts_with("chlo.")), "{op} {e}: chlo left in the artifact");
            let old_artifact = source.portable_artifact(StableHloVersion::new(1, 16, 1)).unwrap();
            for (plugin, client, program, reference) in
                [("0.115", &new, &current, &reference_new), ("0.106", &old, &old_artifact, &reference_old)]
            {
                let tolerance = tolerance(op, e);
                let ours = run(client, program, &args, &format!("{op} {e} written, on {plugin}"));
                for (i, ((te, want), (_, got))) in reference.iter().zip(&ours).enumerate() {
                    match max_ulps(*te, want, got) {
                        Ok(u) if u <= tolerance => {}
                        Ok(u) => {
                            failures.push(format!("{op} {e} on {plugin}, output {i}: {u} ULPs (allowed {tolerance})"))
                        }
                        Err(m) => failures.push(format!("{op} {e} on {plugin}, output {i}: {m}")),
                    }
                }
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(checked >= 60, "only {checked} op and type pairs checked");
}

#[test]
fn ops_the_writer_does_not_lower_are_refused_by_name() {
    for (op, e) in [("bessel_i1e", ElementType::F32), ("erf", ElementType::C64), ("lgamma", ElementType::C128)] {
        let t = mlir(e);
        let text = format!("func.func public @main(%x: tensor<4x{t}>) -> tensor<4x{t}> {{\n  %0 = chlo.{op} %x : tensor<4x{t}> -> tensor<4x{t}>\n  return %0 : tensor<4x{t}>\n}}");
        let module = pjrt_stablehlo::parse_text(&text).unwrap();
        let err = pjrt_stablehlo::write_bytecode(&module, pjrt_stablehlo::CURRENT_VERSION).unwrap_err();
        assert!(matches!(err, pjrt_stablehlo::WriteError::Chlo { .. }), "{op}: {err}");
        assert!(err.to_string().contains(&format!("chlo.{op}")), "{err}");
    }
    // A dynamic shape: refused, with what to do.
    let text = "func.func public @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n  %0 = chlo.erf %x : tensor<?xf32> -> tensor<?xf32>\n  return %0 : tensor<?xf32>\n}";
    let err =
        pjrt_stablehlo::write_bytecode(&pjrt_stablehlo::parse_text(text).unwrap(), pjrt_stablehlo::CURRENT_VERSION)
            .unwrap_err();
    assert!(err.to_string().contains("refine the module first"), "{err}");
}
