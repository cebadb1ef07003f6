//! 11: one shape-polymorphic `jax.export` model, run at many input shapes.
//!
//! `jax.export` can leave dimensions symbolic, with constraints on them:
//!
//! ```python
//! b, t = jax.export.symbolic_shape("b, t", constraints=["t <= 16"])
//! x = jax.ShapeDtypeStruct((b, t, 8), np.float32)
//! exported = jax.export.export(jax.jit(transformer))(x, *params)
//! ```
//!
//! Its module takes `tensor<?x?x8xf32>`, which plugins do not compile: before compiling, JAX
//! refines the module for the shapes at hand (static types everywhere, the shape assertions
//! checked), and so does `pjrt_stablehlo::refine`. A `jax_export::Runner` does that once per new
//! input signature and keeps the executables, as `jax.jit` keeps one per set of shapes. This
//! example runs the transformer block exported by tools/gen_symbolic_testdata.py (JAX 0.10.2;
//! batch `b`, sequence `t <= 16`) at three (b, t), compares with JAX's outputs, shows that a
//! repeated shape reuses its executable, shows the typed error JAX's constraint gives for
//! t = 17, and then refines the module by hand to print the static `@main` signature.
//!
//! Run it with `cargo run -p pjrt-examples --example 11_shape_polymorphic` (it installs the CPU
//! plugin into the plugin cache when none is found).

use std::path::{Path, PathBuf};

use pjrt_client::{Client, ClientOptions, Plugin};
use pjrt_formats::jax_export::{JaxExport, Runner};
use pjrt_formats::npy::NpyArray;
use pjrt_stablehlo::ir::Type;

/// The manifest's rtol and atol for this model (float32 results of another XLA build).
const TOLERANCE: f32 = 1e-4;

/// Every input of a shape set (`in0.npy`, `in1.npy`, ...), in JAX's order.
fn read_inputs(dir: &Path, count: usize) -> Result<Vec<NpyArray>, pjrt_formats::npy::NpyError> {
    (0..count).map(|i| NpyArray::read(&dir.join(format!("in{i}.npy")))).collect()
}

/// `@main`'s type in the printed module (generic form: the `function_type` attribute of the
/// `func.func` whose `sym_name` is "main").
fn main_signature(text: &str) -> &str {
    let line = text.lines().find(|line| line.contains("sym_name = \"main\"")).unwrap_or("");
    let start = line.find("function_type = ").map_or(line.len(), |i| i + "function_type = ".len());
    // The type ends at the first comma outside its brackets (the `>` of `->` closes none).
    let (mut depth, mut end, mut previous) = (0, line.len(), ' ');
    for (i, c) in line[start..].char_indices() {
        match c {
            '(' | '<' | '[' | '{' => depth += 1,
            '>' if previous == '-' => {}
            ')' | '>' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                end = start + i;
                break;
            }
            _ => {}
        }
        previous = c;
    }
    &line[start..end]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/jax_export/symbolic/jax-0.10.2/transformer");

    // 1. The model: symbolic dimensions in its avals.
    let model = JaxExport::read(dir.join("model.jaxexport"))?;
    assert!(model.is_polymorphic());
    println!("{model}");
    println!("  input 0 {} (and 12 weights of static shape)", model.in_avals()[0]);
    println!("  output  {}", model.out_avals()[0]);
    let count = model.in_avals().len();

    let plugin = Plugin::load(pjrt_plugins::resolve_or_install(None, |line| eprintln!("{line}"))?.load_path())?;
    let client = Client::new(&plugin, &ClientOptions::new())?;
    println!("running on {}", client.platform_name());

    // 2. A runner: each new input signature is refined and compiled once. The weights are the
    //    same in every set; only x (b, t, 8) changes.
    let runner = Runner::new(model.clone(), &client);
    for set in ["ok0", "ok1", "ok2"] {
        let inputs = read_inputs(&dir.join(set), count)?;
        let outputs = runner.run(&inputs)?;
        let got: Vec<f32> = outputs[0].to_vec()?;
        let want: Vec<f32> = NpyArray::read(&dir.join(set).join("out0.npy"))?.to_vec()?;
        assert_eq!(got.len(), want.len());
        let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
        // numpy's allclose: |got - want| <= atol + rtol * |want|.
        let close = got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= TOLERANCE + TOLERANCE * w.abs());
        println!(
            "x {:?} -> {:?}: largest difference from JAX {worst:e}, {} executable(s) kept",
            inputs[0].dims,
            outputs[0].dims,
            runner.cached()
        );
        assert!(close, "{set} differs from JAX's output by up to {worst}");
    }
    assert_eq!(runner.cached(), 3);

    // 3. A shape seen before costs a lookup, not a compile: still three executables.
    let again = runner.run(&read_inputs(&dir.join("ok1"), count)?)?;
    assert_eq!(again[0].dims, [2, 7, 16]);
    assert_eq!(runner.cached(), 3);
    println!("x [2, 7, 8] again: reused, still {} executables", runner.cached());

    // 4. t = 17 breaks `t <= 16`: the module's shape assertion fails with JAX's own message
    //    (before anything is compiled), as a typed error.
    let too_long = read_inputs(&dir.join("bad0"), count)?;
    assert_eq!(too_long[0].dims, [2, 17, 8]);
    match runner.run(&too_long) {
        Err(pjrt_formats::Error::ShapeAssertion { message }) => {
            assert!(message.contains("t <= 16"), "{message}");
            println!("x [2, 17, 8] is refused:\n  {message}");
        }
        Ok(_) => return Err("t = 17 ran".into()),
        Err(e) => return Err(format!("t = 17 failed otherwise: {e}").into()),
    }
    assert_eq!(runner.cached(), 3);

    // 5. The lower level: read the module, refine it for argument types, print it. The module's
    //    parameters are the inputs it keeps (`module_kept_var_idx`; all 13 here).
    let module = pjrt_stablehlo::read_bytecode(model.mlir_module())?;
    assert!(pjrt_stablehlo::is_polymorphic(&module));
    let shapes = model.input_shapes(&read_inputs(&dir.join("ok1"), count)?);
    let args: Vec<Type> = model
        .module_kept_var_idx()
        .iter()
        .map(|&i| {
            let (element_type, dims) = &shapes[i];
            Type::tensor(*element_type, &dims.iter().map(|&d| d as u64).collect::<Vec<_>>())
        })
        .collect();
    let refined = pjrt_stablehlo::refine(&module, &args)?;
    assert!(!pjrt_stablehlo::is_polymorphic(&refined));
    let (before, after) = (pjrt_stablehlo::print(&module), pjrt_stablehlo::print(&refined));
    assert!(main_signature(&before).starts_with("(tensor<?x?x8xf32>"));
    println!("@main as exported:\n  {}", main_signature(&before));
    println!("@main refined for b = 2, t = 7:\n  {}", main_signature(&after));
    assert!(main_signature(&after).contains("tensor<2x7x8xf32>") && !after.contains('?'));
    Ok(())
}
