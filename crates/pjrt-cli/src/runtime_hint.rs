//! What a plugin that does not load lacks, said as the next step (`ui::hint` prints it): the
//! runtimes that JAX's ROCm plugins and Intel's XPU plugin need outside their wheels.

/// What a plugin that failed to load lacks, when the loader's `message` says a library or a
/// symbol is missing and the plugin at `path` is one whose runtime lives outside its wheel:
/// JAX's ROCm plugins (ROCm's runtime, not on the package index) and Intel's XPU plugin (Level
/// Zero's loader from Debian's `libze1`, the oneAPI runtime wheels, and Python's C API). `None`
/// for other plugins and other failures.
pub(crate) fn missing_runtime(path: &std::path::Path, message: &str) -> Option<String> {
    let missing_library = message
        .split(": cannot open shared object file")
        .next()
        .filter(|_| message.contains(": cannot open shared object file"))
        .and_then(|before| before.rsplit([' ', ':']).find(|word| !word.is_empty()));
    let missing_symbol = message.split("undefined symbol: ").nth(1).map(|s| s.split([',', ' ']).next().unwrap_or(s));
    let dirs = pjrt_plugins::runtime_library_dirs(path);
    let path = path.to_string_lossy();
    if let Some(at) = path.find("xla_rocm") {
        let library = missing_library?;
        let release: String = path[at + "xla_rocm".len()..].chars().take_while(|c| c.is_ascii_digit()).collect();
        return Some(format!(
            "{library} is the first library of ROCm's runtime that the ROCm plugin needs and this machine lacks; \
             ROCm's runtime (HIP, rocBLAS, MIOpen, rocprofiler-sdk, ...) is not on the package index (PyPI), and \
             Debian packages ROCm 5 only: install ROCm {release} (the runtime the plugin's name asks for) from AMD's \
             repositories, then load the plugin again"
        ));
    }
    if path.contains("intel_extension_for_openxla") {
        if let Some(symbol) = missing_symbol.filter(|s| s.starts_with("Py")) {
            return Some(format!(
                "the Intel plugin calls Python's C API ({symbol}) and this process has no libpython: run pjrt with \
                 libpython loaded, e.g. LD_PRELOAD=libpython3.11.so.1.0 (pjrt never loads Python itself)"
            ));
        }
        return match missing_library? {
            "libze_loader.so.1" => Some(
                "libze_loader.so.1 (Level Zero's loader) is missing: install it from the system's packages \
                 (Debian: apt-get install libze1)"
                    .into(),
            ),
            library if dirs.is_empty() => Some(format!(
                "{library} is missing: the Intel plugin finds the oneAPI runtime only on the library path; \
                 `pjrt plugin install intel` installs the runtime wheels beside it (<package>.data/data/lib): \
                 put those folders on LD_LIBRARY_PATH"
            )),
            library => Some(format!(
                "{library} is missing: the Intel plugin finds the oneAPI runtime only on the library path; run pjrt \
                 with LD_LIBRARY_PATH={} (the runtime wheels `pjrt plugin install intel` installed beside it)",
                std::env::join_paths(&dirs).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
            )),
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::missing_runtime;
    use std::path::Path;

    #[test]
    fn the_first_missing_runtime_library_is_named_for_rocm_and_intel_only() {
        let rocm = Path::new("/c/jax-rocm7-pjrt-0.12.0/jax_plugins/xla_rocm7/xla_rocm_plugin.so");
        let message = "cannot load PJRT plugin /x.so: cannot open it as a shared library: librocprofiler-sdk.so.1: \
                       cannot open shared object file: No such file or directory";
        let hint = missing_runtime(rocm, message).unwrap();
        assert!(hint.starts_with("librocprofiler-sdk.so.1 is the first library of ROCm's runtime"), "{hint}");
        assert!(hint.contains("not on the package index") && hint.contains("install ROCm 7 "), "{hint}");
        let intel = Path::new("/c/jax_plugins/intel_extension_for_openxla/pjrt_plugin_xpu.so");
        let ze = message.replace("librocprofiler-sdk.so.1", "libze_loader.so.1");
        assert!(missing_runtime(intel, &ze).unwrap().contains("apt-get install libze1"));
        let py = "cannot open it as a shared library: /c/pjrt_plugin_xpu.so: undefined symbol: PyExc_TypeError";
        assert!(missing_runtime(intel, py).unwrap().contains("LD_PRELOAD=libpython"));
        assert_eq!(missing_runtime(Path::new("/c/libtpu/libtpu.so"), message), None);
        assert_eq!(missing_runtime(rocm, "PJRT_Plugin_Initialize failed"), None);
    }
}
