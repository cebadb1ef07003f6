//! JAX's linear algebra without JAX: the `jax.export` models of tests/data/lapack/jax-0.10.2
//! (tools/gen_lapack_testdata.py: every function of jnp.linalg and jax.scipy.linalg that lowers
//! to one of the 48 stable `lapack_*_ffi` targets, in f32, f64, complex64 and complex128, mostly
//! batched, with the edge cases) run on both CPU plugins with no option set — the provider of
//! pjrt-lapack that the first `Runner` installs registers their handlers as they are compiled —
//! and give JAX's answers:
//! within the case's tolerance where LAPACK's output is determined, by the invariant the
//! manifest names where it leaves a sign, phase or order free (the manifest's "invariants"
//! spell out each formula; this file implements them the same way).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pjrt_client::num_complex::Complex64 as C;
use pjrt_client::Client;
use pjrt_formats::jax_export::JaxExport;
use pjrt_formats::npy::{Dtype, NpyArray};
use serde_json::Value as Json;

use crate::support;

/// The JAX version whose folder has every case's inputs (and the outputs other versions share).
const REFERENCE: &str = "0.10.2";

fn data_dir(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../tests/data/lapack/jax-{version}"))
}

fn manifest(version: &str) -> Json {
    serde_json::from_str(&std::fs::read_to_string(data_dir(version).join("manifest.json")).unwrap()).unwrap()
}

/// An array read as complex numbers (real ones with zero imaginary parts), or integers.
#[derive(Clone, Debug)]
struct Arr {
    dims: Vec<usize>,
    values: Vec<C>,
    float: bool,
}

fn arr(a: &NpyArray) -> Arr {
    let f32s =
        |d: &[u8]| d.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect::<Vec<_>>();
    let f64s = |d: &[u8]| d.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    let pairs = |v: Vec<f64>| v.chunks_exact(2).map(|p| C::new(p[0], p[1])).collect::<Vec<_>>();
    let (values, float) = match a.dtype {
        Dtype::F32 => (f32s(&a.data).into_iter().map(|r| C::new(r, 0.0)).collect(), true),
        Dtype::F64 => (f64s(&a.data).into_iter().map(|r| C::new(r, 0.0)).collect(), true),
        Dtype::C64 => (pairs(f32s(&a.data)), true),
        Dtype::C128 => (pairs(f64s(&a.data)), true),
        Dtype::I32 => (
            a.data.chunks_exact(4).map(|c| C::new(i32::from_le_bytes(c.try_into().unwrap()) as f64, 0.0)).collect(),
            false,
        ),
        Dtype::I64 => (
            a.data.chunks_exact(8).map(|c| C::new(i64::from_le_bytes(c.try_into().unwrap()) as f64, 0.0)).collect(),
            false,
        ),
        Dtype::Bool => (a.data.iter().map(|&b| C::new(b as f64, 0.0)).collect(), false),
        other => panic!("no comparison for {other}"),
    };
    Arr { dims: a.dims.iter().map(|&d| d as usize).collect(), values, float }
}

/// A batch of matrices: `count` of `rows` x `cols`, row-major.
#[derive(Clone, Debug)]
struct Mats {
    count: usize,
    rows: usize,
    cols: usize,
    v: Vec<C>,
}

impl Mats {
    fn of(a: &Arr) -> Mats {
        let [batch @ .., rows, cols] = a.dims.as_slice() else { panic!("not matrices: {:?}", a.dims) };
        Mats { count: batch.iter().product(), rows: *rows, cols: *cols, v: a.values.clone() }
    }
    fn at(&self, b: usize, i: usize, j: usize) -> C {
        self.v[(b * self.rows + i) * self.cols + j]
    }
    fn new(count: usize, rows: usize, cols: usize, f: impl Fn(usize, usize, usize) -> C) -> Mats {
        let mut v = Vec::with_capacity(count * rows * cols);
        for b in 0..count {
            for i in 0..rows {
                for j in 0..cols {
                    v.push(f(b, i, j));
                }
            }
        }
        Mats { count, rows, cols, v }
    }
    fn mul(&self, o: &Mats) -> Mats {
        assert_eq!((self.count, self.cols), (o.count, o.rows));
        Mats::new(self.count, self.rows, o.cols, |b, i, j| {
            (0..self.cols).map(|k| self.at(b, i, k) * o.at(b, k, j)).sum()
        })
    }
    fn adjoint(&self) -> Mats {
        Mats::new(self.count, self.cols, self.rows, |b, i, j| self.at(b, j, i).conj())
    }
    /// Columns `..k` (`k` <= cols).
    fn left(&self, k: usize) -> Mats {
        Mats::new(self.count, self.rows, k, |b, i, j| self.at(b, i, j))
    }
    /// Rows `..k`.
    fn top(&self, k: usize) -> Mats {
        Mats::new(self.count, k, self.cols, |b, i, j| self.at(b, i, j))
    }
    /// Scales column j of batch b by d[b][j].
    fn scale_cols(&self, d: &[C]) -> Mats {
        Mats::new(self.count, self.rows, self.cols, |b, i, j| self.at(b, i, j) * d[b * self.cols + j])
    }
}

fn amax_diff(a: &Mats, b: &Mats) -> f64 {
    assert_eq!((a.count, a.rows, a.cols), (b.count, b.rows, b.cols));
    a.v.iter().zip(&b.v).map(|(x, y)| (x - y).norm()).fold(0.0, f64::max)
}

fn amax(v: &[C]) -> f64 {
    v.iter().map(|x| x.norm()).fold(0.0, f64::max)
}

fn identity_gap(m: &Mats) -> f64 {
    let eye = Mats::new(m.count, m.rows, m.cols, |_, i, j| C::new((i == j) as u8 as f64, 0.0));
    amax_diff(m, &eye)
}

/// JAX's `close`: NaN matches NaN, infinities match exactly, integers exactly.
fn close(ours: &Arr, jax: &Arr, rtol: f64, atol: f64) -> Result<(), String> {
    if ours.dims != jax.dims {
        return Err(format!("shape {:?}, JAX's {:?}", ours.dims, jax.dims));
    }
    for (i, (o, j)) in ours.values.iter().zip(&jax.values).enumerate() {
        let ok = if !jax.float {
            o == j
        } else {
            let part = |o: f64, j: f64| {
                if j.is_nan() {
                    o.is_nan()
                } else if j.is_infinite() {
                    o == j
                } else {
                    !o.is_nan() && (o - j).abs() <= atol + rtol * j.abs()
                }
            };
            // Complex values: each part (JAX compares |ours - jax| <= atol + rtol |jax|; the
            // parts' bound is that one per part, as loose as the modulus within a factor √2).
            if j.re.is_finite() && j.im.is_finite() && o.re.is_finite() && o.im.is_finite() {
                (o - j).norm() <= atol + rtol * j.norm()
            } else {
                part(o.re, j.re) && part(o.im, j.im)
            }
        };
        if !ok {
            return Err(format!("element {i}: {o}, JAX gave {j} (rtol {rtol}, atol {atol})"));
        }
    }
    Ok(())
}

/// Matches each value of `ours` to the nearest unused one of `jax`.
fn match_multiset(ours: &[C], jax: &[C], tol: f64) -> bool {
    let mut left: Vec<C> = jax.to_vec();
    ours.len() == jax.len()
        && ours.iter().all(|x| {
            let Some((k, d)) = left.iter().map(|r| (x - r).norm()).enumerate().min_by(|a, b| a.1.total_cmp(&b.1))
            else {
                return false;
            };
            left.remove(k);
            d <= tol
        })
}

/// The eigenvalues of a quasi-triangular (real Schur) or triangular matrix: its 1x1 and 2x2
/// diagonal blocks'.
fn block_eigenvalues(t: &Mats, b: usize) -> Vec<C> {
    let n = t.rows;
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        if i + 1 < n && t.at(b, i + 1, i).norm() != 0.0 {
            let (p, q, r, s) = (t.at(b, i, i), t.at(b, i, i + 1), t.at(b, i + 1, i), t.at(b, i + 1, i + 1));
            let half_trace = (p + s) / 2.0;
            let disc = (half_trace * half_trace - (p * s - q * r)).sqrt();
            out.extend([half_trace + disc, half_trace - disc]);
            i += 2;
        } else {
            out.push(t.at(b, i, i));
            i += 1;
        }
    }
    out
}

fn hermitian_from(a: &Mats, uplo: &str) -> Mats {
    Mats::new(a.count, a.rows, a.cols, |b, i, j| {
        let lower = uplo == "L";
        match i.cmp(&j) {
            std::cmp::Ordering::Equal => C::new(a.at(b, i, i).re, 0.0),
            std::cmp::Ordering::Greater if lower => a.at(b, i, j),
            std::cmp::Ordering::Less if !lower => a.at(b, i, j),
            _ => a.at(b, j, i).conj(),
        }
    })
}

/// Item `b` of every array (its first dimension).
fn item(a: &Arr, b: usize) -> Arr {
    let per = a.values.len() / a.dims[0].max(1);
    Arr { dims: a.dims[1..].to_vec(), values: a.values[b * per..(b + 1) * per].to_vec(), float: a.float }
}

fn with_batch_of_one(a: &Arr) -> Arr {
    Arr { dims: std::iter::once(1).chain(a.dims.iter().copied()).collect(), ..a.clone() }
}

fn invariant(case: &Json, kind: &str, ins: &[Arr], ours: &[Arr], jax: &[Arr]) -> Vec<String> {
    let (rtol, atol) = (case["rtol"].as_f64().unwrap(), case["atol"].as_f64().unwrap());
    let a = &ins[0];
    let n = a.dims.last().copied().unwrap_or(1) as f64;
    let scale = amax(&a.values).max(1.0);
    let mut bad = Vec::new();
    let mut need = |ok: bool, what: &str| {
        if !ok {
            bad.push(what.to_owned());
        }
    };
    match kind {
        "values" => {
            for (o, (x, y)) in ours.iter().zip(jax).enumerate() {
                if let Err(e) = close(x, y, rtol, atol) {
                    need(false, &format!("output {o}: {e}"));
                }
            }
        }
        "all_nan" => need(
            ours.iter().filter(|o| o.float).all(|o| o.values.iter().all(|v| v.re.is_nan() || v.im.is_nan())),
            "all NaN",
        ),
        "eigh_reconstruct" => {
            let (w, v) = (&ours[0], Mats::of(&ours[1]));
            need(close(w, &jax[0], rtol, atol).is_ok(), "w equals JAX's");
            let ah = hermitian_from(&Mats::of(a), case["uplo"].as_str().unwrap());
            need(amax_diff(&ah.mul(&v), &v.scale_cols(&w.values)) <= rtol * scale * n, "A V = V diag(w)");
            need(identity_gap(&v.adjoint().mul(&v)) <= rtol * n, "V^H V = I");
        }
        "svd_reconstruct" => {
            let (u, s, vh) = (Mats::of(&ours[0]), &ours[1], Mats::of(&ours[2]));
            let am = Mats::of(a);
            let (m, k) = (am.rows as f64, am.rows.min(am.cols));
            need(close(s, &jax[1], rtol, atol).is_ok(), "s equals JAX's");
            let rec = u.left(k).scale_cols(&s.values).mul(&vh.top(k));
            need(amax_diff(&rec, &am) <= rtol * scale * m.max(n), "U S Vh = A");
            need(identity_gap(&u.adjoint().mul(&u)) <= rtol * m, "U^H U = I");
            need(identity_gap(&vh.mul(&vh.adjoint())) <= rtol * n, "Vh Vh^H = I");
        }
        "eig_residual" | "eigvals_multiset" => {
            let w = &ours[0];
            let per = a.dims.last().copied().unwrap_or(0);
            for b in 0..w.values.len() / per.max(1) {
                let (o, j) = (&w.values[b * per..(b + 1) * per], &jax[0].values[b * per..(b + 1) * per]);
                need(match_multiset(o, j, atol + rtol * scale * n), &format!("eigenvalues of item {b}"));
            }
            if kind == "eig_residual" {
                let (am, v) = (Mats::of(a), Mats::of(&ours[1]));
                need(amax_diff(&am.mul(&v), &v.scale_cols(&w.values)) <= rtol * scale * n, "A V = V diag(w)");
                let norms_ok = (0..v.count).all(|b| {
                    (0..v.cols).all(|j| {
                        let norm = (0..v.rows).map(|i| v.at(b, i, j).norm_sqr()).sum::<f64>().sqrt();
                        (norm - 1.0).abs() <= rtol * n
                    })
                });
                need(norms_ok, "columns of V have norm 1");
            }
        }
        "schur_reconstruct" | "hessenberg_reconstruct" => {
            let (t, z) = (Mats::of(&ours[0]), Mats::of(&ours[1]));
            let am = Mats::of(a);
            need(amax_diff(&z.mul(&t).mul(&z.adjoint()), &am) <= rtol * scale * n, "Z T Z^H = A");
            need(identity_gap(&z.adjoint().mul(&z)) <= rtol * n, "Z^H Z = I");
            let below = (0..t.count)
                .all(|b| (0..t.rows).all(|i| (0..t.cols).all(|j| i <= j + 1 || t.at(b, i, j).norm() == 0.0)));
            need(below, "zero below the first subdiagonal");
            if kind == "schur_reconstruct" {
                let sub = |b: usize, i: usize| t.at(b, i + 1, i).norm() != 0.0;
                if case["params"]["output"] == "complex" {
                    need((0..t.count).all(|b| (0..t.rows.saturating_sub(1)).all(|i| !sub(b, i))), "T upper triangular");
                } else {
                    need(
                        (0..t.count).all(|b| (0..t.rows.saturating_sub(2)).all(|i| !(sub(b, i) && sub(b, i + 1)))),
                        "2x2 blocks do not touch",
                    );
                }
                let tj = Mats::of(&jax[0]);
                for b in 0..t.count {
                    need(
                        match_multiset(&block_eigenvalues(&t, b), &block_eigenvalues(&tj, b), atol + rtol * scale * n),
                        &format!("eigenvalues of T {b}"),
                    );
                }
            }
        }
        "nonfinite" => {
            need(
                ours.iter()
                    .filter(|o| o.float)
                    .any(|o| o.values.iter().any(|v| !v.re.is_finite() || !v.im.is_finite())),
                "some output is not finite",
            );
            for (o, (x, y)) in ours.iter().zip(jax).enumerate() {
                let finite = |v: &C| v.re.is_finite() && v.im.is_finite();
                let ok = x.dims == y.dims
                    && x.values.iter().zip(&y.values).all(|(p, q)| {
                        if !finite(q) {
                            !finite(p)
                        } else {
                            !y.float || (p - q).norm() <= atol + rtol * q.norm()
                        }
                    });
                need(ok, &format!("output {o}: finite values equal JAX's, non-finite ones are not finite"));
            }
        }
        "nan_propagates" => {
            let is_nan = |v: &C| v.re.is_nan() || v.im.is_nan();
            need(ours.iter().filter(|o| o.float).any(|o| item(o, 0).values.iter().any(is_nan)), "item 0 has a NaN");
            for (o, (x, y)) in ours.iter().zip(jax).enumerate().filter(|(_, (x, _))| x.float) {
                let (x0, y0) = (item(x, 0), item(y, 0));
                let ok = x0.values.iter().zip(&y0.values).all(|(p, q)| {
                    if is_nan(q) {
                        is_nan(p)
                    } else {
                        is_nan(p) || (p - q).norm() <= atol + rtol * q.norm()
                    }
                });
                need(ok, &format!("output {o} item 0: NaN where JAX's is, else JAX's value or NaN"));
            }
            let rest: Vec<Arr> = ours.iter().map(|o| with_batch_of_one(&item(o, 1))).collect();
            let rest_jax: Vec<Arr> = jax.iter().map(|o| with_batch_of_one(&item(o, 1))).collect();
            let rest_in: Vec<Arr> = ins.iter().map(|o| with_batch_of_one(&item(o, 1))).collect();
            let then = case["finite_items_check"].as_str().unwrap_or("values");
            for e in invariant(case, then, &rest_in, &rest, &rest_jax) {
                need(false, &format!("item 1: {e}"));
            }
        }
        other => need(false, &format!("unknown invariant {other}")),
    }
    bad
}

/// Runs one case of JAX `version`'s models: its inputs are the reference version's, its
/// outputs its own where the manifest's `own_outputs` lists them, else the reference's.
fn run_case(client: &Client, version: &str, case: &Json) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let (dir, reference) = (data_dir(version).join(name), data_dir(REFERENCE).join(name));
    let model = JaxExport::read(dir.join("model.jaxexport")).map_err(|e| e.to_string())?;
    let read = |dir: &Path, name: String| NpyArray::read(&dir.join(name)).unwrap();
    let own: Vec<u64> = case
        .get("own_outputs")
        .map_or_else(Vec::new, |o| o.as_array().unwrap().iter().map(|i| i.as_u64().unwrap()).collect());
    let inputs: Vec<NpyArray> =
        (0..case["inputs"].as_array().unwrap().len()).map(|i| read(&reference, format!("in{i}.npy"))).collect();
    let expected: Vec<Arr> = (0..case["outputs"].as_array().unwrap().len())
        .map(|i| {
            let from = if version == REFERENCE || own.contains(&(i as u64)) { &dir } else { &reference };
            arr(&read(from, format!("out{i}.npy")))
        })
        .collect();
    let outputs = model.run(client, &inputs).map_err(|e| e.to_string())?;
    if outputs.len() != expected.len() {
        return Err(format!("{} outputs, JAX gave {}", outputs.len(), expected.len()));
    }
    let ours: Vec<Arr> = outputs.iter().map(arr).collect();
    for (o, (x, y)) in ours.iter().zip(&expected).enumerate() {
        if x.dims != y.dims {
            return Err(format!("output {o}: shape {:?}, JAX's {:?}", x.dims, y.dims));
        }
    }
    let ins: Vec<Arr> = inputs.iter().map(arr).collect();
    let bad = invariant(case, case["check"].as_str().unwrap(), &ins, &ours, &expected);
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{}: {}", case["check"].as_str().unwrap(), bad.join("; ")))
    }
}

/// Runs every case JAX `version` could export on `plugin`; returns the targets the models call
/// and how many cases ran.
fn run_all(plugin: &str, version: &str) -> (BTreeSet<String>, usize) {
    let client = support::client(plugin, 1);
    let m = manifest(version);
    assert_eq!(m["jax"], version);
    let cases: Vec<&Json> = m["cases"].as_array().unwrap().iter().filter(|c| c["exportable"] != false).collect();
    let mut failures = Vec::new();
    let mut targets = BTreeSet::new();
    for case in &cases {
        targets.extend(case["targets"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()));
        if let Err(e) = run_case(&client, version, case) {
            failures.push(format!("{}: {e}", case["name"].as_str().unwrap()));
        }
    }
    assert!(pjrt_client::ffi::providers().contains(&pjrt_lapack::PROVIDER_NAME.to_owned()), "installed by Runner");
    assert!(
        failures.is_empty(),
        "{plugin}, JAX {version}: {} of {} LAPACK models differ from JAX:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    (targets, cases.len())
}

/// The 48 stable FFI targets.
fn all_ffi_targets() -> BTreeSet<String> {
    pjrt_lapack::TARGETS.iter().map(|t| t.to_string()).collect()
}

#[test]
fn jax_linear_algebra_on_cpu_0_115() {
    let (targets, _) = run_all("cpu", REFERENCE);
    assert_eq!(targets, all_ffi_targets(), "the models call each of the 48 targets");
}

#[test]
fn jax_linear_algebra_on_cpu_0_106() {
    let (targets, _) = run_all("cpu-0.106", REFERENCE);
    assert_eq!(targets, all_ffi_targets(), "the models call each of the 48 targets");
}

/// The exports of every other JAX release since 0.4.30 (tools/gen_lapack_testdata.py --jax):
/// the same cases, each run where that JAX could export it. JAX 0.4.30 and 0.4.38 wrote the
/// LAPACK kernels of before their FFI form (`lapack_sgetrf`, `blas_strsm`, ...) and 0.5.3 a
/// three-operand `lapack_?trsm_ffi`: upgraded on load. `cases` is how many each could export
/// (the manifest lists the others with the reason).
fn run_version(version: &str, cases: usize, legacy: bool) {
    let (targets, ran) = run_all("cpu", version);
    assert_eq!(ran, cases, "JAX {version}: cases exported");
    let old: Vec<&String> = targets.iter().filter(|t| !all_ffi_targets().contains(*t)).collect();
    assert_eq!(!old.is_empty(), legacy, "JAX {version}: pre-FFI targets {old:?}");
}

#[test]
fn jax_0_4_30_linear_algebra_on_cpu_0_115() {
    run_version("0.4.30", 194, true);
}

#[test]
fn jax_0_4_38_linear_algebra_on_cpu_0_115() {
    run_version("0.4.38", 206, true);
}

#[test]
fn jax_0_5_3_linear_algebra_on_cpu_0_115() {
    run_version("0.5.3", 208, false);
}

#[test]
fn jax_0_6_2_linear_algebra_on_cpu_0_115() {
    run_version("0.6.2", 208, false);
}

#[test]
fn jax_0_7_2_linear_algebra_on_cpu_0_115() {
    run_version("0.7.2", 208, false);
}

#[test]
fn jax_0_8_3_linear_algebra_on_cpu_0_115() {
    run_version("0.8.3", 208, false);
}

#[test]
fn jax_0_9_2_linear_algebra_on_cpu_0_115() {
    run_version("0.9.2", 208, false);
}

#[test]
fn jax_0_12_0_1_linear_algebra_on_cpu_0_115() {
    run_version("0.12.0.1", 208, false);
}
