//! The execute hot path (`execute`, `execute_on`) allocates nothing: the outputs are held inline
//! and their shapes copied from the executable.
//!
//! A counting global allocator sees every Rust allocation of this test binary (the plugin's own
//! C++ allocations go through malloc and are not counted: they are the plugin's business).
//!
//! A test binary of its own: the count must see this test's allocations only (not a module of `tests/client`, see its `main.rs`).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pjrt_client::{CompileOptions, Placement, Program};

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

const TWO_OUTPUTS: &str = r#"
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = stablehlo.multiply %a, %b : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}"#;

#[test]
fn execute_allocates_nothing() {
    for name in support::PLUGINS {
        let client = support::client(name, 1);
        let exe = client.compile(&Program::mlir_text(TWO_OUTPUTS).unwrap(), &CompileOptions::new()).unwrap();
        let a = client.buffer_from_slice(&[1f32, 2., 3., 4.], &[4], Placement::Default).unwrap();
        let b = client.buffer_from_slice(&[5f32, 6., 7., 8.], &[4], Placement::Default).unwrap();
        // Warm-up: parameter shapes are read once, on the first call.
        let device = client.addressable_devices()[0];
        for _ in 0..10 {
            drop(exe.execute(&[&a, &b]).unwrap());
            drop(exe.execute_on(&device, &[&a, &b]).unwrap());
        }
        const RUNS: usize = 1000;
        ALLOCATIONS.store(0, Ordering::SeqCst);
        COUNTING.store(true, Ordering::SeqCst);
        for _ in 0..RUNS {
            let outputs = exe.execute(&[&a, &b]).unwrap();
            assert_eq!(outputs.len(), 2);
            drop(outputs);
            let outputs = exe.execute_on(&device, &[&a, &b]).unwrap();
            assert_eq!(outputs[1].dimensions().unwrap(), [4]);
            drop(outputs);
        }
        COUNTING.store(false, Ordering::SeqCst);
        let allocations = ALLOCATIONS.load(Ordering::SeqCst);
        assert_eq!(allocations, 0, "{name}: {allocations} Rust allocations in {} executes", 2 * RUNS);
    }
}
