//! lgamma and digamma (Lanczos' approximation with Euler's reflection), zeta (Johansson's
//! Euler-Maclaurin formula) and polygamma, as ChloLegalizeToStablehlo.cpp writes them. `f16`
//! and `bf16` are computed in `f32`, as there.

// The coefficients as ChloLegalizeToStablehlo.cpp publishes them: both languages round each
// literal to the nearest f64.
#![allow(clippy::excessive_precision)]

use super::build::{Builder, V};
use super::elementary::with_upcast;
use crate::ir::ElementType;

pub(super) fn unary(b: &mut Builder, name: &str, x: &V) -> Result<V, String> {
    let e = x.element().ok_or("an operand that is not a tensor")?;
    if !matches!(e, ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64) {
        return Err(format!("{name} of {e:?} is not lowered (f16, bf16, f32 and f64 are)"));
    }
    Ok(match name {
        "lgamma" => with_upcast(b, x, lgamma),
        "digamma" => with_upcast(b, x, digamma),
        _ => return Err("not an op the writer lowers".to_string()),
    })
}

/// Lanczos' approximation's g and coefficients (n = 9), as ChloLegalizeToStablehlo.cpp has them.
const LANCZOS_GAMMA: f64 = 7.0;
const LANCZOS_BASE: f64 = 0.99999999999980993227684700473478;
const LANCZOS: [f64; 8] = [
    676.520368121885098567009190444019,
    -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,
    -176.61502916214059906584551354,
    12.507343278686904814458936853,
    -0.13857109526572011689554707,
    9.984369578019570859563e-6,
    1.50563273514931155834e-7,
];

/// z (-x below 1/2, x - 1 otherwise), whether x reflects, and log(t(z)) with t(z).
fn lanczos_start(b: &mut Builder, x: &V) -> (V, V, V, V) {
    let half = b.konst(x, 0.5);
    let reflect = b.cmp("LT", x, &half);
    let nx = b.un("negate", x);
    let one = b.konst(x, 1.0);
    let xm1 = b.sub(x, &one);
    let z = b.select(&reflect, &nx, &xm1);
    let lph = b.konst(x, LANCZOS_GAMMA + 0.5);
    let t = b.add(&lph, &z);
    let log_term = b.konst(x, (LANCZOS_GAMMA + 0.5).ln());
    let zl = b.div(&z, &lph);
    let l1p = b.un("log_plus_one", &zl);
    let log_t = b.add(&log_term, &l1p);
    (z, reflect, t, log_t)
}

fn lgamma(b: &mut Builder, x: &V) -> V {
    let (z, reflect, t, log_t) = lanczos_start(b, x);
    let mut a = b.konst(x, LANCZOS_BASE);
    for (i, c) in LANCZOS.iter().enumerate() {
        let coeff = b.konst(x, *c);
        let k = b.konst(x, (i + 1) as f64);
        let zk = b.add(&z, &k);
        let q = b.div(&coeff, &zk);
        a = b.add(&a, &q);
    }
    let half = b.konst(x, 0.5);
    let one = b.konst(x, 1.0);
    let tl = b.div(&t, &log_t);
    let zh = b.add(&z, &half);
    let sum = b.sub(&zh, &tl);
    let r = b.mul(&sum, &log_t);
    let log_a = b.un("log", &a);
    let k = b.konst(x, (2f64.ln() + std::f64::consts::PI.ln()) / 2.0);
    let kr = b.add(&k, &r);
    let lg = b.add(&kr, &log_a);
    // Reflection: log(pi) - log|sin(pi * frac|x|)| - lgamma(1 - x), frac folded onto [0, 1/2].
    let ax = b.un("abs", x);
    let fl = b.un("floor", &ax);
    let frac = b.sub(&ax, &fl);
    let reduce = b.cmp("LT", &half, &frac);
    let omf = b.sub(&one, &frac);
    let frac = b.select(&reduce, &omf, &frac);
    let pi = b.konst(x, std::f64::consts::PI);
    let pf = b.mul(&pi, &frac);
    let sin = b.un("sine", &pf);
    let denom = b.un("log", &sin);
    let log_pi = b.konst(x, std::f64::consts::PI.ln());
    let lpd = b.sub(&log_pi, &denom);
    let reflected = b.sub(&lpd, &lg);
    let finite = b.is_finite(&denom);
    let nd = b.un("negate", &denom);
    let reflected = b.select(&finite, &reflected, &nd);
    let lg = b.select(&reflect, &reflected, &lg);
    // lgamma(±inf) = +inf.
    let inf = b.konst(x, f64::INFINITY);
    let is_inf = b.cmp("EQ", &ax, &inf);
    b.select(&is_inf, &inf, &lg)
}

fn digamma(b: &mut Builder, x: &V) -> V {
    let (z, reflect, t, log_t) = lanczos_start(b, x);
    let zero = b.konst(x, 0.0);
    let mut a = b.konst(x, LANCZOS_BASE);
    let mut a_prime = zero.clone();
    for (i, c) in LANCZOS.iter().enumerate() {
        let coeff = b.konst(x, *c);
        let k = b.konst(x, (i + 1) as f64);
        let zk = b.add(&z, &k);
        let zk2 = b.mul(&zk, &zk);
        let d = b.div(&coeff, &zk2);
        a_prime = b.sub(&a_prime, &d);
        let q = b.div(&coeff, &zk);
        a = b.add(&a, &q);
    }
    let apa = b.div(&a_prime, &a);
    let g = b.konst(x, LANCZOS_GAMMA);
    let gt = b.div(&g, &t);
    let la = b.add(&log_t, &apa);
    let dg = b.sub(&la, &gt);
    // Reflection: digamma(1 - x) - pi cos(pi r) / sin(pi r), r = x + |floor(x + 1/2)|.
    let half = b.konst(x, 0.5);
    let xh = b.add(x, &half);
    let fl = b.un("floor", &xh);
    let afl = b.un("abs", &fl);
    let reduced = b.add(x, &afl);
    let pi = b.konst(x, std::f64::consts::PI);
    let pr = b.mul(&pi, &reduced);
    let cos = b.un("cosine", &pr);
    let sin = b.un("sine", &pr);
    let pc = b.mul(&pi, &cos);
    let cot = b.div(&pc, &sin);
    let reflected = b.sub(&dg, &cot);
    let dg = b.select(&reflect, &reflected, &dg);
    // Poles at the negative integers: NaN. At ±0 the plugins (XLA's own digamma) give -inf,
    // the limit from above, where StableHLO's decomposition gives NaN: -inf, as the plugins.
    let le0 = b.cmp("LE", x, &zero);
    let fx = b.un("floor", x);
    let is_int = b.cmp("EQ", x, &fx);
    let pole = b.bin("and", &le0, &is_int);
    let nan = b.konst(x, f64::NAN);
    let dg = b.select(&pole, &nan, &dg);
    let at_zero = b.cmp("EQ", x, &zero);
    let minus_inf = b.konst(x, f64::NEG_INFINITY);
    b.select(&at_zero, &minus_inf, &dg)
}

/// `f` of two values computed in `f32` for `f16` and `bf16` (both converted), in their own
/// type otherwise.
fn with_upcast2(b: &mut Builder, x: &V, y: &V, f: impl FnOnce(&mut Builder, &V, &V) -> V) -> V {
    match x.element() {
        Some(e @ (ElementType::F16 | ElementType::BF16)) => {
            let (wx, wy) = (b.convert(x, ElementType::F32), b.convert(y, ElementType::F32));
            let r = f(b, &wx, &wy);
            b.convert(&r, e)
        }
        _ => f(b, x, y),
    }
}

pub(super) fn binary(b: &mut Builder, name: &str, x: &V, y: &V) -> Result<V, String> {
    let e = x.element().ok_or("an operand that is not a tensor")?;
    if !matches!(e, ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64)
        || y.element() != Some(e)
    {
        return Err(format!("{name} of {e:?} is not lowered (f16, bf16, f32 and f64 are)"));
    }
    Ok(match name {
        "zeta" => with_upcast2(b, x, y, zeta),
        "polygamma" => with_upcast2(b, x, y, polygamma),
        _ => return Err("not an op the writer lowers".to_string()),
    })
}

/// The Hurwitz zeta function zeta(x, q) (Johansson's Euler-Maclaurin formula, as XLA's
/// math library and ChloLegalizeToStablehlo.cpp have it: 9 terms of the series, 12 of the
/// correction), with its domain: NaN for x < 1 and for q <= 0 with x not an integer, the
/// poles at integer q <= 0 (+inf for an even x, NaN otherwise), +inf at x = 1.
fn zeta(b: &mut Builder, x: &V, q: &V) -> V {
    const COEFFICIENTS: [f64; 12] = [
        -7.1661652561756670113e18,
        1.8152105401943546773e17,
        -4.5979787224074726105e15,
        1.1646782814350067249e14,
        -2.950130727918164224e12,
        7.47242496e10,
        -1.8924375803183791606e9,
        47900160.0,
        -1209600.0,
        30240.0,
        -720.0,
        12.0,
    ];
    const TWO_TERMS_MINUS_ONE: i32 = 2 * 12 - 1;
    let zero = b.konst(q, 0.0);
    let one = b.konst(q, 1.0);
    let mut acc = q.clone();
    let neg_x = b.un("negate", x);
    let mut power_sum = b.bin("power", q, &neg_x);
    for _ in 0..9 {
        acc = b.add(&acc, &one);
        let p = b.bin("power", &acc, &neg_x);
        power_sum = b.add(&power_sum, &p);
    }
    acc = b.add(&acc, &one);
    let q_neg_power = b.bin("power", &acc, &neg_x);
    let one_x = b.konst(x, 1.0);
    let pa = b.mul(&q_neg_power, &acc);
    let xm1 = b.sub(x, &one_x);
    let correction = b.div(&pa, &xm1);
    let acc2 = b.mul(&acc, &acc);
    let rsqrt_acc = b.div(&one, &acc2);
    let mut horner_sum = zero.clone();
    for (i, c) in COEFFICIENTS.iter().take(11).enumerate() {
        let i = i as i32;
        let kl = b.konst(x, f64::from(TWO_TERMS_MINUS_ONE - 1 - 2 * i));
        let kr = b.konst(x, f64::from(TWO_TERMS_MINUS_ONE - 2 - 2 * i));
        let fl = b.add(x, &kl);
        let fr = b.add(x, &kr);
        let product = b.mul(&fl, &fr);
        let inv = b.konst(&acc, 1.0 / c);
        let s = b.add(&horner_sum, &inv);
        let rs = b.mul(&rsqrt_acc, &s);
        horner_sum = b.mul(&product, &rs);
    }
    let half = b.konst(&q_neg_power, 0.5);
    let x_acc = b.div(x, &acc);
    let last = b.konst(&acc, 1.0 / COEFFICIENTS[11]);
    let ls = b.add(&last, &horner_sum);
    let xl = b.mul(&x_acc, &ls);
    let hx = b.add(&half, &xl);
    let tail = b.mul(&q_neg_power, &hx);
    let pc = b.add(&power_sum, &correction);
    let accurate = b.add(&pc, &tail);
    // The series alone where the correction is below the sum's precision.
    let aq = b.un("abs", &q_neg_power);
    let ap = b.un("abs", &power_sum);
    let smallest = b.konst(&acc, smallest_subnormal(acc.element()));
    let aps = b.mul(&ap, &smallest);
    let lt = b.cmp("LT", &aq, &aps);
    let mut out = b.select(&lt, &power_sum, &accurate);
    let nan = b.konst(x, f64::NAN);
    let x_lt_1 = b.cmp("LT", x, &one_x);
    out = b.select(&x_lt_1, &nan, &out);
    let q_le_0 = b.cmp("LE", q, &zero);
    let fx = b.un("floor", x);
    let x_not_int = b.cmp("NE", x, &fx);
    let domain = b.bin("and", &q_le_0, &x_not_int);
    out = b.select(&domain, &nan, &out);
    let inf = b.konst(x, f64::INFINITY);
    let fq = b.un("floor", q);
    let q_int = b.cmp("EQ", q, &fq);
    let at_pole = b.bin("and", &q_le_0, &q_int);
    let two = b.konst(x, 2.0);
    let fx2 = b.un("floor", x);
    let x_int = b.cmp("EQ", x, &fx2);
    let rem = b.bin("remainder", x, &two);
    let even = b.cmp("EQ", &rem, &zero);
    let even_int = b.bin("and", &x_int, &even);
    let pole = b.select(&even_int, &inf, &nan);
    out = b.select(&at_pole, &pole, &out);
    let x_1 = b.cmp("EQ", x, &one);
    b.select(&x_1, &inf, &out)
}

/// The smallest positive subnormal of a float type.
fn smallest_subnormal(e: Option<ElementType>) -> f64 {
    match e {
        Some(ElementType::F64) => f64::from_bits(1),
        _ => f64::from(f32::from_bits(1)),
    }
}

/// polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for a natural n > 0, digamma(x) for
/// n = 0, NaN for any other n.
fn polygamma(b: &mut Builder, n: &V, x: &V) -> V {
    let one = b.konst(x, 1.0);
    let two = b.konst(x, 2.0);
    let rem = b.bin("remainder", n, &two);
    let twice = b.mul(&two, &rem);
    let sign = b.sub(&twice, &one);
    let np1 = b.add(n, &one);
    let lg = lgamma(b, &np1);
    let factorial = b.un("exponential", &lg);
    let z = zeta(b, &np1, x);
    let sf = b.mul(&sign, &factorial);
    let result = b.mul(&sf, &z);
    let zero = b.konst(x, 0.0);
    let n_zero = b.cmp("EQ", n, &zero);
    let dg = digamma(b, x);
    let result = b.select(&n_zero, &dg, &result);
    let fn_ = b.un("floor", n);
    let non_int = b.cmp("NE", n, &fn_);
    let negative = b.cmp("LT", n, &zero);
    let non_natural = b.bin("or", &non_int, &negative);
    let nan = b.konst(x, f64::NAN);
    b.select(&non_natural, &nan, &result)
}
