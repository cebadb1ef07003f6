//! pjrt-stablehlo's integration tests: one binary, one module per concern.
//!
//! `round_trip`: every committed portable artifact is read, printed, compiled from the text and
//! run on both CPU plugins; the results equal those of the bytecode given to the plugin
//! directly. `hostile`: truncated and bit-flipped files give errors, never panics. `refine`:
//! shape refinement of the symbolic models and of hand-made (and hostile) modules.
//! `support` (the real CPU plugins) is pjrt-client's.

#[path = "../../../pjrt-client/tests/support/mod.rs"]
mod support;

mod chlo;
mod dense;
mod files;
mod gaps;
mod hostile;
mod ops;
mod refine;
mod round_trip;
mod text;
mod vhlo;
mod vhlo_run;
mod write;

/// Compiles `program` and runs it on `args` on the client's first device: the outputs, on the
/// host (`what` names the case in a failure).
fn compile_and_run(
    client: &pjrt_client::Client,
    program: &pjrt_client::Program,
    args: &[pjrt_client::HostArray],
    what: &str,
) -> Vec<pjrt_client::HostArray> {
    use pjrt_client::{CompileOptions, ExecuteOptions, UploadOptions};
    let exe = client.compile(program, &CompileOptions::new()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let buffers: Vec<_> = args.iter().map(|a| client.upload_with(a, &UploadOptions::new()).unwrap()).collect();
    let refs: Vec<&pjrt_client::Buffer> = buffers.iter().collect();
    let outs = exe.execute(&refs, &ExecuteOptions::new()).unwrap_or_else(|e| panic!("{what}: {e}"));
    outs.iter().map(|o| o.to_host_array().unwrap()).collect()
}
