//! One model run from many threads at once, every answer checked; a shape-polymorphic one
//! compiled for new shapes from several threads at once; a model freed while threads run it.

use pjrt::*;

use crate::support::*;

/// A model handle to share with threads (it is an id, usable from any thread).
#[derive(Clone, Copy)]
struct Shared(*mut pjrt_model);
// SAFETY: a handle is an id into the library's registry; every function taking it is
// thread-safe (the library's promise this module tests).
unsafe impl Send for Shared {}

#[test]
fn one_model_many_threads() {
    let runtime = runtime();
    let model = Shared(load(runtime, &format!("{MLP}/model.jaxexport"), None));
    let want = arrays(MLP, "out")[0].to_vec::<f32>().unwrap();
    std::thread::scope(|scope| {
        for thread in 0..8 {
            let want = &want;
            scope.spawn(move || {
                let model = model;
                let arrays = arrays(MLP, "in");
                let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
                for _ in 0..50 {
                    let got = run_f32(model.0, &tensors, 1).unwrap_or_else(|e| panic!("thread {thread}: {e:?}"));
                    assert_close(&got[0].1, want, 1e-5, 1e-5);
                }
            });
        }
    });
    ok(pjrt_model_free(model.0));
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn new_shapes_compiled_from_several_threads() {
    let runtime = runtime();
    let model = Shared(load(runtime, &format!("{TRANSFORMER}/model.jaxexport"), None));
    std::thread::scope(|scope| {
        for thread in 0..4 {
            scope.spawn(move || {
                let model = model;
                for case in ["ok0", "ok1", "ok2"] {
                    let dir = format!("{TRANSFORMER}/{case}");
                    let arrays = arrays(&dir, "in");
                    let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
                    let got = run_f32(model.0, &tensors, 1).unwrap_or_else(|e| panic!("thread {thread} {case}: {e:?}"));
                    let want = crate::support::arrays(&dir, "out")[0].to_vec::<f32>().unwrap();
                    assert_close(&got[0].1, &want, 1e-4, 1e-4);
                }
            });
        }
    });
    ok(pjrt_model_free(model.0));
    ok(pjrt_runtime_free(runtime));
}

#[test]
fn a_model_freed_while_threads_run_it() {
    let runtime = runtime();
    let model = Shared(load(runtime, &format!("{MLP}/model.jaxexport"), None));
    let want = arrays(MLP, "out")[0].to_vec::<f32>().unwrap();
    std::thread::scope(|scope| {
        let mut runners = Vec::new();
        for _ in 0..4 {
            let want = &want;
            runners.push(scope.spawn(move || {
                let model = model;
                let arrays = arrays(MLP, "in");
                let tensors: Vec<pjrt_tensor> = arrays.iter().map(tensor).collect();
                let mut ran = 0;
                loop {
                    match run_f32(model.0, &tensors, 1) {
                        Ok(got) => assert_close(&got[0].1, want, 1e-5, 1e-5),
                        Err((_, message)) => {
                            assert_eq!(message, "model: this pjrt_model was freed already");
                            return ran;
                        }
                    }
                    ran += 1;
                }
            }));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        ok(pjrt_model_free(model.0));
        for runner in runners {
            runner.join().unwrap();
        }
    });
    ok(pjrt_runtime_free(runtime));
}
