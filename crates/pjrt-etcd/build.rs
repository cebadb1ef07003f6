//! `cfg(pjrt_test_etcd)` when `PJRT_TEST_ETCD` names an etcd server: the tests that need one run
//! then, and are reported as ignored otherwise (see `tests/multi_process.rs`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(pjrt_test_etcd)");
    println!("cargo::rerun-if-env-changed=PJRT_TEST_ETCD");
    if std::env::var_os("PJRT_TEST_ETCD").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=pjrt_test_etcd");
    }
}
