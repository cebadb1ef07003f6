//! A mutation fuzzer for the portable-artifact reader and the text parser that runs on the
//! stable toolchain (CI has no nightly for cargo-fuzz): for a given number of seconds it takes
//! the corpus files, damages them at random (bit flips, byte overwrites with edge values,
//! truncations, insertions, duplicated and swapped ranges, splices of two files) and checks
//! each result as the libFuzzer targets do (`pjrt_stablehlo::fuzz_check` and
//! `pjrt_stablehlo::fuzz_check_text`). A failing input is written to
//! `target/fuzz-mutations-crash.bin` before the panic is re-raised.
//!
//! The seeds are the files of `CORPUS_DIR` and below, a `jax.export` file standing for the module
//! it holds; by default the repository's `fuzz/corpus/stablehlo` and the shape-polymorphic
//! models of `tests/data/jax_export/symbolic` (whose modules `fuzz_check` also refines), and
//! for the parser `fuzz/corpus/stablehlo_text` and the `.mlir` programs of those models.
//!
//! `cargo run --release -p pjrt-stablehlo --example fuzz_mutations -- [CORPUS_DIR [SECONDS [SEED]]]`
//! (defaults: the seeds above, also for an empty CORPUS_DIR; 20 s). CI runs it with the defaults,
//! as it runs every example.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// xorshift64*: deterministic per seed, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, corpus: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let len = input.len();
        match rng.below(7) {
            0 if len > 0 => {
                let at = rng.below(len);
                input[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                input[at] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0xfe][rng.below(6)];
            }
            2 => input.truncate(rng.below(len + 1)),
            3 => {
                let at = rng.below(len + 1);
                let bytes: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.next() as u8).collect();
                input.splice(at..at, bytes);
            }
            4 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                let (start, end) = (a.min(b), a.max(b));
                let copy = input[start..end].to_vec();
                let at = rng.below(len + 1);
                input.splice(at..at, copy);
            }
            5 if len > 1 => {
                let (a, b) = (rng.below(len), rng.below(len));
                input.swap(a, b);
            }
            _ => {
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                input.truncate(cut);
                input.extend_from_slice(&other[from..]);
            }
        }
    }
}

/// The files under `dir` that `keep` accepts, read (a `jax.export` file as its module).
fn seeds(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<Vec<u8>>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read the corpus {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            seeds(&path, keep, out);
        } else if keep(&path) {
            let bytes = std::fs::read(&path).unwrap();
            if pjrt_formats::jax_export::JaxExport::looks_like(&bytes) {
                let export = pjrt_formats::jax_export::JaxExport::from_bytes(&bytes)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push(export.mlir_module().to_vec());
            } else {
                out.push(bytes);
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().filter(|d| !d.is_empty()).map(PathBuf::from);
    let seconds: u64 = match args.next() {
        Some(s) => s.parse().expect("SECONDS must be a number"),
        None => 20,
    };
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut corpus = Vec::new();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let corpus_name = match &dir {
        Some(dir) => {
            seeds(dir, &|_| true, &mut corpus);
            dir.display().to_string()
        }
        None => {
            seeds(&repo.join("fuzz/corpus/stablehlo"), &|_| true, &mut corpus);
            let models = |p: &Path| p.file_name().is_some_and(|n| n == "model.jaxexport");
            seeds(&repo.join("tests/data/jax_export/symbolic"), &models, &mut corpus);
            seeds(&repo.join("fuzz/corpus/stablehlo_text"), &|_| true, &mut corpus);
            let programs = |p: &Path| p.file_name().is_some_and(|n| n == "program.mlir");
            seeds(&repo.join("tests/data/jax_export/symbolic"), &programs, &mut corpus);
            "fuzz/corpus/stablehlo, fuzz/corpus/stablehlo_text and tests/data/jax_export/symbolic".to_string()
        }
    };
    corpus.sort();
    assert!(!corpus.is_empty(), "the corpus {corpus_name} is empty");
    let mut rng = Rng(seed | 1);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut runs = 0u64;
    while Instant::now() < deadline {
        let mut input = corpus[rng.below(corpus.len())].clone();
        mutate(&mut rng, &corpus, &mut input);
        let check = || {
            pjrt_stablehlo::fuzz_check(&input);
            pjrt_stablehlo::fuzz_check_text(&input);
        };
        if let Err(panic) = panic::catch_unwind(AssertUnwindSafe(check)) {
            let crash = PathBuf::from("target/fuzz-mutations-crash.bin");
            let _ = std::fs::write(&crash, &input);
            eprintln!("input {runs} (seed {seed}) failed; written to {}", crash.display());
            panic::resume_unwind(panic);
        }
        runs += 1;
    }
    println!("{runs} mutated inputs from {} corpus files in {seconds} s: every one read cleanly (and refined or gave an error) or gave an error inside the input", corpus.len());
}
