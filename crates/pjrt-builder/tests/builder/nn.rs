//! The lax-style helpers (src/nn.rs) against numpy, on both CPU plugins. Tolerances (f32):
//! matmul, sums, means, variances 1e-5 relative (1e-5 absolute near zero: numpy sums in f64, the
//! plugin in f32 in its own order); softmax, log-softmax, log-sum-exp, gelu, silu and the
//! cross-entropies 1e-5 relative, 1e-6 absolute (XLA's exp/log/tanh are within a few ulp);
//! max, min bit-exact, relu exact (but for the sign of zero); integer results and indices exact.

use pjrt_builder::Function;
use pjrt_client::ElementType;

use crate::harness::{assert_close_f32, assert_exact, assert_same_f32, data, run_on_both};

#[test]
fn matmul_of_every_rank_pairing_matches_numpy() {
    let d = data("nn");
    let cases = ["vv", "mv", "vm", "mm", "sm", "ss"];
    let f = Function::new("matmuls");
    let mut outputs = Vec::new();
    let mut inputs = Vec::new();
    for case in cases {
        let a = f.parameter(ElementType::F32, &d.dims(&format!("mm_{case}_a"))).unwrap();
        let b = f.parameter(ElementType::F32, &d.dims(&format!("mm_{case}_b"))).unwrap();
        outputs.push(a.matmul(&b).unwrap());
        inputs.push(d.array(&format!("mm_{case}_a")));
        inputs.push(d.array(&format!("mm_{case}_b")));
    }
    let program = f.finish(&outputs.iter().collect::<Vec<_>>()).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        for (case, got) in cases.iter().zip(&out) {
            assert_close_f32(plugin, case, got, &d.array(&format!("mm_{case}_want")), 1e-5, 1e-5);
        }
    }
}

#[test]
fn reductions_mean_and_variance_match_numpy() {
    let d = data("nn");
    let f = Function::new("nn_reductions");
    let x = f.parameter(ElementType::F32, &d.dims("r_x")).unwrap();
    let xi = f.parameter(ElementType::S32, &d.dims("r_xi")).unwrap();
    let nan = f.parameter(ElementType::F32, &d.dims("r_nan")).unwrap();
    let outputs = [
        x.reduce_sum(&[0, 2]).unwrap(),
        x.reduce_max(&[1]).unwrap(),
        x.reduce_min(&[0, 1]).unwrap(),
        x.mean(&[0, 2]).unwrap(),
        x.mean(&[0, 1, 2]).unwrap(),
        x.mean(&[]).unwrap(),
        x.variance(&[2]).unwrap(),
        xi.reduce_sum(&[1]).unwrap(),
        xi.reduce_max(&[0]).unwrap(),
        xi.reduce_min(&[1]).unwrap(),
        nan.reduce_max(&[1]).unwrap(),
    ];
    let program = f.finish(&outputs.iter().collect::<Vec<_>>()).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("r_x"), d.array("r_xi"), d.array("r_nan")]) {
        assert_close_f32(plugin, "sum", &out[0], &d.array("r_sum_want"), 1e-5, 1e-5);
        assert_same_f32(plugin, "max", &out[1], &d.array("r_max_want"));
        assert_same_f32(plugin, "min", &out[2], &d.array("r_min_want"));
        assert_close_f32(plugin, "mean", &out[3], &d.array("r_mean_want"), 1e-5, 1e-5);
        assert_close_f32(plugin, "mean_all", &out[4], &d.array("r_mean_all_want"), 1e-5, 1e-5);
        assert_same_f32(plugin, "mean_none", &out[5], &d.array("r_mean_none_want"));
        assert_close_f32(plugin, "variance", &out[6], &d.array("r_var_want"), 1e-5, 1e-5);
        assert_exact(plugin, "isum", &out[7], &d.array("r_isum_want"));
        assert_exact(plugin, "imax", &out[8], &d.array("r_imax_want"));
        assert_exact(plugin, "imin", &out[9], &d.array("r_imin_want"));
        assert_same_f32(plugin, "nan_max", &out[10], &d.array("r_nan_max_want"));
    }
}

#[test]
fn softmax_family_matches_numpy_with_infinities() {
    let d = data("nn");
    let f = Function::new("softmaxes");
    let s = f.parameter(ElementType::F32, &d.dims("s_x")).unwrap();
    let s0 = f.parameter(ElementType::F32, &d.dims("s0_x")).unwrap();
    let outputs =
        [s.softmax(1).unwrap(), s.log_softmax(1).unwrap(), s.logsumexp(&[1]).unwrap(), s0.softmax(0).unwrap()];
    let program = f.finish(&outputs.iter().collect::<Vec<_>>()).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &[d.array("s_x"), d.array("s0_x")]) {
        assert_close_f32(plugin, "softmax", &out[0], &d.array("s_softmax_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "log_softmax", &out[1], &d.array("s_log_softmax_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "logsumexp", &out[2], &d.array("s_logsumexp_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "softmax axis 0", &out[3], &d.array("s0_softmax_want"), 1e-5, 1e-6);
    }
}

#[test]
fn argmax_one_hot_activations_and_cross_entropy_match_numpy() {
    let d = data("nn");
    let f = Function::new("nn_misc");
    let a = f.parameter(ElementType::F32, &d.dims("a_x")).unwrap();
    let ai = f.parameter(ElementType::S32, &d.dims("a_xi")).unwrap();
    let labels = f.parameter(ElementType::S32, &d.dims("o_labels")).unwrap();
    let act = f.parameter(ElementType::F32, &d.dims("act_x")).unwrap();
    let logits = f.parameter(ElementType::F32, &d.dims("ce_logits")).unwrap();
    let probs = f.parameter(ElementType::F32, &d.dims("ce_probs")).unwrap();
    let ce_labels = f.parameter(ElementType::S32, &d.dims("ce_labels")).unwrap();
    let outputs = [
        a.argmax(1, ElementType::S32).unwrap(),
        a.argmin(1, ElementType::S32).unwrap(),
        a.argmax(0, ElementType::S64).unwrap(),
        ai.argmax(1, ElementType::S32).unwrap(),
        ai.argmin(1, ElementType::S32).unwrap(),
        labels.one_hot(4, ElementType::F32).unwrap(),
        act.relu().unwrap(),
        act.gelu().unwrap(),
        act.silu().unwrap(),
        logits.softmax_cross_entropy(&probs).unwrap(),
        logits.sparse_softmax_cross_entropy(&ce_labels).unwrap(),
    ];
    let program = f.finish(&outputs.iter().collect::<Vec<_>>()).unwrap();
    let names = ["a_x", "a_xi", "o_labels", "act_x", "ce_logits", "ce_probs", "ce_labels"];
    let inputs: Vec<_> = names.iter().map(|n| d.array(n)).collect();
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        assert_exact(plugin, "argmax", &out[0], &d.array("a_argmax_want"));
        assert_exact(plugin, "argmin", &out[1], &d.array("a_argmin_want"));
        assert_exact(plugin, "argmax axis 0 (s64)", &out[2], &d.array("a_argmax0_want"));
        assert_exact(plugin, "integer argmax", &out[3], &d.array("a_iargmax_want"));
        assert_exact(plugin, "integer argmin", &out[4], &d.array("a_iargmin_want"));
        assert_exact(plugin, "one_hot", &out[5], &d.array("o_want"));
        // Exact up to the sign of zero: XLA's maximum(-0, 0) is -0, numpy's 0.
        assert_close_f32(plugin, "relu", &out[6], &d.array("act_relu_want"), 0.0, 0.0);
        assert_close_f32(plugin, "gelu", &out[7], &d.array("act_gelu_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "silu", &out[8], &d.array("act_silu_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "cross_entropy", &out[9], &d.array("ce_want"), 1e-5, 1e-6);
        assert_close_f32(plugin, "sparse_cross_entropy", &out[10], &d.array("ce_sparse_want"), 1e-5, 1e-6);
    }
}

#[test]
fn helpers_refuse_bad_arguments_naming_themselves() {
    let f = Function::new("nn_errors");
    let m = f.parameter(ElementType::F32, &[2, 3]).unwrap();
    let i = f.parameter(ElementType::S32, &[2]).unwrap();
    let stack = f.parameter(ElementType::F32, &[4, 2, 3]).unwrap();
    let msg = |r: Result<pjrt_builder::Value<'_>, pjrt_builder::BuildError>| r.unwrap_err().to_string();
    assert!(msg(m.matmul(&m)).starts_with("nn.matmul: operand types tensor<2x3xf32> and tensor<2x3xf32>"));
    assert!(msg(m.matmul(&stack)).contains("broadcast the lower-rank operand"));
    assert!(msg(m.softmax(2)).contains("nn.softmax: axis [2]: dimension 2 is out of range for rank 2"));
    assert!(msg(i.mean(&[0])).contains("nn.mean takes float elements"));
    assert!(msg(i.gelu()).contains("nn.gelu takes float elements"));
    assert!(msg(m.one_hot(3, ElementType::F32)).contains("one_hot takes integer labels"));
    assert!(msg(i.one_hot(-1, ElementType::F32)).contains("depth -1 must be 0 or more"));
    assert!(msg(m.argmax(1, ElementType::F32)).contains("index_type f32 must be an integer type"));
    assert!(msg(m.reduce_sum(&[1, 1])).contains("dimension 1 appears twice"));
    assert!(msg(m.softmax_cross_entropy(&stack)).contains("sparse_softmax_cross_entropy"));
    assert!(msg(m.sparse_softmax_cross_entropy(&m)).contains("labels must be integers"));
    // Small floats: reductions that need an infinity refuse, the rest work.
    let f8 = f.parameter(ElementType::F8E4M3FN, &[3]).unwrap();
    assert!(msg(f8.reduce_max(&[0])).contains("convert to f32"));
    assert!(f8.reduce_sum(&[0]).is_ok());
    // The function is still usable after the refusals.
    assert!(f.finish(&[&m.softmax(1).unwrap()]).is_ok());
}
