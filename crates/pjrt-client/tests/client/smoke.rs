//! The smallest end-to-end run: compile, upload, execute and download `add` on both CPU plugins.

use pjrt_client::{CompileOptions, ExecuteOptions, Program};

use crate::support;

#[test]
fn add_runs_on_both_plugins() {
    for name in support::PLUGINS {
        let client = support::client(name, 4);
        let exe = client.compile(&Program::mlir_text(support::ADD_F32).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let b = client.upload(&[10f32, 20., 30., 40.], &[4]).unwrap();
        let out = exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
        assert_eq!(out[0].to_vec::<f32>().unwrap(), [11., 22., 33., 44.], "{name}");
        eprintln!("{name}: params {:?}", exe.parameter_shapes());
    }
}
