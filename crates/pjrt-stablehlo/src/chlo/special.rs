//! The special functions of ChloLegalizeToStablehlo.cpp: erf and erfc (Cephes' and Eigen's
//! polynomials), erf_inv (Giles' approximation), lgamma and digamma (Lanczos'
//! approximation with Euler's reflection). `f16` and `bf16` are computed in `f32`, as there.

// The coefficients as Cephes and ChloLegalizeToStablehlo.cpp publish them: both languages
// round each literal to the nearest f64 (the f32 ones then to the nearest f32).
#![allow(clippy::excessive_precision)]

use super::build::{Builder, V};
use super::elementary::with_upcast;
use crate::ir::ElementType;

/// Horner's scheme, the first coefficient the highest power's.
fn poly(b: &mut Builder, x: &V, coefficients: &[f64]) -> V {
    let Some((first, rest)) = coefficients.split_first() else { return b.konst(x, 0.0) };
    let mut p = b.konst(x, *first);
    for c in rest {
        p = b.mul(&p, x);
        let k = b.konst(x, *c);
        p = b.add(&p, &k);
    }
    p
}

pub(super) fn unary(b: &mut Builder, name: &str, x: &V) -> Result<V, String> {
    let e = x.element().ok_or("an operand that is not a tensor")?;
    if !matches!(e, ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64) {
        return Err(format!("{name} of {e:?} is not lowered (f16, bf16, f32 and f64 are)"));
    }
    let f64 = e == ElementType::F64;
    Ok(match (name, f64) {
        ("erf", true) => erf_f64(b, x),
        ("erf", false) => with_upcast(b, x, erf_f32),
        ("erfc", true) => erfc_f64(b, x),
        ("erfc", false) => with_upcast(b, x, erfc_f32),
        ("erf_inv", true) => erf_inv_f64(b, x),
        ("erf_inv", false) => with_upcast(b, x, erf_inv_f32),
        ("lgamma", _) => with_upcast(b, x, lgamma),
        ("digamma", _) => with_upcast(b, x, digamma),
        _ => return Err("not an op the writer lowers".to_string()),
    })
}

/// erfc for |x| >= 1 in f64 (Cephes): exp(-x²) P(|x|)/Q(|x|) below 8, R/S above, 0 where
/// -x² < -maxlog, 2 - erfc(-x) for x < 0.
fn erfc_ge_one_f64(b: &mut Builder, x: &V) -> V {
    const MAXLOG: f64 = 7.09782712893383996843E2;
    const P: [f64; 9] = [
        2.46196981473530512524E-10,
        5.64189564831068821977E-1,
        7.46321056442269912687E0,
        4.86371970985681366614E1,
        1.96520832956077098242E2,
        5.26445194995477358631E2,
        9.34528527171957607540E2,
        1.02755188689515710272E3,
        5.57535335369399327526E2,
    ];
    const Q: [f64; 9] = [
        1.00000000000000000000E0,
        1.32281951154744992508E1,
        8.67072140885989742329E1,
        3.54937778887819891062E2,
        9.75708501743205489753E2,
        1.82390916687909736289E3,
        2.24633760818710981792E3,
        1.65666309194161350182E3,
        5.57535340817727675546E2,
    ];
    const R: [f64; 6] = [
        5.64189583547755073984E-1,
        1.27536670759978104416E0,
        5.01905042251180477414E0,
        6.16021097993053585195E0,
        7.40974269950448939160E0,
        2.97886665372100240670E0,
    ];
    const S: [f64; 7] = [
        1.00000000000000000000E0,
        2.26052863220117276590E0,
        9.39603524938001434673E0,
        1.20489539808096656605E1,
        1.70814450747565897222E1,
        9.60896809063285878198E0,
        3.36907645100081516050E0,
    ];
    let x2 = b.mul(x, x);
    let z = b.un("negate", &x2);
    let ez = b.un("exponential", &z);
    let ax = b.un("abs", x);
    let p = poly(b, &ax, &P);
    let ezp = b.mul(&ez, &p);
    let q = poly(b, &ax, &Q);
    let below8 = b.div(&ezp, &q);
    let r = poly(b, &ax, &R);
    let ezr = b.mul(&ez, &r);
    let s = poly(b, &ax, &S);
    let above8 = b.div(&ezr, &s);
    let eight = b.konst(x, 8.0);
    let lt8 = b.cmp("LT", &ax, &eight);
    let approx = b.select(&lt8, &below8, &above8);
    clamp_and_reflect(b, x, &z, &approx, MAXLOG)
}

/// 0 where z < -maxlog; 2 - erfc(|x|) for x < 0.
fn clamp_and_reflect(b: &mut Builder, x: &V, z: &V, approx: &V, maxlog: f64) -> V {
    let limit = b.konst(x, -maxlog);
    let under = b.cmp("LT", z, &limit);
    let zero = b.konst(x, 0.0);
    let clamped = b.select(&under, &zero, approx);
    let neg = b.cmp("LT", x, &zero);
    let two = b.konst(x, 2.0);
    let reflected = b.sub(&two, &clamped);
    b.select(&neg, &reflected, &clamped)
}

/// erf for |x| <= 1 in f64 (Cephes): x T(x²) / U(x²).
fn erf_le_one_f64(b: &mut Builder, x: &V) -> V {
    const T: [f64; 5] = [
        9.60497373987051638749E0,
        9.00260197203842689217E1,
        2.23200534594684319226E3,
        7.00332514112805075473E3,
        5.55923013010394962768E4,
    ];
    const U: [f64; 6] = [
        1.00000000000000000000E0,
        3.35617141647503099647E1,
        5.21357949780152679795E2,
        4.59432382970980127987E3,
        2.26290000613890934246E4,
        4.92673942608635921086E4,
    ];
    let x2 = b.mul(x, x);
    let t = poly(b, &x2, &T);
    let xt = b.mul(x, &t);
    let u = poly(b, &x2, &U);
    b.div(&xt, &u)
}

fn erf_f64(b: &mut Builder, x: &V) -> V {
    let small = erf_le_one_f64(b, x);
    let one = b.konst(x, 1.0);
    let erfc = erfc_ge_one_f64(b, x);
    let large = b.sub(&one, &erfc);
    let ax = b.un("abs", x);
    let lt = b.cmp("LT", &ax, &one);
    b.select(&lt, &small, &large)
}

fn erfc_f64(b: &mut Builder, x: &V) -> V {
    let large = erfc_ge_one_f64(b, x);
    let one = b.konst(x, 1.0);
    let erf = erf_le_one_f64(b, x);
    let small = b.sub(&one, &erf);
    let ax = b.un("abs", x);
    let lt = b.cmp("LT", &ax, &one);
    b.select(&lt, &small, &large)
}

/// erf in f32 (Eigen's rational approximation on [-4, 4], clamped to [-1, 1]).
fn erf_f32(b: &mut Builder, x: &V) -> V {
    const ALPHA: [f64; 7] = [
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    ];
    const BETA: [f64; 5] = [
        -1.45660718464996e-05,
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    ];
    let (lo, hi) = (b.konst(x, -4.0), b.konst(x, 4.0));
    let xc = clamp(b, &lo, x, &hi);
    let x2 = b.mul(&xc, &xc);
    let alpha = poly(b, &x2, &ALPHA);
    let beta = poly(b, &x2, &BETA);
    // x · (α/β), where StableHLO writes (x · α)/β: the plugins run erf as XLA's own op, which
    // keeps erf of a tiny x (2x/√π) a normal number; x · α underflows to 0 first (the CPU
    // flushes subnormal results to zero).
    let ab = b.div(&alpha, &beta);
    let erf = b.mul(&xc, &ab);
    let (lo, hi) = (b.konst(x, -1.0), b.konst(x, 1.0));
    clamp(b, &lo, &erf, &hi)
}

fn clamp(b: &mut Builder, lo: &V, x: &V, hi: &V) -> V {
    b.op("stablehlo.clamp", &[lo, x, hi], vec![x.ty.clone()], Vec::new()).remove(0)
}

/// erfc in f32 (Cephes): 1 - x T(x²) below 1, exp(-x²)/|x| P(1/x²) or R(1/x²) above.
fn erfc_f32(b: &mut Builder, x: &V) -> V {
    const MAXLOG: f64 = 88.72283905206835;
    const P: [f64; 9] = [
        2.326819970068386E-2,
        -1.387039388740657E-1,
        3.687424674597105E-1,
        -5.824733027278666E-1,
        6.210004621745983E-1,
        -4.944515323274145E-1,
        3.404879937665872E-1,
        -2.741127028184656E-1,
        5.638259427386472E-1,
    ];
    const R: [f64; 8] = [
        -1.047766399936249E+1,
        1.297719955372516E+1,
        -7.495518717768503E+0,
        2.921019019210786E+0,
        -1.015265279202700E+0,
        4.218463358204948E-1,
        -2.820767439740514E-1,
        5.641895067754075E-1,
    ];
    const T: [f64; 7] = [
        7.853861353153693E-5,
        -8.010193625184903E-4,
        5.188327685732524E-3,
        -2.685381193529856E-2,
        1.128358514861418E-1,
        -3.761262582423300E-1,
        1.128379165726710E+0,
    ];
    // |x| >= 1.
    let x2 = b.mul(x, x);
    let z = b.un("negate", &x2);
    let ax = b.un("abs", x);
    let one = b.konst(x, 1.0);
    let rx2 = b.div(&one, &x2);
    let ez = b.un("exponential", &z);
    let rax = b.div(&one, &ax);
    let ez_rax = b.mul(&ez, &rax);
    let two = b.konst(x, 2.0);
    let lt2 = b.cmp("LT", &ax, &two);
    let p = poly(b, &rx2, &P);
    let r = poly(b, &rx2, &R);
    let pr = b.select(&lt2, &p, &r);
    let approx = b.mul(&ez_rax, &pr);
    let large = clamp_and_reflect(b, x, &z, &approx, MAXLOG);
    // |x| < 1: 1 - x T(x²).
    let x2b = b.mul(x, x);
    let t = poly(b, &x2b, &T);
    let erf = b.mul(x, &t);
    let small = b.sub(&one, &erf);
    let ax2 = b.un("abs", x);
    let lt = b.cmp("LT", &ax2, &one);
    b.select(&lt, &small, &large)
}

/// erf_inv(±1) = ±inf, where the approximation is indeterminate.
fn erf_inv_edges(b: &mut Builder, x: &V, result: &V) -> V {
    let ax = b.un("abs", x);
    let one = b.konst(x, 1.0);
    let at_one = b.cmp("EQ", &ax, &one);
    let inf = b.konst(x, f64::INFINITY);
    let xinf = b.mul(x, &inf);
    b.select(&at_one, &xinf, result)
}

/// w = -log1p(-x²).
fn erf_inv_w(b: &mut Builder, x: &V) -> V {
    let nx = b.un("negate", x);
    let mx2 = b.mul(x, &nx);
    let l = b.un("log_plus_one", &mx2);
    b.un("negate", &l)
}

fn erf_inv_f32(b: &mut Builder, x: &V) -> V {
    const LT5: [f64; 9] = [
        2.81022636e-08,
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ];
    const GE5: [f64; 9] = [
        -0.000200214257,
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ];
    let w = erf_inv_w(b, x);
    let five = b.konst(x, 5.0);
    let lt = b.cmp("LT", &w, &five);
    let coefficient = |b: &mut Builder, i: usize| {
        let (c1, c2) = (b.konst(x, LT5[i]), b.konst(x, GE5[i]));
        b.select(&lt, &c1, &c2)
    };
    let k25 = b.konst(x, 2.5);
    let wa = b.sub(&w, &k25);
    let sw = b.un("sqrt", &w);
    let k3 = b.konst(x, 3.0);
    let wb = b.sub(&sw, &k3);
    let w = b.select(&lt, &wa, &wb);
    let mut p = coefficient(b, 0);
    for i in 1..9 {
        let c = coefficient(b, i);
        let pw = b.mul(&p, &w);
        p = b.add(&c, &pw);
    }
    let result = b.mul(&p, x);
    erf_inv_edges(b, x, &result)
}

fn erf_inv_f64(b: &mut Builder, x: &V) -> V {
    const LT625: [f64; 23] = [
        -3.6444120640178196996e-21,
        -1.685059138182016589e-19,
        1.2858480715256400167e-18,
        1.115787767802518096e-17,
        -1.333171662854620906e-16,
        2.0972767875968561637e-17,
        6.6376381343583238325e-15,
        -4.0545662729752068639e-14,
        -8.1519341976054721522e-14,
        2.6335093153082322977e-12,
        -1.2975133253453532498e-11,
        -5.4154120542946279317e-11,
        1.051212273321532285e-09,
        -4.1126339803469836976e-09,
        -2.9070369957882005086e-08,
        4.2347877827932403518e-07,
        -1.3654692000834678645e-06,
        -1.3882523362786468719e-05,
        0.0001867342080340571352,
        -0.00074070253416626697512,
        -0.0060336708714301490533,
        0.24015818242558961693,
        1.6536545626831027356,
    ];
    const LT16: [f64; 19] = [
        2.2137376921775787049e-09,
        9.0756561938885390979e-08,
        -2.7517406297064545428e-07,
        1.8239629214389227755e-08,
        1.5027403968909827627e-06,
        -4.013867526981545969e-06,
        2.9234449089955446044e-06,
        1.2475304481671778723e-05,
        -4.7318229009055733981e-05,
        6.8284851459573175448e-05,
        2.4031110387097893999e-05,
        -0.0003550375203628474796,
        0.00095328937973738049703,
        -0.0016882755560235047313,
        0.0024914420961078508066,
        -0.0037512085075692412107,
        0.005370914553590063617,
        1.0052589676941592334,
        3.0838856104922207635,
    ];
    const GE16: [f64; 17] = [
        -2.7109920616438573243e-11,
        -2.5556418169965252055e-10,
        1.5076572693500548083e-09,
        -3.7894654401267369937e-09,
        7.6157012080783393804e-09,
        -1.4960026627149240478e-08,
        2.9147953450901080826e-08,
        -6.7711997758452339498e-08,
        2.2900482228026654717e-07,
        -9.9298272942317002539e-07,
        4.5260625972231537039e-06,
        -1.9681778105531670567e-05,
        7.5995277030017761139e-05,
        -0.00021503011930044477347,
        -0.00013871931833623122026,
        1.0103004648645343977,
        4.8499064014085844221,
    ];
    let w = erf_inv_w(b, x);
    let k625 = b.konst(x, 6.25);
    let lt625 = b.cmp("LT", &w, &k625);
    let k16 = b.konst(x, 16.0);
    let lt16 = b.cmp("LT", &w, &k16);
    let coefficient = |b: &mut Builder, i: usize| {
        let mut c = b.konst(x, LT625[i]);
        if i < 19 {
            let d = b.konst(x, LT16[i]);
            c = b.select(&lt625, &c, &d);
        }
        if i < 17 {
            let d = b.konst(x, GE16[i]);
            c = b.select(&lt16, &c, &d);
        }
        c
    };
    let sw = b.un("sqrt", &w);
    let k3125 = b.konst(x, 3.125);
    let wm = b.sub(&w, &k3125);
    let (k325, k5) = (b.konst(x, 3.25), b.konst(x, 5.0));
    let s2 = b.select(&lt16, &k325, &k5);
    let s2r = b.sub(&sw, &s2);
    let w = b.select(&lt625, &wm, &s2r);
    let mut p = coefficient(b, 0);
    for i in 1..17 {
        let c = coefficient(b, i);
        let pw = b.mul(&p, &w);
        p = b.add(&c, &pw);
    }
    for i in 17..19 {
        let c = coefficient(b, i);
        let pw = b.mul(&p, &w);
        let next = b.add(&c, &pw);
        p = b.select(&lt16, &next, &p);
    }
    for i in 19..23 {
        let c = coefficient(b, i);
        let pw = b.mul(&p, &w);
        let next = b.add(&c, &pw);
        p = b.select(&lt625, &next, &p);
    }
    let result = b.mul(&p, x);
    erf_inv_edges(b, x, &result)
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
