//! gather (embedding rows, 2-D points, a slice whose start is clamped, an implicit index
//! vector dimension, batching dimensions) and scatter (rows added with duplicate indices and an
//! index past the end skipped, replace, max) against numpy (exact).

use pjrt_builder::{BuildError, Function, GatherDimensions, ScatterDimensions, Value};
use pjrt_client::ElementType;

use crate::harness::{assert_exact, assert_same_f32, data, run_on_both};

fn points() -> GatherDimensions {
    GatherDimensions {
        collapsed_slice_dims: vec![0, 1],
        start_index_map: vec![0, 1],
        index_vector_dim: 1,
        ..GatherDimensions::default()
    }
}

#[test]
fn gathers_and_scatters_match_numpy() {
    let d = data("gather");
    let f = Function::new("indexing");
    let names = ["table", "ids", "grid", "points", "batched", "bidx", "base", "upd", "sidx", "vals"];
    let inputs: Vec<_> = names.iter().map(|n| d.array(n)).collect();
    let p: Vec<_> = inputs.iter().map(|a| f.parameter(a.element_type(), a.dims()).unwrap()).collect();
    let (table, ids, grid, pts, batched, bidx, base, upd, sidx, vals) =
        (&p[0], &p[1], &p[2], &p[3], &p[4], &p[5], &p[6], &p[7], &p[8], &p[9]);
    let rows = table.gather(ids, &GatherDimensions::rows(), &[1, 3], false).unwrap();
    let at_points = grid.gather(pts, &points(), &[1, 1], false).unwrap();
    let corner = f.constant(&[3i32, 4], &[1, 2]).unwrap();
    let block = GatherDimensions {
        offset_dims: vec![1, 2],
        start_index_map: vec![0, 1],
        index_vector_dim: 1,
        ..Default::default()
    };
    let clamped = grid.gather(&corner, &block, &[2, 2], false).unwrap();
    let implicit_ids = f.constant(&[1i32, 3], &[2]).unwrap();
    let implicit = GatherDimensions { index_vector_dim: 1, ..GatherDimensions::rows() };
    let implicit = table.gather(&implicit_ids, &implicit, &[1, 3], false).unwrap();
    let batching = GatherDimensions {
        offset_dims: vec![2],
        collapsed_slice_dims: vec![1],
        operand_batching_dims: vec![0],
        start_indices_batching_dims: vec![0],
        start_index_map: vec![1],
        index_vector_dim: 2,
    };
    let by_batch = batched.gather(bidx, &batching, &[1, 1, 3], false).unwrap();
    let added = base.scatter(sidx, upd, &ScatterDimensions::rows(), false, false, |_, a, b| a.add(b)).unwrap();
    let point_scatter = ScatterDimensions {
        inserted_window_dims: vec![0, 1],
        scatter_dims_to_operand_dims: vec![0, 1],
        index_vector_dim: 1,
        ..ScatterDimensions::default()
    };
    let replaced = grid.scatter(pts, vals, &point_scatter, false, true, |_, _, b| Ok(b.clone())).unwrap();
    let maxed = grid.scatter(pts, vals, &point_scatter, false, false, |_, a, b| a.maximum(b)).unwrap();
    let program = f.finish(&[&rows, &at_points, &clamped, &implicit, &by_batch, &added, &replaced, &maxed]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        assert_same_f32(plugin, "rows", &out[0], &d.array("rows_want"));
        assert_exact(plugin, "points", &out[1], &d.array("points_want"));
        assert_exact(plugin, "clamped", &out[2], &d.array("clamped_want"));
        assert_same_f32(plugin, "implicit", &out[3], &d.array("implicit_want"));
        assert_same_f32(plugin, "batching dims", &out[4], &d.array("batched_want"));
        assert_exact(plugin, "scatter add", &out[5], &d.array("scatter_add_want"));
        assert_exact(plugin, "scatter replace", &out[6], &d.array("scatter_replace_want"));
        assert_exact(plugin, "scatter max", &out[7], &d.array("scatter_max_want"));
    }
    assert!(program.text().unwrap().contains("operand_batching_dims = [0]"));
    assert_eq!(f.required_stablehlo_version(), (1, 1, 0));
}

#[test]
fn empty_gathers_and_scatters_match_numpy() {
    let d = data("gather");
    let f = Function::new("gather_edges");
    let names = ["table", "no_ids", "base", "no_updates"];
    let inputs: Vec<_> = names.iter().map(|n| d.array(n)).collect();
    let p: Vec<_> = inputs.iter().map(|a| f.parameter(a.element_type(), a.dims()).unwrap()).collect();
    let rows = p[0].gather(&p[1], &GatherDimensions::rows(), &[1, 3], true).unwrap();
    let unchanged = p[2].scatter(&p[1], &p[3], &ScatterDimensions::rows(), true, true, add).unwrap();
    let program = f.finish(&[&rows, &unchanged]).unwrap();
    for (plugin, out) in run_on_both(&f, &program, &inputs) {
        assert_same_f32(plugin, "no rows", &out[0], &d.array("no_rows_want"));
        assert_exact(plugin, "no updates", &out[1], &d.array("unchanged_want"));
    }
}

#[test]
fn gather_and_scatter_are_checked() {
    let f = Function::new("errors");
    let table = f.parameter(ElementType::F32, &[5, 3]).unwrap();
    let ids = f.parameter(ElementType::S32, &[4, 1]).unwrap();
    let fids = f.parameter(ElementType::F32, &[4, 1]).unwrap();
    let msg = |r: Result<pjrt_builder::Value<'_>, pjrt_builder::BuildError>| r.unwrap_err().to_string();
    assert!(msg(table.gather(&fids, &GatherDimensions::rows(), &[1, 3], false)).contains("indices must be integers"));
    assert!(msg(table.gather(&ids, &GatherDimensions::rows(), &[1, 4], false)).contains("each 0..=its size"));
    assert!(msg(table.gather(&ids, &GatherDimensions::rows(), &[2, 3], false)).contains("must be 0 or 1"));
    let bad = GatherDimensions { start_index_map: vec![0, 1], ..GatherDimensions::rows() };
    assert!(msg(table.gather(&ids, &bad, &[1, 3], false)).contains("one entry per index vector element (1)"));
    let bad = GatherDimensions { offset_dims: vec![], ..GatherDimensions::rows() };
    assert!(msg(table.gather(&ids, &bad, &[1, 3], false)).contains("offset_dims []"));
    let upd = f.splat(1f32, &[3, 3]).unwrap();
    let e = msg(table.scatter(&ids, &upd, &ScatterDimensions::rows(), false, false, add));
    assert!(e.contains("update dimension 0 must equal the indices' batch dimension"), "{e}");
    let upd = f.splat(1f32, &[4, 3]).unwrap();
    let e =
        msg(table.scatter(&ids, &upd, &ScatterDimensions::rows(), false, false, |_, a, _| a.convert(ElementType::S32)));
    assert_eq!(e, "stablehlo.scatter: the region returned tensor<i32>, expected tensor<f32>");
}

fn add<'f>(_: &'f Function, a: &Value<'f>, b: &Value<'f>) -> Result<Value<'f>, BuildError> {
    a.add(b)
}
