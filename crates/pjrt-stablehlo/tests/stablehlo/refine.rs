//! Shape refinement at the IR level (no plugin): every symbolic model of
//! tests/data/jax_export/symbolic/jax-0.10.2 refined for each shape set its manifest lists
//! comes out static, with no shape assertion, dynamic op or unreached function left and with
//! the results JAX gives; the shape sets JAX refuses give JAX's error. Hand-made modules check
//! the errors, the specialization of a function per call shape, and that hostile modules give
//! errors rather than panics, unbounded work or a stack overflow.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pjrt_formats::jax_export::JaxExport;
use pjrt_stablehlo::ir::{
    Attr, Block, Dim, ElementType, EnumAttr, Location, Module, Op, Region, TensorType, Type, Value,
};
use pjrt_stablehlo::{is_polymorphic, print, refine, RefineError};
use serde_json::Value as Json;

use crate::files;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/jax_export/symbolic/jax-0.10.2")
}

fn manifest() -> Json {
    serde_json::from_str(&std::fs::read_to_string(data_dir().join("manifest.json")).unwrap()).unwrap()
}

fn read_model(case: &Json) -> (JaxExport, Module) {
    let export = JaxExport::read(data_dir().join(case["model"].as_str().unwrap())).unwrap();
    let module = pjrt_stablehlo::read_bytecode(export.mlir_module()).unwrap();
    (export, module)
}

fn dims(shape: &Json) -> Vec<u64> {
    shape.as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect()
}

/// The types JAX's outputs of a shape set have (`outputs`: their shapes, in `out_avals` order).
fn output_types(export: &JaxExport, outputs: &Json) -> Vec<Type> {
    outputs
        .as_array()
        .unwrap()
        .iter()
        .zip(export.out_avals())
        .map(|(shape, aval)| Type::tensor(aval.element_type.unwrap(), &dims(shape)))
        .collect()
}

/// @main's argument types for the model's inputs of these shapes: the kept inputs (after the
/// platform index when there are several platforms), element types from the avals.
fn main_args(export: &JaxExport, inputs: &Json) -> Vec<Type> {
    let mut args = Vec::new();
    if export.platforms().len() > 1 {
        args.push(Type::tensor(ElementType::S32, &[]));
    }
    for &i in export.module_kept_var_idx() {
        let element = export.in_avals()[i].element_type.unwrap();
        args.push(Type::tensor(element, &dims(&inputs[i])));
    }
    args
}

/// The top-level functions of a module, by name.
fn functions(module: &Module) -> Vec<&Op> {
    let top = module.ops.iter().find(|op| op.name == "builtin.module").unwrap();
    top.regions[0].blocks[0].ops.iter().filter(|op| op.name == "func.func").collect()
}

fn name(func: &Op) -> String {
    match func.attr("sym_name") {
        Some(Attr::String(s)) => String::from_utf8(s.clone()).unwrap(),
        other => panic!("a function named {other:?}"),
    }
}

fn symbol_refs(a: &Attr, out: &mut Vec<String>) {
    match a {
        Attr::SymbolRef(s) => out.push(s.clone()),
        Attr::Array(v) => v.iter().for_each(|a| symbol_refs(a, out)),
        Attr::Dict(d) => d.iter().for_each(|(_, a)| symbol_refs(a, out)),
        _ => {}
    }
}

/// The functions reached from @main by calls, composites and custom calls' bodies.
fn reached(module: &Module) -> HashSet<String> {
    let funcs = functions(module);
    let mut seen = HashSet::from(["main".to_string()]);
    let mut todo = vec!["main".to_string()];
    while let Some(f) = todo.pop() {
        let func = funcs.iter().find(|op| name(op) == f).unwrap_or_else(|| panic!("@{f} is called, not defined"));
        let mut refs = Vec::new();
        let mut stack: Vec<&Op> = func.regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.ops).collect();
        while let Some(op) = stack.pop() {
            op.attributes.iter().for_each(|(_, a)| symbol_refs(a, &mut refs));
            stack.extend(op.regions.iter().flat_map(|r| &r.blocks).flat_map(|b| &b.ops));
        }
        for r in refs {
            if seen.insert(r.clone()) {
                todo.push(r);
            }
        }
    }
    seen
}

fn main_results(module: &Module) -> Vec<Type> {
    let main = functions(module).into_iter().find(|f| name(f) == "main").unwrap();
    match main.attr("function_type") {
        Some(Attr::Type(Type::Function { outputs, .. })) => outputs.clone(),
        other => panic!("@main's type is {other:?}"),
    }
}

/// JAX's errors for input shapes it refuses before it refines (its own checks of the avals);
/// refine sees them as arguments that do not fit @main.
fn is_argument_error(message: &str) -> bool {
    ["Shape mismatch for args", "Rank mismatch for args", "Dtype mismatch for args"]
        .iter()
        .any(|p| message.starts_with(p))
}

#[test]
fn symbolic_models_refine_to_static_modules_with_jax_output_shapes() {
    let m = manifest();
    let (mut refined, mut asserted, mut refused) = (0, 0, 0);
    for case in m["cases"].as_array().unwrap() {
        let case_name = case["name"].as_str().unwrap();
        let (export, module) = read_model(case);
        assert!(is_polymorphic(&module), "{case_name}");
        for set in case["ok"].as_array().unwrap() {
            let dir = set["dir"].as_str().unwrap();
            let out = refine(&module, &main_args(&export, &set["inputs"])).unwrap_or_else(|e| panic!("{dir}: {e}"));
            let text = print(&out);
            assert!(!text.contains('?'), "{dir}: a dynamic dimension is left:\n{text}");
            assert!(!is_polymorphic(&out), "{dir}");
            for left in ["shape_assertion", "real_dynamic_slice"] {
                assert!(!text.contains(left), "{dir}: {left} is left:\n{text}");
            }
            // dynamic_slice and dynamic_update_slice are static ops (only their offsets are data).
            for (at, _) in text.match_indices("stablehlo.dynamic_") {
                let rest = &text[at + "stablehlo.dynamic_".len()..];
                assert!(rest.starts_with("slice\"") || rest.starts_with("update_slice\""), "{dir}: {}", &text[at..]);
            }
            let names: Vec<String> = functions(&out).into_iter().map(name).collect();
            let reached = reached(&out);
            // Unreached private functions are dropped; a public one stays (conv_pool's reduction
            // body, public in the module, once its dynamic_reduce_window took a copy), static.
            for f in functions(&out) {
                let public = !matches!(f.attr("sym_visibility"), Some(Attr::String(v)) if v == b"private");
                assert!(reached.contains(&name(f)) || public, "{dir}: @{} is not reached from @main", name(f));
            }
            assert_eq!(names.iter().collect::<HashSet<_>>().len(), names.len(), "{dir}: names repeat: {names:?}");
            assert_eq!(main_results(&out), output_types(&export, &set["outputs"]), "{dir}");
            refined += 1;
        }
        for set in case["bad"].as_array().unwrap() {
            let dir = set["dir"].as_str().unwrap();
            let wanted = set["error"].as_str().unwrap();
            let result = refine(&module, &main_args(&export, &set["inputs"]));
            if is_argument_error(wanted) {
                assert!(matches!(result, Err(RefineError::Argument { .. })), "{dir}: {result:?}");
                refused += 1;
                continue;
            }
            match result {
                Err(RefineError::ShapeAssertion { message }) => {
                    assert!(message.contains(wanted), "{dir}: {message}\n  JAX says: {wanted}")
                }
                other => panic!("{dir}: {other:?}, JAX says: {wanted}"),
            }
            if set["deserialized_error"].as_str() == Some(wanted) {
                asserted += 1;
            }
            refused += 1;
        }
    }
    assert!(
        refined >= 40 && asserted >= 10 && refused >= 17,
        "{refined} refined, {asserted} asserted, {refused} refused"
    );
}

#[test]
fn arguments_that_do_not_fit_main_are_refused() {
    let case = &manifest()["cases"][0];
    assert_eq!(case["name"], "mlp_batch");
    let (_, module) = read_model(case);
    let f32 = ElementType::F32;
    let fine = [
        Type::tensor(f32, &[3, 8]),
        Type::tensor(f32, &[8, 16]),
        Type::tensor(f32, &[16]),
        Type::tensor(f32, &[16, 3]),
        Type::tensor(f32, &[3]),
    ];
    assert!(refine(&module, &fine).is_ok());
    let mut wrong_rank = fine.clone();
    wrong_rank[0] = Type::tensor(f32, &[24]);
    let mut wrong_element = fine.clone();
    wrong_element[2] = Type::tensor(ElementType::S32, &[16]);
    let mut wrong_size = fine.clone();
    wrong_size[1] = Type::tensor(f32, &[8, 17]);
    for (args, index) in [(&wrong_rank[..], 0), (&wrong_element[..], 2), (&wrong_size[..], 1), (&fine[..4], 4)] {
        match refine(&module, args) {
            Err(RefineError::Argument { index: i, .. }) => assert_eq!(i, index),
            other => panic!("{other:?}"),
        }
    }
}

// ---- hand-made modules ----

const F32: ElementType = ElementType::F32;
const S64: ElementType = ElementType::S64;

/// A tensor type: `None` is `?`.
fn ty(element: ElementType, dims: &[Option<u64>]) -> Type {
    Type::Tensor(TensorType {
        dims: dims.iter().map(|d| d.map_or(Dim::Dynamic, Dim::Fixed)).collect(),
        element: Box::new(Type::Scalar(element)),
        encoding: None,
    })
}

fn vector(n: Option<u64>) -> Type {
    ty(F32, &[n])
}

fn val(id: u32, ty: &Type) -> Value {
    Value { id, ty: ty.clone() }
}

fn op(name: &str, operands: &[u32], results: Vec<Value>, attributes: Vec<(&str, Attr)>) -> Op {
    Op {
        name: name.to_string(),
        operands: operands.to_vec(),
        results,
        attributes: attributes.into_iter().map(|(n, a)| (n.to_string(), a)).collect(),
        regions: Vec::new(),
        successors: Vec::new(),
        location: Arc::new(Location::Unknown),
    }
}

fn ret(operands: &[u32]) -> Op {
    op("func.return", operands, vec![], vec![])
}

fn i64_dense(dims: &[u64], vals: &[i64]) -> Attr {
    let ty = Type::tensor(S64, dims);
    Attr::Dense { ty, data: vals.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>().into() }
}

fn constant(id: u32, dims: &[u64], vals: &[i64]) -> Op {
    op("stablehlo.constant", &[], vec![val(id, &Type::tensor(S64, dims))], vec![("value", i64_dense(dims, vals))])
}

fn f32_zero(id: u32) -> Op {
    let t = Type::tensor(F32, &[]);
    let zero = Attr::Dense { ty: t.clone(), data: vec![0u8; 4].into() };
    op("stablehlo.constant", &[], vec![val(id, &t)], vec![("value", zero)])
}

fn call(id: u32, callee: &str, operands: &[u32], result: &Type) -> Op {
    op("func.call", operands, vec![val(id, result)], vec![("callee", Attr::SymbolRef(callee.to_string()))])
}

/// A function: its parameters are %0.. in order, `ops` numbered after them.
fn func(name: &str, private: bool, params: impl AsRef<[Type]>, results: impl AsRef<[Type]>, ops: Vec<Op>) -> Op {
    let (params, results) = (params.as_ref(), results.as_ref());
    let mut attributes = vec![
        ("sym_name", Attr::String(name.as_bytes().to_vec())),
        ("function_type", Attr::Type(Type::Function { inputs: params.to_vec(), outputs: results.to_vec() })),
    ];
    if private {
        attributes.push(("sym_visibility", Attr::String(b"private".to_vec())));
    }
    let mut f = op("func.func", &[], vec![], attributes);
    let args = params.iter().enumerate().map(|(i, t)| val(i as u32, t)).collect();
    f.regions = vec![Region { blocks: vec![Block { args, ops, arg_locations: Vec::new() }] }];
    f
}

fn module(funcs: Vec<Op>) -> Module {
    let mut top = op("builtin.module", &[], vec![], vec![]);
    top.regions = vec![Region { blocks: vec![Block { args: vec![], ops: funcs, arg_locations: Vec::new() }] }];
    Module { bytecode_version: 6, producer: "refine tests".to_string(), ops: vec![top] }
}

fn unrefinable(result: Result<Module, RefineError>) -> (String, String) {
    match result {
        Err(RefineError::Unrefinable { op, what }) => (op, what),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_shape_computed_from_data_is_unrefinable_and_named() {
    // main(%x: tensor<?xf32>, %shape: tensor<1xi64>): broadcast %x to the shape %shape holds.
    let m = module(vec![func(
        "main",
        false,
        &[vector(None), Type::tensor(S64, &[1])],
        &[vector(None)],
        vec![
            op(
                "stablehlo.dynamic_broadcast_in_dim",
                &[0, 1],
                vec![val(2, &vector(None))],
                vec![("broadcast_dimensions", Attr::I64Array(vec![0]))],
            ),
            ret(&[2]),
        ],
    )]);
    assert!(is_polymorphic(&m));
    let (op, what) = unrefinable(refine(&m, &[vector(Some(3)), Type::tensor(S64, &[1])]));
    assert!(op.starts_with("stablehlo.dynamic_broadcast_in_dim in @main"), "{op}");
    assert!(what.contains("computed from data"), "{what}");
    // The same op with its shape from a constant is made static.
    let mut m2 = m.clone();
    let body = &mut m2.ops[0].regions[0].blocks[0].ops[0].regions[0].blocks[0];
    body.ops.insert(0, constant(3, &[1], &[3]));
    body.ops[1].operands[1] = 3;
    let out = refine(&m2, &[vector(Some(3)), Type::tensor(S64, &[1])]).unwrap();
    let text = print(&out);
    assert!(text.contains("stablehlo.broadcast_in_dim") && !text.contains("dynamic") && !text.contains('?'), "{text}");
}

#[test]
fn a_function_called_at_two_shapes_gets_two_specializations() {
    let f = |name: &str| {
        func(
            name,
            true,
            &[vector(None)],
            &[vector(None)],
            vec![op("stablehlo.negate", &[0], vec![val(1, &vector(None))], vec![]), ret(&[1])],
        )
    };
    // @f_refined_1 is the module's own: the second specialization of @f must be named otherwise.
    let main = func(
        "main",
        false,
        &[vector(None), vector(None)],
        &[vector(None), vector(None), vector(None), vector(None)],
        vec![
            call(2, "f", &[0], &vector(None)),
            call(3, "f", &[1], &vector(None)),
            call(4, "f", &[0], &vector(None)),
            call(5, "f_refined_1", &[1], &vector(None)),
            ret(&[2, 3, 4, 5]),
        ],
    );
    let m = module(vec![main, f("f"), f("f_refined_1"), f("unused")]);
    let out = refine(&m, &[vector(Some(2)), vector(Some(3))]).unwrap();
    let names: Vec<String> = functions(&out).into_iter().map(name).collect();
    assert_eq!(names.len(), 4, "{names:?}"); // main, @f twice, @f_refined_1; @unused gone
    assert_eq!(names.iter().collect::<HashSet<_>>().len(), 4, "{names:?}");
    assert!(names.contains(&"f".to_string()) && names.contains(&"f_refined_1".to_string()), "{names:?}");
    assert_eq!(reached(&out).len(), 4);
    assert_eq!(main_results(&out), [vector(Some(2)), vector(Some(3)), vector(Some(2)), vector(Some(3))]);
    // The calls at the two shapes name functions of those shapes.
    let funcs = functions(&out);
    let main = funcs.iter().find(|f| name(f) == "main").unwrap();
    for call in main.regions[0].blocks[0].ops.iter().filter(|op| op.name == "func.call") {
        let Some(Attr::SymbolRef(callee)) = call.attr("callee") else { panic!() };
        let callee = funcs.iter().find(|f| name(f) == *callee).unwrap();
        let Some(Attr::Type(Type::Function { inputs, outputs })) = callee.attr("function_type") else { panic!() };
        assert_eq!(inputs[0], call.results[0].ty);
        assert_eq!(outputs[0], call.results[0].ty);
    }
    let text = print(&out);
    assert!(!text.contains('?'), "{text}");
}

/// JAX before 0.9 writes a lax.top_k of symbolic shapes as `custom_call @mhlo.topk` (k in its
/// `mhlo.attributes`), which today's XLA does not implement: refined, it is `chlo.top_k`.
#[test]
fn the_mhlo_topk_custom_call_of_older_jax_refines_to_chlo_top_k() {
    let dir = data_dir().join("../jax-0.4.30");
    let m: Json = serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let case = m["cases"].as_array().unwrap().iter().find(|c| c["name"] == "top_k_sort").unwrap();
    let export = JaxExport::read(dir.join(case["model"].as_str().unwrap())).unwrap();
    let module = pjrt_stablehlo::read_bytecode(export.mlir_module()).unwrap();
    assert!(print(&module).contains("mhlo.topk"));
    for set in case["ok"].as_array().unwrap() {
        let out = refine(&module, &main_args(&export, &set["inputs"])).unwrap();
        let text = print(&out);
        assert!(text.contains("chlo.top_k") && !text.contains("mhlo.topk") && !text.contains('?'), "{text}");
        assert_eq!(main_results(&out), output_types(&export, &set["outputs"]), "{}", set["dir"]);
    }
}

#[test]
fn refining_a_static_module_changes_nothing() {
    let mut checked = 0;
    for path in files::all() {
        let Ok(module) = pjrt_stablehlo::read_bytecode(&files::bytecode(&path)) else { continue };
        if is_polymorphic(&module) {
            continue;
        }
        let funcs = functions(&module);
        let Some(main) = funcs.iter().find(|f| name(f) == "main") else { continue };
        let params: Vec<Type> = main.regions[0].blocks[0].args.iter().map(|a| a.ty.clone()).collect();
        let out = refine(&module, &params).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(print(&out), print(&module), "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 10, "{checked} static modules");
    let path = files::repo().join("tests/data/formats/tanh_mul.portable-1.0.0.mlirbc");
    let module = pjrt_stablehlo::read_bytecode(&std::fs::read(path).unwrap()).unwrap();
    assert!(!is_polymorphic(&module));
}

// ---- hostile modules: errors, never panics ----

/// main(%x: tensor<?xf32>) with `ops` after it (numbered from 1), returning `result`.
fn main_of(ops: Vec<Op>, result: u32, result_ty: &Type) -> Module {
    let mut ops = ops;
    ops.push(ret(&[result]));
    module(vec![func("main", false, &[vector(None)], [result_ty.clone()], ops)])
}

#[test]
fn hostile_attributes_and_sizes_give_errors() {
    let x = vector(None);
    let dn = |fields: Vec<(&'static str, Attr)>| Attr::Struct { mnemonic: "conv", fields };
    let i = |v: i64| Attr::Integer { value: v, ty: Type::Scalar(S64) };
    let conv_dims = dn(vec![
        ("input_batch_dimension", i(0)),
        ("input_feature_dimension", i(1)),
        ("input_spatial_dimensions", Attr::I64Array(vec![2, 3])),
        ("kernel_input_feature_dimension", i(1)),
        ("kernel_output_feature_dimension", i(0)),
        ("kernel_spatial_dimensions", Attr::I64Array(vec![2, 3])),
        ("output_batch_dimension", i(0)),
        ("output_feature_dimension", i(1)),
        ("output_spatial_dimensions", Attr::I64Array(vec![2, 3])),
    ]);
    let image = ty(F32, &[None, Some(3), None, None]);
    let kernel = Type::tensor(F32, &[4, 3, 2, 2]);
    let conv_out = ty(F32, &[None, Some(4), None, None]);
    let conv = |attrs: Vec<(&str, Attr)>| {
        let mut all = vec![("dimension_numbers", conv_dims.clone())];
        all.extend(attrs);
        module(vec![func(
            "main",
            false,
            &[image.clone(), kernel.clone()],
            [conv_out.clone()],
            vec![op("stablehlo.convolution", &[0, 1], vec![val(2, &conv_out)], all), ret(&[2])],
        )])
    };
    let conv_args = [ty(F32, &[Some(1), Some(3), Some(8), Some(8)]), kernel.clone()];
    // A valid convolution refines.
    let ok = refine(&conv(vec![]), &conv_args).unwrap();
    assert!(print(&ok).contains("tensor<1x4x7x7xf32>"), "{}", print(&ok));
    // A window dilated 2^63 - 1 times fits nowhere: no outputs (no overflow).
    let empty = refine(&conv(vec![("rhs_dilation", Attr::I64Array(vec![i64::MAX, i64::MAX]))]), &conv_args).unwrap();
    assert!(print(&empty).contains("tensor<1x4x0x0xf32>"), "{}", print(&empty));
    let mut cases: Vec<(&str, Module, Vec<Type>)> = vec![
        (
            "window_strides shorter than the spatial rank",
            conv(vec![("window_strides", Attr::I64Array(vec![1]))]),
            conv_args.to_vec(),
        ),
        ("lhs_dilation shorter", conv(vec![("lhs_dilation", Attr::I64Array(vec![]))]), conv_args.to_vec()),
        ("padding huge", conv(vec![("padding", i64_dense(&[2, 2], &[i64::MAX, i64::MAX, 0, 0]))]), conv_args.to_vec()),
        ("padding short", conv(vec![("padding", i64_dense(&[1, 2], &[1, 1]))]), conv_args.to_vec()),
    ];
    // An image of 2^63 - 1 rows through a convolution dilated 2^62 times.
    let huge = [ty(F32, &[Some(1), Some(3), Some(i64::MAX as u64), Some(8)]), kernel.clone()];
    cases.push((
        "dilated size overflows",
        conv(vec![("lhs_dilation", Attr::I64Array(vec![1 << 62, 1]))]),
        huge.to_vec(),
    ));
    let arg = vec![vector(Some(3))];
    // Concatenate of a vector and a matrix.
    let m2 = Type::tensor(F32, &[2, 2]);
    cases.push((
        "concatenate of operands of different ranks",
        main_of(
            vec![
                op(
                    "stablehlo.constant",
                    &[],
                    vec![val(1, &m2)],
                    vec![("value", Attr::Dense { ty: m2.clone(), data: vec![0u8; 16].into() })],
                ),
                op("stablehlo.concatenate", &[0, 1], vec![val(2, &x)], vec![("dimension", i(0))]),
            ],
            2,
            &x,
        ),
        arg.clone(),
    ));
    // Concatenate whose size overflows.
    let big = ty(F32, &[Some(u64::MAX - 1)]);
    cases.push((
        "concatenated size overflows",
        module(vec![func(
            "main",
            false,
            &[x.clone(), big.clone()],
            [x.clone()],
            vec![op("stablehlo.concatenate", &[0, 1], vec![val(2, &x)], vec![("dimension", i(0))]), ret(&[2])],
        )]),
        vec![vector(Some(3)), big.clone()],
    ));
    // Padding that overflows, and negative interior padding.
    for (lo, interior) in [(i64::MAX, 0), (0, -1), (0, i64::MAX)] {
        cases.push((
            "pad",
            main_of(
                vec![
                    f32_zero(1),
                    op(
                        "stablehlo.pad",
                        &[0, 1],
                        vec![val(2, &x)],
                        vec![
                            ("edge_padding_low", Attr::I64Array(vec![lo])),
                            ("edge_padding_high", Attr::I64Array(vec![lo])),
                            ("interior_padding", Attr::I64Array(vec![interior])),
                        ],
                    ),
                ],
                2,
                &x,
            ),
            arg.clone(),
        ));
    }
    // broadcast_in_dim whose map is shorter than the operand's rank.
    let mat = ty(F32, &[None, None]);
    cases.push((
        "broadcast_in_dim map too short",
        main_of(
            vec![op(
                "stablehlo.broadcast_in_dim",
                &[0],
                vec![val(1, &mat)],
                vec![("broadcast_dimensions", Attr::I64Array(vec![]))],
            )],
            1,
            &mat,
        ),
        arg.clone(),
    ));
    // A reduce_window whose window overflows.
    cases.push((
        "reduce_window overflows",
        main_of(
            vec![
                f32_zero(1),
                op(
                    "stablehlo.reduce_window",
                    &[0, 1],
                    vec![val(2, &x)],
                    vec![
                        ("window_dimensions", Attr::I64Array(vec![1])),
                        ("base_dilations", Attr::I64Array(vec![i64::MAX])),
                        ("padding", i64_dense(&[1, 2], &[i64::MAX, i64::MAX])),
                    ],
                ),
            ],
            2,
            &x,
        ),
        arg.clone(),
    ));
    // Custom calls that read their first operand's shape, with no operands.
    for target in [
        "Sharding",
        "xla.sdy.FuncResultSharding",
        "stablehlo.dynamic_top_k",
        "stablehlo.dynamic_rng_bit_generator",
        "mhlo.topk",
    ] {
        cases.push((
            target,
            main_of(
                vec![op(
                    "stablehlo.custom_call",
                    &[],
                    vec![val(1, &x)],
                    vec![("call_target_name", Attr::String(target.as_bytes().to_vec()))],
                )],
                1,
                &x,
            ),
            arg.clone(),
        ));
    }
    // A dynamic_reduce_window with padding that is not pairs.
    let w = |id: u32, n: u64| constant(id, &[n], &vec![1; n as usize]);
    cases.push((
        "dynamic_reduce_window padding of odd length",
        module(vec![
            func(
                "main",
                false,
                [x.clone()],
                [x.clone()],
                vec![
                    f32_zero(1),
                    w(2, 1),
                    w(3, 1),
                    w(4, 1),
                    w(5, 1),
                    w(6, 3),
                    op(
                        "stablehlo.custom_call",
                        &[0, 1, 2, 3, 4, 5, 6],
                        vec![val(7, &x)],
                        vec![
                            ("call_target_name", Attr::String(b"stablehlo.dynamic_reduce_window".to_vec())),
                            ("called_computations", Attr::Array(vec![Attr::SymbolRef("sum".into())])),
                        ],
                    ),
                    ret(&[7]),
                ],
            ),
            sum(),
        ]),
        arg.clone(),
    ));
    for (what, m, args) in cases {
        let r = std::panic::catch_unwind(|| refine(&m, &args));
        match r {
            Ok(Err(RefineError::Unrefinable { op, what: why })) => assert!(!op.is_empty() && !why.is_empty(), "{what}"),
            Ok(other) => panic!("{what}: {other:?}"),
            Err(_) => panic!("{what}: refine panicked"),
        }
    }
}

/// `@sum(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32>`: a reduction body.
fn sum() -> Op {
    let s = Type::tensor(F32, &[]);
    func(
        "sum",
        true,
        &[s.clone(), s.clone()],
        [s.clone()],
        vec![op("stablehlo.add", &[0, 1], vec![val(2, &s)], vec![]), ret(&[2])],
    )
}

#[test]
fn hostile_constants_are_not_folded_out_of_their_shape() {
    // A constant whose value has another shape than its result (tensor<2xi64> as tensor<1x2xi64>),
    // sliced and used as a shape; a constant of 0 x 2^62 x 2^62 elements, concatenated.
    let c = |id: u32, value: Attr, result: &Type| {
        op("stablehlo.constant", &[], vec![val(id, result)], vec![("value", value)])
    };
    let one_by_two = Type::tensor(S64, &[1, 2]);
    let s1 = Type::tensor(S64, &[1, 1]);
    let x = vector(None);
    let m = main_of(
        vec![
            c(1, i64_dense(&[2], &[3, 4]), &one_by_two),
            op(
                "stablehlo.slice",
                &[1],
                vec![val(2, &s1)],
                vec![
                    ("start_indices", Attr::I64Array(vec![0, 1])),
                    ("limit_indices", Attr::I64Array(vec![1, 2])),
                    ("strides", Attr::I64Array(vec![1, 1])),
                ],
            ),
            op("stablehlo.reshape", &[2], vec![val(3, &Type::tensor(S64, &[1]))], vec![]),
            op(
                "stablehlo.dynamic_broadcast_in_dim",
                &[0, 3],
                vec![val(4, &x)],
                vec![("broadcast_dimensions", Attr::I64Array(vec![0]))],
            ),
        ],
        4,
        &x,
    );
    assert!(matches!(refine(&m, &[vector(Some(3))]), Err(RefineError::Unrefinable { .. })));
    let empty = ty(S64, &[Some(0), Some(1 << 62), Some(1 << 62)]);
    let twice = ty(S64, &[Some(0), Some(1 << 62), Some(1 << 63)]);
    let m = main_of(
        vec![
            c(1, Attr::Dense { ty: empty.clone(), data: Vec::new().into() }, &empty),
            op(
                "stablehlo.concatenate",
                &[1, 1],
                vec![val(2, &twice)],
                vec![("dimension", Attr::Integer { value: 2, ty: Type::Scalar(S64) })],
            ),
            op("stablehlo.negate", &[0], vec![val(3, &x)], vec![]),
        ],
        3,
        &x,
    );
    let r = std::panic::catch_unwind(|| refine(&m, &[vector(Some(3))]));
    assert!(r.is_ok(), "refine panicked");
}

#[test]
fn hostile_call_graphs_are_bounded() {
    let x = vector(None);
    // A chain of 100 calls: deeper than refinement follows.
    let mut funcs = vec![func("main", false, [x.clone()], [x.clone()], vec![call(1, "f0", &[0], &x), ret(&[1])])];
    for k in 0..100 {
        let next = format!("f{}", k + 1);
        funcs.push(func(&format!("f{k}"), true, [x.clone()], [x.clone()], vec![call(1, &next, &[0], &x), ret(&[1])]));
    }
    funcs.push(func("f100", true, [x.clone()], [x.clone()], vec![ret(&[0])]));
    let (_, what) = unrefinable(refine(&module(funcs), &[vector(Some(2))]));
    assert!(what.contains("nest deeper"), "{what}");

    // 60 functions, each calling the next at 2n and 2n + 1 elements: 2^60 distinct calls, more
    // than refinement copies.
    let mut funcs = vec![func("main", false, [x.clone()], [x.clone()], vec![call(1, "g0", &[0], &x), ret(&[1])])];
    for k in 0..60 {
        let next = format!("g{}", k + 1);
        let pad = op(
            "stablehlo.pad",
            &[1, 2],
            vec![val(3, &x)],
            vec![
                ("edge_padding_low", Attr::I64Array(vec![0])),
                ("edge_padding_high", Attr::I64Array(vec![1])),
                ("interior_padding", Attr::I64Array(vec![0])),
            ],
        );
        let ops = vec![
            op(
                "stablehlo.concatenate",
                &[0, 0],
                vec![val(1, &x)],
                vec![("dimension", Attr::Integer { value: 0, ty: Type::Scalar(S64) })],
            ),
            f32_zero(2),
            pad,
            call(4, &next, &[1], &x),
            call(5, &next, &[3], &x),
        ];
        // Ballast: operands count as work, and cost less time than ops.
        let mut ops = ops;
        ops.push(op("stablehlo.after_all", &[1; 2000], vec![val(6, &Type::Token)], vec![]));
        ops.push(ret(&[4]));
        funcs.push(func(&format!("g{k}"), true, [x.clone()], [x.clone()], ops));
    }
    funcs.push(func("g60", true, [x.clone()], [x.clone()], vec![ret(&[0])]));
    // Without the work cap this would not finish: the error is what stops it (no timing here).
    let (_, what) = unrefinable(refine(&module(funcs), &[vector(Some(1))]));
    assert!(what.contains("would copy more than"), "{what}");

    // A reduction body that holds the dynamic reduce_window that uses it: nested without end
    // unless refinement stops it.
    let s = Type::tensor(F32, &[]);
    let empty = |id: u32| constant(id, &[0], &[]);
    let inner = op(
        "stablehlo.custom_call",
        &[0, 1, 2, 3, 4, 5, 6],
        vec![val(7, &s)],
        vec![
            ("call_target_name", Attr::String(b"stablehlo.dynamic_reduce_window".to_vec())),
            ("called_computations", Attr::Array(vec![Attr::SymbolRef("body".into())])),
        ],
    );
    let pad = constant(6, &[0, 2], &[]);
    let body = func(
        "body",
        true,
        &[s.clone(), s.clone()],
        [s.clone()],
        vec![empty(2), empty(3), empty(4), empty(5), pad.clone(), inner.clone(), ret(&[7])],
    );
    let main = func(
        "main",
        false,
        &[s.clone(), s.clone()],
        [s.clone()],
        vec![empty(2), empty(3), empty(4), empty(5), pad, inner, ret(&[7])],
    );
    let m = module(vec![main, body]);
    // In a thread of 2 MiB, the stack test threads have by default.
    let r = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || refine(&m, &[Type::tensor(F32, &[]), Type::tensor(F32, &[])]))
        .unwrap()
        .join()
        .expect("refine panicked");
    let (_, what) = unrefinable(r);
    assert!(what.contains("nest deeper"), "{what}");
}

#[test]
fn an_enum_attr_of_the_wrong_kind_is_harmless() {
    // compare with an unknown direction is not folded (and not a panic).
    let i1 = Type::tensor(ElementType::PRED, &[]);
    let m = main_of(
        vec![
            constant(1, &[], &[1]),
            op(
                "stablehlo.compare",
                &[1, 1],
                vec![val(2, &i1)],
                vec![("comparison_direction", Attr::Enum(EnumAttr { kind: "comparison_direction", value: "XX" }))],
            ),
            op(
                "stablehlo.custom_call",
                &[2],
                vec![],
                vec![("call_target_name", Attr::String(b"shape_assertion".to_vec()))],
            ),
            op("stablehlo.negate", &[0], vec![val(3, &vector(None))], vec![]),
        ],
        3,
        &vector(None),
    );
    let (_, what) = unrefinable(refine(&m, &[vector(Some(2))]));
    assert!(what.contains("depends on the data"), "{what}");
}

/// `bitcast_convert` changes the rank by the ratio of its element types' bits (StableHLO's
/// `num_bits`), not of the bytes a dense buffer stores them in: i8 → i4 adds a dimension of
/// 2, and i4 → i8 takes it away; f32 → 2 × bf16 as before.
#[test]
fn bitcast_convert_refines_by_bits_not_storage_bytes() {
    for (from, to, arg, want) in [
        ("tensor<?xi8>", "tensor<?x2xi4>", Type::tensor(ElementType::S8, &[3]), "tensor<3x2xi4>"),
        ("tensor<?x2xi4>", "tensor<?xi8>", Type::tensor(ElementType::S4, &[5, 2]), "tensor<5xi8>"),
        ("tensor<?xui8>", "tensor<?x4xui2>", Type::tensor(ElementType::U8, &[2]), "tensor<2x4xui2>"),
        ("tensor<?xf32>", "tensor<?x2xbf16>", Type::tensor(ElementType::F32, &[7]), "tensor<7x2xbf16>"),
        ("tensor<?xi4>", "tensor<?xui4>", Type::tensor(ElementType::S4, &[6]), "tensor<6xui4>"),
    ] {
        let text = format!(
            "func.func @main(%x: {from}) -> {to} {{\n  %0 = stablehlo.bitcast_convert %x : ({from}) -> {to}\n  return %0 : {to}\n}}"
        );
        let module = pjrt_stablehlo::parse_text(&text).unwrap();
        let refined = refine(&module, &[arg]).unwrap_or_else(|e| panic!("{text}: {e}"));
        let printed = print(&refined);
        assert!(
            printed.contains(&format!("-> {want}")) || printed.contains(&format!("-> ({want})")),
            "{text}\n{printed}"
        );
    }
}
