//! while (a loop over a tuple of state with a captured value; a data-dependent Collatz loop),
//! if (both branches taken, capturing outer values) and case (in range, a negative and a too
//! large index run the last branch) against numpy: exact (the loop's f32 arithmetic is done in
//! f32 by numpy too).

use pjrt_builder::{ComparisonDirection, Function};
use pjrt_client::ElementType;

use crate::harness::{assert_close_f32, assert_exact, assert_same_f32, data, run_on_both};

#[test]
fn control_flow_matches_numpy() {
    let d = data("control");
    let f = Function::new("control");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let n = f.parameter(ElementType::S32, &[]).unwrap();
    let zero = f.scalar(0i32).unwrap();
    let acc0 = f.splat(0f32, &d.dims("x")).unwrap();
    // (i, acc) -> (i + 1, acc * 0.5 + x) while i < n; x and n are captured.
    let looped = f
        .while_loop(
            &[&zero, &acc0],
            |_, s| s[0].compare(&n, ComparisonDirection::Lt),
            |f, s| {
                let half = f.splat(0.5f32, &[3])?;
                Ok(vec![s[0].add(&f.scalar(1i32)?)?, s[1].multiply(&half)?.add(&x)?])
            },
        )
        .unwrap();
    let collatz = f
        .while_loop(
            &[&f.scalar(27i32).unwrap(), &zero],
            |f, s| s[0].compare(&f.scalar(1i32)?, ComparisonDirection::Ne),
            |f, s| {
                let (one, two, three) = (f.scalar(1i32)?, f.scalar(2i32)?, f.scalar(3i32)?);
                let even = s[0].remainder(&two)?.compare(&f.scalar(0i32)?, ComparisonDirection::Eq)?;
                let next = even.select(&s[0].divide(&two)?, &s[0].multiply(&three)?.add(&one)?)?;
                Ok(vec![next, s[1].add(&one)?])
            },
        )
        .unwrap();
    let sum = x.reduce(&f.scalar(0f32).unwrap(), &[0], |_, a, b| a.add(b)).unwrap();
    let positive = sum.compare(&f.scalar(0f32).unwrap(), ComparisonDirection::Gt).unwrap();
    let chosen =
        f.if_else(&positive, |f| Ok(vec![x.multiply(&f.splat(2f32, &[3])?)?]), |_| Ok(vec![x.negate()?])).unwrap();
    let not_positive = positive.not().unwrap();
    let other =
        f.if_else(&not_positive, |f| Ok(vec![x.multiply(&f.splat(2f32, &[3])?)?]), |_| Ok(vec![x.negate()?])).unwrap();
    let mut cases = Vec::new();
    for offset in [4i32, 10, 5] {
        let index = n.subtract(&f.scalar(offset).unwrap()).unwrap();
        let picked = f
            .case(&index, 3, |f, k| {
                let k = f.splat(k as f32, &[3])?;
                Ok(vec![x.multiply(&k)?.add(&k)?])
            })
            .unwrap();
        cases.push(picked[0].reshape(&[1, 3]).unwrap());
    }
    let stacked = cases[0].concatenate(&[&cases[1], &cases[2]], 0).unwrap();
    let program = f.finish(&[&looped[1], &looped[0], &collatz[1], &chosen[0], &other[0], &stacked]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("x"), d.array("n")]) {
        assert_same_f32(plugin, "loop", &out[0], &d.array("loop_want"));
        assert_exact(plugin, "loop count", &out[1], &d.array("loop_count_want"));
        assert_exact(plugin, "collatz", &out[2], &d.array("collatz_want"));
        assert_same_f32(plugin, "if", &out[3], &d.array("if_want"));
        assert_same_f32(plugin, "if (false)", &out[4], &d.array("if_false_want"));
        // x * 0 + 0 may come out as -0.0 (the compiler folds x * 0 + 0 to x * 0): equal as numbers.
        assert_close_f32(plugin, "case", &out[5], &d.array("case_want"), 0.0, 0.0);
    }
}

#[test]
fn nested_regions_match_numpy() {
    let d = data("control");
    let f = Function::new("nested");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let n = f.parameter(ElementType::S32, &[]).unwrap();
    let zero = f.scalar(0i32).unwrap();
    let acc0 = f.splat(0f32, &[3]).unwrap();
    let looped = f
        .while_loop(
            &[&zero, &acc0],
            |_, s| s[0].compare(&n, ComparisonDirection::Lt),
            |f, s| {
                let even = s[0].remainder(&f.scalar(2i32)?)?.compare(&f.scalar(0i32)?, ComparisonDirection::Eq)?;
                // x and the loop state captured two regions deep.
                let step = f.if_else(&even, |_| Ok(vec![s[1].add(&x)?]), |_| Ok(vec![s[1].subtract(&x)?]))?;
                Ok(vec![s[0].add(&f.scalar(1i32)?)?, step[0].clone()])
            },
        )
        .unwrap();
    let acc = &looped[1];
    let total = f
        .case(&f.scalar(1i32).unwrap(), 2, |f, k| {
            if k == 0 {
                return Ok(vec![f.scalar(-1f32)?]);
            }
            Ok(vec![acc.reduce(&f.scalar(0f32)?, &[0], |_, a, b| a.add(b))?])
        })
        .unwrap();
    let program = f.finish(&[acc, &total[0]]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("x"), d.array("n")]) {
        assert_same_f32(plugin, "if inside while", &out[0], &d.array("nested_want"));
        // numpy sums in f64: 1e-5 relative.
        assert_close_f32(plugin, "reduce inside case", &out[1], &d.array("nested_sum_want"), 1e-5, 1e-6);
    }
}

#[test]
fn control_flow_edge_cases_match_numpy() {
    let d = data("control");
    let f = Function::new("control_edges");
    let x = f.parameter(ElementType::F32, &d.dims("x")).unwrap();
    let zeros = f.splat(0f32, &[3]).unwrap();
    // The condition fails at once: the loop returns its init.
    let never =
        f.while_loop(&[&zeros], |f, _| f.scalar(false), |f, s| Ok(vec![s[0].add(&f.splat(1f32, &[3])?)?])).unwrap();
    let one_branch = f.case(&f.scalar(3i32).unwrap(), 1, |f, _| Ok(vec![x.add(&f.splat(1f32, &[3])?)?])).unwrap();
    let empty = f
        .if_else(&f.scalar(true).unwrap(), |f| Ok(vec![f.splat(0f32, &[0, 2])?]), |f| Ok(vec![f.splat(1f32, &[0, 2])?]))
        .unwrap();
    // No results at all: an if for nothing (and an empty barrier) are fine.
    assert!(f.if_else(&f.scalar(true).unwrap(), |_| Ok(vec![]), |_| Ok(vec![])).unwrap().is_empty());
    assert!(f.optimization_barrier(&[]).unwrap().is_empty());
    let program = f.finish(&[&never[0], &one_branch[0], &empty[0]]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("x")]) {
        assert_same_f32(plugin, "a loop that never runs", &out[0], &d.array("zero_loop_want"));
        assert_same_f32(plugin, "one branch", &out[1], &d.array("one_branch_want"));
        assert_same_f32(plugin, "empty", &out[2], &d.array("empty_if_want"));
    }
}

#[test]
fn control_flow_is_checked() {
    let f = Function::new("errors");
    let x = f.parameter(ElementType::F32, &[3]).unwrap();
    let i = f.scalar(0i32).unwrap();
    let msg = |r: Result<Vec<pjrt_builder::Value<'_>>, pjrt_builder::BuildError>| r.unwrap_err().to_string();
    let e = msg(f.while_loop(&[&i, &x], |_, s| Ok(s[0].clone()), |_, s| Ok(s.to_vec())));
    assert_eq!(e, "stablehlo.while: the region returned tensor<i32> (the condition), expected tensor<i1>");
    let e = msg(f.while_loop(
        &[&i, &x],
        |f, s| s[0].compare(&f.scalar(3i32)?, ComparisonDirection::Lt),
        |_, s| Ok(vec![s[0].clone()]),
    ));
    assert_eq!(
        e,
        "stablehlo.while: the region returned tensor<i32> (the body), expected tensor<i32> and tensor<3xf32>"
    );
    let e = msg(f.if_else(&i, |_| Ok(vec![]), |_| Ok(vec![])));
    assert!(e.contains("the predicate must be a tensor<i1>"), "{e}");
    let p = f.scalar(true).unwrap();
    let e = msg(f.if_else(&p, |_| Ok(vec![x.clone()]), |_| Ok(vec![i.clone()])));
    assert_eq!(e, "stablehlo.if: the region returned tensor<i32> (the false branch), expected tensor<3xf32>");
    let e = msg(f.case(&i, 0, |_, _| Ok(vec![])));
    assert!(e.contains("at least one branch"), "{e}");
    let e = msg(f.case(&i, 2, |f, k| Ok(vec![if k == 0 { f.scalar(1f32)? } else { f.scalar(1i32)? }])));
    assert_eq!(e, "stablehlo.case: the region returned tensor<i32> (branch 1), expected tensor<f32>");
    // A value made inside a branch is gone after it.
    let mut inner = None;
    f.if_else(
        &p,
        |f| {
            let v = f.scalar(1f32)?;
            inner = Some(v.clone());
            Ok(vec![v])
        },
        |f| Ok(vec![f.scalar(2f32)?]),
    )
    .unwrap();
    let e = inner.unwrap().add(&f.scalar(1f32).unwrap()).unwrap_err().to_string();
    assert!(e.contains("inside a region that is finished"), "{e}");
}
