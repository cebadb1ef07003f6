//! The execute hot path (`execute`, and `execute` with `ExecuteOptions::device`) allocates nothing for a program with one output
//! (held inline, its shape copied from the executable), and exactly once for a program with
//! several (the outputs, at their exact size).
//!
//! A counting global allocator sees every Rust allocation of this test binary (the plugin's own
//! C++ allocations go through malloc and are not counted: they are the plugin's business).
//!
//! A test binary of its own: the count must see this test's allocations only (not a module of `tests/client`, see its `main.rs`).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pjrt_client::{CompileOptions, ExecuteOptions, Program};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ONE_OUTPUT: &str = r#"
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}"#;

const TWO_OUTPUTS: &str = r#"
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}"#;

/// Rust allocations per call of `execute` and of `execute` on a named device, after a warm-up (the parameter
/// shapes are read once, on the first call), for a program of two `f32[4]` parameters with
/// `outputs` outputs, on each CPU plugin. Every call must allocate the same number of times.
fn allocations_per_execute(program: &str, outputs: usize) -> Vec<(&'static str, usize)> {
    let mut counts = Vec::new();
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(program).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.upload(&[1f32, 2., 3., 4.], &[4]).unwrap();
        let b = client.upload(&[5f32, 6., 7., 8.], &[4]).unwrap();
        let device = client.addressable_devices()[0];
        for _ in 0..10 {
            drop(exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap());
            drop(exe.execute(&[&a, &b], &ExecuteOptions::new().device(&device)).unwrap());
        }
        const RUNS: usize = 1000;
        ALLOCATIONS.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        for _ in 0..RUNS {
            let results = exe.execute(&[&a, &b], &ExecuteOptions::new()).unwrap();
            assert_eq!(results.len(), outputs);
            drop(results);
            let results = exe.execute(&[&a, &b], &ExecuteOptions::new().device(&device)).unwrap();
            assert_eq!(results[outputs - 1].dimensions().unwrap(), [4]);
            drop(results);
        }
        COUNTING.store(false, Ordering::SeqCst);
        let allocations = ALLOCATIONS.load(Ordering::SeqCst);
        assert_eq!(allocations % (2 * RUNS), 0, "{name}: {allocations} Rust allocations in {} executes", 2 * RUNS);
        counts.push((*name, allocations / (2 * RUNS)));
    }
    counts
}

/// One test, not two: the count is global, and tests of a binary run in parallel.
#[test]
fn execute_allocates_nothing_for_one_output_and_once_for_several() {
    for (name, count) in allocations_per_execute(ONE_OUTPUT, 1) {
        assert_eq!(count, 0, "{name}: Rust allocations per execute of a one-output program");
    }
    for (name, count) in allocations_per_execute(TWO_OUTPUTS, 2) {
        assert_eq!(
            count, 1,
            "{name}: Rust allocations per execute of a two-output program (the outputs, at their exact size)"
        );
    }
}
