//! erf, erfc (Cephes' polynomials in f64, Eigen's and Cephes' in f32) and erf_inv (Giles'
//! approximation), as ChloLegalizeToStablehlo.cpp writes them. `f16` and `bf16` are computed
//! in `f32`, as there.

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
