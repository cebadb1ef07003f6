//! Thread stress on both CPU plugins.
//!
//! - `shared_client_under_load`: 8 threads share one client (4 devices) and two executables (one
//!   compiled for device 0, one portable) and, for a bounded time, do a random mix of uploads,
//!   executions, device-to-device copies, synchronous and asynchronous downloads, bounded waits on
//!   ready events and `on_ready` callbacks, hand buffers to each other and drop everything in
//!   random order. Every value read back is compared exactly with a value computed on the host.
//! - `dropping_the_client_keeps_children_working`: the `Client` handle is dropped while buffers,
//!   events, a host transfer and the executable live on in other threads, which go on using them;
//!   the last object alive (an event) is dropped last, in a worker thread.
//! - `public_types_are_send_sync`: a compile-time check.
//!
//! Every wait the test makes itself is bounded (`Event::wait_timeout`, `OnReady::wait_timeout`),
//! and a watchdog joins the worker threads against a deadline: a deadlock fails the test with
//! the name of the stuck thread and the operation it was in, instead of hanging. (Library calls
//! that wait internally, such as `to_vec` or `execute`, are covered by the watchdog.)

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pjrt_client::{
    Buffer, Client, CompileOptions, DownloadOptions, Event, ExecuteOptions, HostSource, HostTransfer, LoadedExecutable,
    Placement, Program, UploadOptions,
};

use crate::support;

/// Worker threads per plugin.
const THREADS: usize = 8;
/// CPU devices of the shared client.
const DEVICES: usize = 4;
/// How long the workers of one plugin run their random mix.
const RUN_FOR: Duration = Duration::from_secs(3);
/// The bound on any single wait.
const WAIT: Duration = Duration::from_secs(60);
/// The watchdog's bound on one whole run (all threads, including their final checks).
const DEADLINE: Duration = Duration::from_secs(180);
/// Elements of every vector.
const N: usize = 64;
/// Buffers a worker holds at most.
const POOL: usize = 24;
/// Host transfers, events and callbacks a worker keeps in flight at most.
const IN_FLIGHT: usize = 8;
/// Buffers parked for other threads at most.
const EXCHANGE: usize = 32;

/// `x * y + z` on f32[64] and the sum of an i32[64]. The test keeps every f32 value an integer
/// below 2^24 in magnitude, so the result is exact whether or not XLA fuses the multiply-add.
const PROGRAM: &str = support::FMA_AND_SUM;

/// Largest magnitude for which every integer is exact in f32.
const EXACT_F32: f32 = 16_777_216.0;
/// Largest magnitude of an f32 argument: first-generation outputs (at most 32 * 32 + 32) are
/// reused as arguments, their outputs (up to about 2^20) are only copied and read.
const F32_ARGUMENT_BOUND: f32 = 2048.0;

// ---------------------------------------------------------------------------------------------
// Watchdog

/// What each worker is doing, for the watchdog's message.
struct Progress {
    op: AtomicUsize,
    done: AtomicU64,
}

impl Progress {
    fn new() -> Arc<Progress> {
        Arc::new(Progress { op: AtomicUsize::new(0), done: AtomicU64::new(0) })
    }

    fn enter(&self, op: Op) {
        self.op.store(op as usize, Ordering::Relaxed);
    }

    fn finish_op(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

/// Worker threads joined against a deadline.
struct Watchdog<T> {
    done_tx: mpsc::Sender<usize>,
    done_rx: mpsc::Receiver<usize>,
    threads: Vec<(String, Arc<Progress>, JoinHandle<T>)>,
}

/// Reports a thread as finished when it returns or panics.
struct DoneGuard(mpsc::Sender<usize>, usize);

impl Drop for DoneGuard {
    fn drop(&mut self) {
        let _ = self.0.send(self.1);
    }
}

impl<T: Send + 'static> Watchdog<T> {
    fn new() -> Self {
        let (done_tx, done_rx) = mpsc::channel();
        Watchdog { done_tx, done_rx, threads: Vec::new() }
    }

    fn spawn(&mut self, name: String, work: impl FnOnce(&Progress) -> T + Send + 'static) {
        let index = self.threads.len();
        let progress = Progress::new();
        let guard = DoneGuard(self.done_tx.clone(), index);
        let mine = progress.clone();
        let handle = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let _guard = guard;
                work(&mine)
            })
            .expect("spawning a worker thread");
        self.threads.push((name, progress, handle));
    }

    /// Joins every thread by `deadline`; panics naming the threads that are stuck or panicked.
    fn join(self, deadline: Duration) -> Vec<T> {
        let start = Instant::now();
        let mut finished = vec![false; self.threads.len()];
        while finished.iter().any(|f| !f) {
            let left = deadline.saturating_sub(start.elapsed());
            match self.done_rx.recv_timeout(left) {
                Ok(i) => finished[i] = true,
                Err(_) => {
                    let stuck: Vec<String> = self
                        .threads
                        .iter()
                        .zip(&finished)
                        .filter(|(_, f)| !**f)
                        .map(|((name, p, _), _)| {
                            format!(
                                "`{name}` (in `{}` after {} operations)",
                                OPS[p.op.load(Ordering::Relaxed)].name(),
                                p.done.load(Ordering::Relaxed)
                            )
                        })
                        .collect();
                    abort_if_exit_hangs();
                    panic!("watchdog: after {deadline:?} these threads are stuck: {}", stuck.join(", "));
                }
            }
        }
        let mut results = Vec::new();
        let mut failures = Vec::new();
        for (name, _, handle) in self.threads {
            match handle.join() {
                Ok(r) => results.push(r),
                Err(payload) => failures.push(format!("`{name}`: {}", panic_text(payload.as_ref()))),
            }
        }
        assert!(failures.is_empty(), "worker threads panicked:\n{}", failures.join("\n"));
        results
    }
}

/// A stuck thread may also block the process's exit (plugin destructors); make sure the test
/// process ends anyway.
fn abort_if_exit_hangs() {
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(60));
        eprintln!("stress: the process is still alive 60 s after the watchdog fired; aborting");
        std::process::abort();
    });
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".into())
}

// ---------------------------------------------------------------------------------------------
// Random numbers and host-side values

/// xorshift64*: small, deterministic per seed, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + (self.next() % (hi - lo + 1) as u64) as i32
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// What a buffer must hold.
#[derive(Debug, PartialEq)]
enum Data {
    F32(Vec<f32>),
    I32(Vec<i32>),
    Sum(i32),
}

impl Data {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::Sum(s) => s.to_le_bytes().to_vec(),
        }
    }

    /// Largest magnitude of an f32 vector.
    fn bound(&self) -> f32 {
        match self {
            Data::F32(v) => v.iter().fold(0f32, |m, x| m.max(x.abs())),
            _ => f32::INFINITY,
        }
    }
}

/// A buffer with the values it must hold and the index of its device.
struct Item {
    buffer: Buffer,
    data: Arc<Data>,
    device: usize,
}

fn verify(item: &Item, what: &str) {
    let got = match &*item.data {
        Data::F32(_) => Data::F32(item.buffer.to_vec::<f32>().unwrap_or_else(|e| panic!("{what}: to_vec: {e}"))),
        Data::I32(_) => Data::I32(item.buffer.to_vec::<i32>().unwrap_or_else(|e| panic!("{what}: to_vec: {e}"))),
        Data::Sum(_) => {
            let v = item.buffer.to_vec::<i32>().unwrap_or_else(|e| panic!("{what}: to_vec: {e}"));
            assert_eq!(v.len(), 1, "{what}: a scalar has one element");
            Data::Sum(v[0])
        }
    };
    assert_eq!(got, *item.data, "{what}: wrong values");
}

fn wait_bounded(event: &Event, what: &str) {
    event.wait_timeout(WAIT).unwrap_or_else(|e| panic!("{what}: {e}"));
}

// ---------------------------------------------------------------------------------------------
// The worker

#[derive(Clone, Copy)]
#[repr(usize)]
enum Op {
    Start,
    Upload,
    Execute,
    ExecuteOn,
    Copy,
    Download,
    StartTransfer,
    FinishTransfer,
    ReadyWait,
    Callback,
    KeepEvent,
    Drop,
    Exchange,
    Drain,
}

const OPS: [Op; 14] = [
    Op::Start,
    Op::Upload,
    Op::Execute,
    Op::ExecuteOn,
    Op::Copy,
    Op::Download,
    Op::StartTransfer,
    Op::FinishTransfer,
    Op::ReadyWait,
    Op::Callback,
    Op::KeepEvent,
    Op::Drop,
    Op::Exchange,
    Op::Drain,
];

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Start => "start",
            Op::Upload => "upload",
            Op::Execute => "execute_sharded_async + bounded waits",
            Op::ExecuteOn => "execute on a device (portable)",
            Op::Copy => "copy_to_device",
            Op::Download => "to_vec",
            Op::StartTransfer => "to_bytes_async",
            Op::FinishTransfer => "finish a host transfer",
            Op::ReadyWait => "ready_event().wait_timeout",
            Op::Callback => "on_ready + OnReady::wait_timeout",
            Op::KeepEvent => "keep or drop a ready event",
            Op::Drop => "drop a buffer",
            Op::Exchange => "exchange buffers between threads",
            Op::Drain => "final checks and drops",
        }
    }
}

struct Shared {
    client: Client,
    exe: LoadedExecutable,
    portable: LoadedExecutable,
    /// Index (in `client.addressable_devices()`) of the device `exe` runs on.
    exe_device: usize,
    /// Buffers parked by one thread for another to verify, use or drop.
    exchange: Mutex<Vec<Item>>,
}

#[derive(Default, Debug)]
struct Stats {
    ops: [u64; OPS.len()],
    verified: u64,
}

struct Worker<'a> {
    shared: &'a Shared,
    rng: Rng,
    progress: &'a Progress,
    name: String,
    pool: Vec<Item>,
    transfers: Vec<(HostTransfer, Arc<Data>)>,
    events: Vec<Event>,
    callbacks: Arc<AtomicU64>,
    stats: Stats,
}

/// Uploads random f32 values (integers in -32..=32) to device `device`.
fn upload_f32(client: &Client, rng: &mut Rng, device: usize) -> Item {
    let values: Vec<f32> = (0..N).map(|_| rng.range(-32, 32) as f32).collect();
    upload(client, Data::F32(values), device)
}

/// Uploads random i32 values (in -1000..=1000) to device `device`.
fn upload_i32(client: &Client, rng: &mut Rng, device: usize) -> Item {
    let values: Vec<i32> = (0..N).map(|_| rng.range(-1000, 1000)).collect();
    upload(client, Data::I32(values), device)
}

fn upload(client: &Client, data: Data, device: usize) -> Item {
    let devices = client.addressable_devices();
    let placement = Placement::Device(&devices[device]);
    let buffer = match &data {
        Data::F32(v) => {
            client.upload_with(HostSource::slice(v, &[N as i64]), &UploadOptions::new().placement(placement))
        }
        Data::I32(v) => {
            client.upload_with(HostSource::slice(v, &[N as i64]), &UploadOptions::new().placement(placement))
        }
        Data::Sum(s) => client.upload_with(HostSource::slice(&[*s], &[]), &UploadOptions::new().placement(placement)),
    }
    .unwrap_or_else(|e| panic!("upload: {e}"));
    Item { buffer, data: Arc::new(data), device }
}

/// The outputs `PROGRAM` must give for these arguments.
fn expected(x: &Data, y: &Data, z: &Data, k: &Data) -> (Data, Data) {
    let (Data::F32(x), Data::F32(y), Data::F32(z), Data::I32(k)) = (x, y, z, k) else {
        unreachable!("arguments are chosen by kind")
    };
    let fma: Vec<f32> = (0..N).map(|i| x[i] * y[i] + z[i]).collect();
    assert!(fma.iter().all(|v| v.abs() < EXACT_F32), "argument bounds keep results exact");
    let sum = k.iter().fold(0i32, |s, v| s.wrapping_add(*v));
    (Data::F32(fma), Data::Sum(sum))
}

impl Worker<'_> {
    fn upload_f32(&mut self, device: usize) -> Item {
        upload_f32(&self.shared.client, &mut self.rng, device)
    }

    fn upload_i32(&mut self, device: usize) -> Item {
        upload_i32(&self.shared.client, &mut self.rng, device)
    }

    /// A copy of `item` on `device` (or `None` if it is there already).
    fn copy_of(&self, item: &Item, device: usize) -> Option<Item> {
        if item.device == device {
            return None;
        }
        let devices = self.shared.client.addressable_devices();
        let buffer = item
            .buffer
            .copy_to_device(&devices[device])
            .unwrap_or_else(|e| panic!("{}: copy_to_device: {e}", self.name));
        Some(Item { buffer, data: item.data.clone(), device })
    }

    /// Picks the arguments of one execution on `device` from the pool (uploading what is
    /// missing) and returns them with the expected outputs. Arguments on other devices are copied
    /// first; those copies are returned as well, to be dropped in random order.
    fn arguments(&mut self, device: usize) -> (Vec<Item>, Data, Data) {
        let mut chosen: Vec<Item> = Vec::new();
        for slot in 0..4 {
            // Look at a few random pool items for one of the right kind and range.
            let mut found = None;
            for _ in 0..4 {
                if self.pool.is_empty() {
                    break;
                }
                let i = self.rng.below(self.pool.len());
                let ok = match &*self.pool[i].data {
                    Data::I32(_) => slot == 3,
                    // |x|, |y|, |z| <= 2^11 keeps x*y+z below 2^24, where f32 is exact.
                    Data::F32(_) => slot < 3 && self.pool[i].data.bound() <= F32_ARGUMENT_BOUND,
                    Data::Sum(_) => false,
                };
                if ok {
                    found = Some(i);
                    break;
                }
            }
            let item = match found {
                Some(i) => {
                    // Take it out of the pool (it goes back afterwards, or is dropped).
                    let item = self.pool.swap_remove(i);
                    match self.copy_of(&item, device) {
                        Some(copy) => {
                            if self.rng.chance(50) {
                                drop(item); // the original may go before the copy finished
                            } else {
                                self.pool.push(item);
                            }
                            copy
                        }
                        None => item,
                    }
                }
                None if slot == 3 => self.upload_i32(device),
                None => self.upload_f32(device),
            };
            chosen.push(item);
        }
        let (fma, sum) = expected(&chosen[0].data, &chosen[1].data, &chosen[2].data, &chosen[3].data);
        (chosen, fma, sum)
    }

    /// Puts the arguments of an execution back into the pool or drops them, in random order.
    fn release(&mut self, mut items: Vec<Item>) {
        while !items.is_empty() {
            let item = items.swap_remove(self.rng.below(items.len()));
            if self.pool.len() < POOL && self.rng.chance(60) {
                self.pool.push(item);
            }
        }
    }

    fn push_outputs(&mut self, outputs: Vec<Buffer>, fma: Data, sum: Data, device: usize) {
        assert_eq!(outputs.len(), 2, "{}: two outputs", self.name);
        let mut outputs = outputs.into_iter();
        let a = outputs.next().unwrap();
        let s = outputs.next().unwrap();
        self.pool.push(Item { buffer: a, data: Arc::new(fma), device });
        self.pool.push(Item { buffer: s, data: Arc::new(sum), device });
    }

    fn execute(&mut self) {
        let device = self.shared.exe_device;
        let (args, fma, sum) = self.arguments(device);
        let refs: Vec<&Buffer> = args.iter().map(|a| &a.buffer).collect();
        let mut run = self
            .shared
            .exe
            .execute_sharded_async(&[refs], &ExecuteOptions::new())
            .unwrap_or_else(|e| panic!("{}: execute: {e}", self.name));
        let mut outputs = run.take_outputs();
        // Either wait (bounded) for completion, or drop the events and the arguments while the
        // execution may still run: the outputs are then waited for by whatever reads them.
        if self.rng.chance(50) {
            for event in run.events() {
                wait_bounded(event, "execution event");
            }
        }
        drop(run);
        self.release(args);
        self.push_outputs(outputs.remove(0), fma, sum, device);
    }

    fn execute_on(&mut self) {
        let device = self.rng.below(DEVICES);
        let (args, fma, sum) = self.arguments(device);
        let refs: Vec<&Buffer> = args.iter().map(|a| &a.buffer).collect();
        let devices = self.shared.client.addressable_devices();
        let outputs = self
            .shared
            .portable
            .execute(&refs, &ExecuteOptions::new().device(&devices[device]))
            .unwrap_or_else(|e| panic!("{}: execute_on: {e}", self.name));
        drop(refs);
        self.release(args);
        self.push_outputs(outputs.into_vec(), fma, sum, device);
    }

    fn random_item(&mut self) -> Option<usize> {
        (!self.pool.is_empty()).then(|| self.rng.below(self.pool.len()))
    }

    fn step(&mut self) {
        let op = if self.pool.len() < 4 {
            Op::Upload
        } else if self.pool.len() >= POOL {
            Op::Drop
        } else {
            match self.rng.below(100) {
                0..=9 => Op::Upload,
                10..=21 => Op::Execute,
                22..=29 => Op::ExecuteOn,
                30..=41 => Op::Copy,
                42..=51 => Op::Download,
                52..=59 => Op::StartTransfer,
                60..=66 => Op::FinishTransfer,
                67..=72 => Op::ReadyWait,
                73..=77 => Op::Callback,
                78..=82 => Op::KeepEvent,
                83..=92 => Op::Drop,
                _ => Op::Exchange,
            }
        };
        self.progress.enter(op);
        self.stats.ops[op as usize] += 1;
        match op {
            Op::Upload => {
                let device = self.rng.below(DEVICES);
                let item = if self.rng.chance(60) { self.upload_f32(device) } else { self.upload_i32(device) };
                self.pool.push(item);
            }
            Op::Execute => self.execute(),
            Op::ExecuteOn => self.execute_on(),
            Op::Copy => {
                let i = self.random_item().unwrap();
                let to = (self.pool[i].device + 1 + self.rng.below(DEVICES - 1)) % DEVICES;
                let copy = self.copy_of(&self.pool[i], to).expect("a different device");
                if self.rng.chance(30) {
                    wait_bounded(&copy.buffer.ready_event().unwrap(), "ready event of a copy");
                    let devices = self.shared.client.addressable_devices();
                    assert!(copy.buffer.device().unwrap() == devices[to], "{}: copy on the wrong device", self.name);
                }
                if self.rng.chance(30) {
                    // Drop the source right away: the copy must still complete correctly.
                    self.pool.swap_remove(i);
                }
                self.pool.push(copy);
            }
            Op::Download => {
                let i = self.random_item().unwrap();
                verify(&self.pool[i], &self.name);
                self.stats.verified += 1;
            }
            Op::StartTransfer => {
                if self.transfers.len() >= IN_FLIGHT {
                    return self.finish_transfer(true);
                }
                let i = self.random_item().unwrap();
                let item = &self.pool[i];
                let size = item.buffer.host_size().unwrap();
                let transfer = item.buffer.to_bytes_async(DownloadOptions::new().destination(vec![0u8; size])).unwrap();
                self.transfers.push((transfer, item.data.clone()));
                if self.rng.chance(30) {
                    self.pool.swap_remove(i); // the transfer outlives its buffer
                }
            }
            Op::FinishTransfer => {
                let wait = self.rng.chance(75);
                self.finish_transfer(wait)
            }
            Op::ReadyWait => {
                let i = self.random_item().unwrap();
                wait_bounded(&self.pool[i].buffer.ready_event().unwrap(), "ready event");
            }
            Op::Callback => {
                let i = self.random_item().unwrap();
                let event = self.pool[i].buffer.ready_event().unwrap();
                let count = self.callbacks.clone();
                let handle = event
                    .on_ready(move |status| {
                        status.expect("a ready event of a valid buffer succeeds");
                        count.fetch_add(1, Ordering::Relaxed);
                    })
                    .unwrap();
                if self.rng.chance(50) {
                    drop(event); // the callback must still run
                }
                let ran = handle.wait_timeout(WAIT).unwrap_or_else(|e| panic!("{}: on_ready: {e}", self.name));
                assert!(ran, "{}: an on_ready callback did not run within {WAIT:?}", self.name);
            }
            Op::KeepEvent => {
                if self.events.len() >= IN_FLIGHT || self.rng.chance(40) {
                    if !self.events.is_empty() {
                        let event = self.events.swap_remove(self.rng.below(self.events.len()));
                        if self.rng.chance(50) {
                            wait_bounded(&event, "kept ready event");
                        }
                    }
                } else {
                    let i = self.random_item().unwrap();
                    self.events.push(self.pool[i].buffer.ready_event().unwrap());
                    if self.rng.chance(30) {
                        self.pool.swap_remove(i); // the event outlives its buffer
                    }
                }
            }
            Op::Drop => {
                let i = self.random_item().unwrap();
                let item = self.pool.swap_remove(i);
                if self.rng.chance(10) {
                    wait_bounded(&item.buffer.ready_event().unwrap(), "ready event before delete");
                    item.buffer.delete().unwrap();
                    assert!(item.buffer.is_deleted().unwrap());
                }
            }
            Op::Exchange => {
                let mut exchange = self.shared.exchange.lock().unwrap();
                if self.rng.chance(50) && exchange.len() < EXCHANGE {
                    let i = self.random_item().unwrap();
                    exchange.push(self.pool.swap_remove(i));
                } else if !exchange.is_empty() {
                    let i = self.rng.below(exchange.len());
                    let item = exchange.swap_remove(i);
                    drop(exchange);
                    // Another thread's buffer: check it here before using it further.
                    verify(&item, &self.name);
                    self.stats.verified += 1;
                    self.pool.push(item);
                }
            }
            Op::Start | Op::Drain => unreachable!(),
        }
        self.progress.finish_op();
    }

    fn finish_transfer(&mut self, wait: bool) {
        if self.transfers.is_empty() {
            return;
        }
        let (transfer, data) = self.transfers.swap_remove(self.rng.below(self.transfers.len()));
        if wait {
            if let Some(event) = transfer.event() {
                wait_bounded(event, "host transfer");
            }
            let bytes = transfer.wait().unwrap_or_else(|e| panic!("{}: host transfer: {e}", self.name));
            assert!(bytes == data.bytes(), "{}: host transfer read wrong values", self.name);
            self.stats.verified += 1;
        } else {
            drop(transfer); // dropping waits for the copy before freeing the destination
        }
    }

    /// Checks and drops everything left, in random order.
    fn drain(&mut self) {
        self.progress.enter(Op::Drain);
        while !self.transfers.is_empty() {
            self.finish_transfer(true);
        }
        while !self.pool.is_empty() {
            let item = self.pool.swap_remove(self.rng.below(self.pool.len()));
            verify(&item, &self.name);
            self.stats.verified += 1;
        }
        while !self.events.is_empty() {
            let event = self.events.swap_remove(self.rng.below(self.events.len()));
            wait_bounded(&event, "kept ready event");
        }
    }
}

fn compile(client: &Client, portable: bool) -> LoadedExecutable {
    let program = Program::mlir_text(PROGRAM).unwrap();
    client.compile(&program, &CompileOptions::new().compile_portable_executable(portable)).unwrap()
}

#[test]
fn shared_client_under_load() {
    for plugin in support::PLUGINS {
        let client = support::client(plugin, DEVICES as i64);
        assert_eq!(client.addressable_devices().len(), DEVICES);
        let exe = compile(&client, false);
        let portable = compile(&client, true);
        let exe_device = {
            let devices = client.addressable_devices();
            let on = exe.addressable_devices();
            assert_eq!(on.len(), 1, "the executable runs on one device");
            devices.iter().position(|d| *d == on[0]).expect("the executable's device is addressable")
        };
        let shared = Arc::new(Shared { client, exe, portable, exe_device, exchange: Mutex::new(Vec::new()) });
        let callbacks = Arc::new(AtomicU64::new(0));
        let stop_at = Instant::now() + RUN_FOR;
        let mut watchdog = Watchdog::new();
        for t in 0..THREADS {
            let shared = shared.clone();
            let callbacks = callbacks.clone();
            let name = format!("stress-{plugin}-{t}");
            watchdog.spawn(name.clone(), move |progress| {
                let mut worker = Worker {
                    shared: &shared,
                    rng: Rng::new(0x5eed_0000 + t as u64),
                    progress,
                    name,
                    pool: Vec::new(),
                    transfers: Vec::new(),
                    events: Vec::new(),
                    callbacks,
                    stats: Stats::default(),
                };
                while Instant::now() < stop_at {
                    worker.step();
                }
                worker.drain();
                worker.stats
            });
        }
        let stats = watchdog.join(DEADLINE);
        // Buffers parked in the exchange outlived the threads that made them.
        let parked = std::mem::take(&mut *shared.exchange.lock().unwrap());
        for item in &parked {
            verify(item, "parked buffer");
        }
        drop(parked);
        let mut total = [0u64; OPS.len()];
        for s in &stats {
            for (t, n) in total.iter_mut().zip(s.ops) {
                *t += n;
            }
        }
        let verified: u64 = stats.iter().map(|s| s.verified).sum();
        let summary: Vec<String> =
            OPS.iter().zip(total).filter(|(_, n)| *n > 0).map(|(op, n)| format!("{}: {n}", op.name())).collect();
        eprintln!(
            "stress on {plugin}: {THREADS} threads for {RUN_FOR:?}; {verified} reads verified; {} callbacks; {}",
            callbacks.load(Ordering::Relaxed),
            summary.join(", ")
        );
        for op in [Op::Execute, Op::ExecuteOn, Op::Copy, Op::StartTransfer, Op::Callback] {
            assert!(total[op as usize] > 0, "no `{}` ran in {RUN_FOR:?} on {plugin}", op.name());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Dropping the client while its children live on

/// What one thread gets: the executable (shared), its own inputs, an event and a transfer.
struct Kit {
    exe: Arc<LoadedExecutable>,
    inputs: Vec<Item>,
    event: Event,
    transfer: HostTransfer,
    transfer_data: Arc<Data>,
}

#[test]
fn dropping_the_client_keeps_children_working() {
    const ROUNDS: usize = 20;
    for plugin in support::PLUGINS {
        let client = support::client(plugin, DEVICES as i64);
        let exe = Arc::new(compile(&client, false));
        let mut rng = Rng::new(7);
        let exe_device = {
            let devices = client.addressable_devices();
            devices.iter().position(|d| *d == exe.addressable_devices()[0]).unwrap()
        };
        // Thread 0 gets only an event and a transfer; it drops them after every other thread has
        // dropped everything, so an event is the last owner of the client.
        let mut kits = Vec::new();
        for _ in 0..THREADS {
            let inputs = vec![
                upload_f32(&client, &mut rng, exe_device),
                upload_f32(&client, &mut rng, exe_device),
                upload_f32(&client, &mut rng, exe_device),
                upload_i32(&client, &mut rng, exe_device),
            ];
            let event = inputs[0].buffer.ready_event().unwrap();
            let size = inputs[1].buffer.host_size().unwrap();
            let transfer =
                inputs[1].buffer.to_bytes_async(DownloadOptions::new().destination(vec![0u8; size])).unwrap();
            let transfer_data = inputs[1].data.clone();
            kits.push(Kit { exe: exe.clone(), inputs, event, transfer, transfer_data });
        }
        let start = Arc::new(Barrier::new(THREADS + 1));
        let others_done = Arc::new(Barrier::new(THREADS));
        let mut watchdog = Watchdog::new();
        for (t, kit) in kits.into_iter().enumerate() {
            let start = start.clone();
            let others_done = others_done.clone();
            let name = format!("orphan-{plugin}-{t}");
            watchdog.spawn(name.clone(), move |progress| {
                let Kit { exe, mut inputs, event, transfer, transfer_data } = kit;
                start.wait(); // the test's Client handle is gone from here on
                if t == 0 {
                    drop(exe);
                    drop(inputs);
                    others_done.wait();
                    progress.enter(Op::FinishTransfer);
                    if let Some(e) = transfer.event() {
                        wait_bounded(e, "host transfer after the client was dropped");
                    }
                    assert!(transfer.wait().unwrap() == transfer_data.bytes(), "{name}: transfer bytes");
                    progress.enter(Op::ReadyWait);
                    wait_bounded(&event, "event after the client was dropped");
                    drop(event); // very likely the last owner: destroys the client here
                    return;
                }
                let client = inputs[0].buffer.client().clone();
                let mut rng = Rng::new(t as u64);
                for round in 0..ROUNDS {
                    progress.enter(Op::Execute);
                    let refs: Vec<&Buffer> = inputs.iter().map(|i| &i.buffer).collect();
                    let mut run = exe.execute_sharded_async(&[refs], &ExecuteOptions::new()).unwrap();
                    for e in run.events() {
                        wait_bounded(e, "execution after the client was dropped");
                    }
                    let out = run.take_outputs().into_iter().next().unwrap();
                    let (fma, sum) = expected(&inputs[0].data, &inputs[1].data, &inputs[2].data, &inputs[3].data);
                    let (Data::F32(fma), Data::Sum(sum)) = (fma, sum) else { unreachable!() };
                    progress.enter(Op::Download);
                    assert_eq!(out[0].to_vec::<f32>().unwrap(), fma, "{name}: round {round}");
                    assert_eq!(out[1].to_vec::<i32>().unwrap(), [sum], "{name}: round {round}");
                    // Move an input around the devices and back, through the orphaned client.
                    progress.enter(Op::Copy);
                    let devices = client.addressable_devices();
                    let i = rng.below(3);
                    let away = inputs[i].buffer.copy_to_device(&devices[(exe_device + 1 + t) % DEVICES]).unwrap();
                    let back = away.copy_to_device(&devices[exe_device]).unwrap();
                    wait_bounded(&back.ready_event().unwrap(), "copy after the client was dropped");
                    drop(away);
                    inputs[i].buffer = back;
                    progress.finish_op();
                }
                progress.enter(Op::Drain);
                wait_bounded(&event, "event after the client was dropped");
                assert!(transfer.wait().unwrap() == transfer_data.bytes(), "{name}: transfer bytes");
                // Drop in an order that differs per thread.
                if t % 2 == 0 {
                    drop(exe);
                    drop(inputs);
                    drop(client);
                } else {
                    drop(client);
                    drop(inputs);
                    drop(event);
                    drop(exe);
                }
                others_done.wait();
            });
        }
        drop(exe);
        drop(client);
        start.wait();
        watchdog.join(DEADLINE);
    }
}

// ---------------------------------------------------------------------------------------------
// Send and Sync

fn assert_send_sync<T: Send + Sync>() {}

/// The public types that can cross threads. `Device<'_>` and `Memory<'_>` (and so
/// `Placement<'_>` and `AsyncTrackingEvent<'_>`) are not `Send`/`Sync`: they are views that hold
/// a raw pointer and a borrow of their client; each thread takes its own from its `Client`.
#[test]
fn public_types_are_send_sync() {
    use pjrt_client::*;
    assert_send_sync::<Plugin>();
    assert_send_sync::<Client>();
    assert_send_sync::<ClientOptions>();
    assert_send_sync::<Buffer>();
    assert_send_sync::<HostTransfer>();
    assert_send_sync::<UploadOptions>();
    assert_send_sync::<DownloadOptions>();
    assert_send_sync::<HostBufferSemantics>();
    assert_send_sync::<LoadedExecutable>();
    assert_send_sync::<PendingExecution>();
    assert_send_sync::<PendingShardedExecution>();
    assert_send_sync::<ArrayShape>();
    assert_send_sync::<Event>();
    assert_send_sync::<OnReady>();
    assert_send_sync::<Program>();
    assert_send_sync::<ProgramFormat>();
    assert_send_sync::<ModuleCounts>();
    assert_send_sync::<CompileOptions>();
    assert_send_sync::<DeviceAssignment>();
    assert_send_sync::<ElementType>();
    assert_send_sync::<Value>();
    assert_send_sync::<ApiVersion>();
    assert_send_sync::<StableHloVersion>();
    assert_send_sync::<Error>();
    assert_send_sync::<ErrorCode>();
    assert_send_sync::<LoadError>();
    assert_send_sync::<Topology>();
    assert_send_sync::<Executable>();
    assert_send_sync::<MemoryStats>();
}
