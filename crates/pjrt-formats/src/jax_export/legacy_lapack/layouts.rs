//! jaxlib's layouts of its pre-FFI LAPACK calls (its `lapack.py` of JAX 0.4.30 and 0.4.38):
//! for each routine, which operands are descriptors and which results are workspaces.

use pjrt_stablehlo::ir::Attr;

use super::{i32_attr, u8_attr, Call, Plan, Scalar};
use crate::error::LegacyLapackError;

/// The plan for a pre-FFI call of `routine` (type `letter`), from jaxlib's layout of its operands
/// and results (jaxlib 0.4.30's and 0.4.38's `lapack.py`).
pub(super) fn plan_legacy(call: &Call<'_>, letter: char, routine: &str) -> Result<Plan, LegacyLapackError> {
    if call.op.attr("indices_of_shape_operands").is_some() {
        // A shape-polymorphic module passes each result's shape as one more operand until it
        // is refined (which drops them), and its descriptors are known only then.
        return Err(call.refuse(
            "it is of a shape-polymorphic module not refined yet (indices_of_shape_operands): refine the module for \
             the shapes of its inputs first (JaxExport::program_for does)",
        ));
    }
    let arity = |n: usize| {
        if call.op.operands.len() == n {
            Ok(())
        } else {
            Err(call.refuse(format!("it has {} operands, jaxlib wrote {n}", call.op.operands.len())))
        }
    };
    let complex = matches!(letter, 'c' | 'z');
    let uplo = |lower: bool| u8_attr(if lower { b'L' } else { b'U' });
    let ffi = |r: &str| format!("lapack_{letter}{r}_ffi");
    let plan = |target, operands: &[usize], results: &[usize], zero_results: &[usize], config| Plan {
        target,
        operands: operands.to_vec(),
        results: results.to_vec(),
        zero_results: zero_results.to_vec(),
        config,
    };
    Ok(match routine {
        "potrf" => {
            // lower, batch, n, a -> a, info
            arity(4)?;
            let (b, m, n) = call.matrix(3)?;
            call.expect(1, "batch", b)?;
            call.expect(2, "n", n)?;
            if m != n {
                return Err(call.refuse(format!("the matrix is {m}x{n}, not square")));
            }
            let lower = call.flag(0, "lower")?;
            plan(ffi("potrf"), &[3], &[0, 1], &[], vec![("uplo".into(), uplo(lower))])
        }
        "getrf" => {
            // batch, m, n, a -> a, ipiv, info
            arity(4)?;
            let (b, m, n) = call.matrix(3)?;
            call.expect(0, "batch", b)?;
            call.expect(1, "m", m)?;
            call.expect(2, "n", n)?;
            plan(ffi("getrf"), &[3], &[0, 1, 2], &[], vec![])
        }
        "geqrf" => {
            // batch, m, n, lwork, a -> a, tau, info, work
            arity(5)?;
            let (b, m, n) = call.matrix(4)?;
            call.expect(0, "batch", b)?;
            call.expect(1, "m", m)?;
            call.expect(2, "n", n)?;
            call.int(3, "lwork")?;
            plan(ffi("geqrf"), &[4], &[0, 1], &[2], vec![])
        }
        "orgqr" | "ungqr" => {
            // batch, m, n, k, lwork, a, tau -> a, info, work
            arity(7)?;
            let (b, m, n) = call.matrix(5)?;
            call.expect(0, "batch", b)?;
            call.expect(1, "m", m)?;
            call.expect(2, "n", n)?;
            let k = call.dims(6)?.last().copied().unwrap_or(0);
            call.expect(3, "k", k)?;
            call.int(4, "lwork")?;
            plan(ffi(routine), &[5, 6], &[0], &[1], vec![])
        }
        "syevd" | "heevd" => {
            // lower, batch, n, a -> v, w, info, workspaces...
            arity(4)?;
            let (b, _, n) = call.matrix(3)?;
            call.expect(1, "batch", b)?;
            call.expect(2, "n", n)?;
            let lower = call.flag(0, "lower")?;
            let config = vec![("mode".into(), u8_attr(b'V')), ("uplo".into(), uplo(lower))];
            plan(ffi(routine), &[3], &[0, 1, 2], &[], config)
        }
        "gesdd" => {
            // full_matrices, compute_uv, batch, m, n, lwork, a -> a, s, u, vt, info, workspaces...
            arity(7)?;
            let (b, m, n) = call.matrix(6)?;
            let full = call.flag(0, "full_matrices")?;
            let uv = call.flag(1, "compute_uv")?;
            call.expect(2, "batch", b)?;
            call.expect(3, "m", m)?;
            call.expect(4, "n", n)?;
            call.int(5, "lwork")?;
            let mode = match (uv, full) {
                (false, _) => b'N',
                (true, true) => b'A',
                (true, false) => b'S',
            };
            plan(ffi("gesdd"), &[6], &[0, 1, 2, 3, 4], &[], vec![("mode".into(), u8_attr(mode))])
        }
        "geev" => {
            // batch, n, jobvl, jobvr, a -> workspaces..., w (wr, wi), vl, vr, info
            arity(5)?;
            let (b, _, n) = call.matrix(4)?;
            call.expect(0, "batch", b)?;
            call.expect(1, "n", n)?;
            let left = call.letter(2, "jobvl", "VN")?;
            let right = call.letter(3, "jobvr", "VN")?;
            let results: &[usize] = if complex { &[2, 3, 4, 5] } else { &[3, 4, 5, 6, 7] };
            let config = vec![("compute_left".into(), u8_attr(left)), ("compute_right".into(), u8_attr(right))];
            plan(ffi("geev"), &[4], results, &[], config)
        }
        "gees" => {
            // batch, n, jobvs, sort, a -> t, (wr, wi | rwork, w), vs, sdim, info
            arity(5)?;
            let (b, _, n) = call.matrix(4)?;
            call.expect(0, "batch", b)?;
            call.expect(1, "n", n)?;
            let jobvs = call.letter(2, "jobvs", "VN")?;
            call.letter(3, "sort", "N").map_err(|_| {
                call.refuse("it sorts the eigenvalues (sort = 'S'), with a select function the call does not carry")
            })?;
            let results: &[usize] = if complex { &[0, 3, 2, 4, 5] } else { &[0, 3, 1, 2, 4, 5] };
            let config = vec![("mode".into(), u8_attr(jobvs)), ("sort".into(), u8_attr(b'N'))];
            plan(ffi("gees"), &[4], results, &[], config)
        }
        "gehrd" => {
            // n, ilo, ihi, lda, batch, lwork, a -> a, tau, info, work
            arity(7)?;
            let (b, _, n) = call.matrix(6)?;
            call.expect(0, "n", n)?;
            call.expect(3, "lda", n.max(1))?;
            call.expect(4, "batch", b)?;
            call.int(5, "lwork")?;
            let (low, high) = (call.int(1, "ilo")?, call.int(2, "ihi")?);
            let config = vec![("high".into(), i32_attr(high)), ("low".into(), i32_attr(low))];
            plan(ffi("gehrd"), &[6], &[0, 1, 2], &[], config)
        }
        "sytrd" | "hetrd" => {
            // n, lower, lda, batch, lwork, a -> a, d, e, tau, info, work
            arity(6)?;
            let (b, _, n) = call.matrix(5)?;
            call.expect(0, "n", n)?;
            let lower = call.flag(1, "lower")?;
            call.expect(2, "lda", n.max(1))?;
            call.expect(3, "batch", b)?;
            call.int(4, "lwork")?;
            plan(ffi(routine), &[5], &[0, 1, 2, 3, 4], &[], vec![("uplo".into(), uplo(lower))])
        }
        "trsm" => {
            // left_side, lower, trans (0 N, 1 T, 2 C), diag (unit), m, n, batch, alpha, a, b -> b
            arity(10)?;
            let (batch, m, n) = call.matrix(9)?;
            let left = call.flag(0, "left_side")?;
            let lower = call.flag(1, "lower")?;
            let trans = match call.int(2, "trans_a")? {
                0 => b'N',
                1 => b'T',
                2 => b'C',
                v => return Err(call.refuse(format!("operand 2 (trans_a) is {v}, not 0, 1 or 2"))),
            };
            let unit = call.flag(3, "diag")?;
            call.expect(4, "m", m)?;
            call.expect(5, "n", n)?;
            call.expect(6, "batch", batch)?;
            alpha_is_one(call, 7)?;
            let config = vec![
                ("diag".into(), u8_attr(if unit { b'U' } else { b'N' })),
                ("side".into(), u8_attr(if left { b'L' } else { b'R' })),
                ("trans_x".into(), u8_attr(trans)),
                ("uplo".into(), uplo(lower)),
            ];
            plan(format!("lapack_{letter}trsm_ffi"), &[8, 9], &[0], &[], config)
        }
        other => return Err(call.refuse(format!("no upgrade is known for {other}"))),
    })
}

/// Checks that operand `i` of a triangular solve, its `alpha`, is the constant 1 (as JAX's
/// lowering always writes it; today's FFI call has no `alpha`).
fn alpha_is_one(call: &Call<'_>, i: usize) -> Result<(), LegacyLapackError> {
    match call.op.operands.get(i).and_then(|id| call.scope.scalars.get(id)) {
        Some(Scalar::Float(re, im)) if *re == 1.0 && *im == 0.0 => Ok(()),
        Some(Scalar::Float(re, im)) => {
            Err(call
                .refuse(format!("operand {i} (alpha) is {re}{im:+}i, not 1: today's call solves with alpha = 1 only")))
        }
        _ => Err(call.refuse(format!("operand {i} (alpha) is not a constant"))),
    }
}

/// JAX 0.5.x's `lapack_?trsm_ffi(a, b, alpha)`: the same call without `alpha`, which must be 1.
pub(super) fn plan_trsm_alpha(call: &Call<'_>) -> Result<Plan, LegacyLapackError> {
    alpha_is_one(call, 2)?;
    let config = match call.op.attr("mhlo.backend_config") {
        Some(Attr::Dict(entries)) => entries.clone(),
        _ => return Err(call.refuse("it has no mhlo.backend_config dictionary")),
    };
    Ok(Plan { target: call.target.to_owned(), operands: vec![0, 1], results: vec![0], zero_results: vec![], config })
}
