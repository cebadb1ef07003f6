//! The plugins this crate knows how to install ([`KNOWN_PLUGINS`], [`OPENBLAS`]), pinned, and
//! where their files lie once installed ([`cached_path`], [`cuda_data_dir`]).

use std::path::{Path, PathBuf};

use crate::trust::cache_dir;

/// A plugin this crate knows how to install from PyPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownPlugin {
    /// Short name used by `pjrt plugin install NAME` and `--plugin NAME`.
    pub name: &'static str,
    /// The platform it serves.
    pub platform: &'static str,
    /// The PyPI distribution.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The shared library inside the installed package.
    pub library: &'static str,
    /// SHA-256 of that library, checked after installing.
    pub sha256: &'static str,
    /// Files of other packages installed into the same folder (the CUDA plugins' compiler
    /// pieces, `ptxas` and `libdevice`), pinned and checked the same way. Empty for the CPU
    /// plugins.
    pub tools: &'static [KnownTool],
    /// For a CUDA plugin: the folder, inside the install, that holds `bin/ptxas` and
    /// `nvvm/libdevice/libdevice.10.bc`, i.e. what XLA's `xla_gpu_cuda_data_dir` must name
    /// ([`cuda_data_dir`]).
    pub cuda_data_dir: Option<&'static str>,
}

/// One file of a PyPI package that a [`KnownPlugin`] needs beside its library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownTool {
    /// The PyPI distribution that holds it.
    pub package: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The file inside the installed package.
    pub path: &'static str,
    /// SHA-256 of that file, checked after installing and before use.
    pub sha256: &'static str,
    /// Whether the file is a program: wheels store `ptxas` without its execute bit, and
    /// [`install`](crate::install()) sets it.
    pub executable: bool,
}

/// `ptxas` and `libdevice` for the CUDA 12 plugins.
const CUDA12_TOOLS: [KnownTool; 2] = [
    // The newest CUDA 12 compiler on PyPI; jax-cuda12-plugin asks for any 12.x.
    KnownTool {
        package: "nvidia-cuda-nvcc-cu12",
        version: "12.9.86",
        path: "nvidia/cuda_nvcc/bin/ptxas",
        sha256: "983b0e9283855979f42cebfd80d43f9b6e786eb84f03f7570bf941c4d3a3c461",
        executable: true,
    },
    KnownTool {
        package: "nvidia-cuda-nvcc-cu12",
        version: "12.9.86",
        path: "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
        sha256: "9e84b504f25d26ec775ef91f7122e68dac77fa1f776f1044128f5028356265d8",
        executable: false,
    },
];

/// `ptxas` and `libdevice` for the CUDA 13 plugins.
const CUDA13_TOOLS: [KnownTool; 2] = [
    // jax-cuda13-plugin 0.11.2 asks for nvidia-cuda-nvcc>=13.0.48; CUDA 13 moved
    // libdevice out of nvcc into nvidia-nvvm. 13.0.88 is the last CUDA 13.0 release.
    KnownTool {
        package: "nvidia-cuda-nvcc",
        version: "13.0.88",
        path: "nvidia/cu13/bin/ptxas",
        sha256: "daba837a68265cae38c832d13399b61dab811891de9b8914defddef143b849f2",
        executable: true,
    },
    KnownTool {
        package: "nvidia-nvvm",
        version: "13.0.88",
        path: "nvidia/cu13/nvvm/libdevice/libdevice.10.bc",
        sha256: "91334d6e12748f6cb5bbf0a1cd965a56bcd93dc4f496d2e5c5f8c6e523094356",
        executable: false,
    },
];

/// What Intel's XPU plugin links against, from PyPI: its oneDNN library and the oneAPI 2025.2
/// runtime (SYCL, Unified Runtime, OpenCL, the compiler runtime, MKL and its SYCL parts, oneCCL).
/// The runtime wheels store their libraries as data files (`<package>.data/data/lib/`), which the
/// installer extracts as they are; the plugin's own library path does not name them, so a process
/// loading it needs them on `LD_LIBRARY_PATH` ([`runtime_library_dirs`]).
const INTEL_TOOLS: [KnownTool; 20] = [
    KnownTool {
        package: "intel-cmplr-lib-rt",
        version: "2025.2.1",
        path: "intel_cmplr_lib_rt-2025.2.1.data/data/lib/libimf.so",
        sha256: "f3433e8ed7a95fb17227e307f7a1ab07963b89e4af8150b0ef1811d06d71fdd7",
        executable: false,
    },
    KnownTool {
        package: "intel-cmplr-lib-rt",
        version: "2025.2.1",
        path: "intel_cmplr_lib_rt-2025.2.1.data/data/lib/libintlc.so.5",
        sha256: "ef3e85371e9f1c27ca6f43e77d47092730a5416346f1c9535b52e33e3f07babf",
        executable: false,
    },
    KnownTool {
        package: "intel-cmplr-lib-rt",
        version: "2025.2.1",
        path: "intel_cmplr_lib_rt-2025.2.1.data/data/lib/libirng.so",
        sha256: "a61c4f7ce09af79d7a04f77ab49c5c166d7dec8abeca18bbc695a776a87149f1",
        executable: false,
    },
    KnownTool {
        package: "intel-cmplr-lib-rt",
        version: "2025.2.1",
        path: "intel_cmplr_lib_rt-2025.2.1.data/data/lib/libsvml.so",
        sha256: "7fd864cdd24dab523a263c959cb0b9c1d654cb47924ca2eddfb40ba669832b1b",
        executable: false,
    },
    KnownTool {
        package: "intel-cmplr-lib-ur",
        version: "2025.2.1",
        path: "intel_cmplr_lib_ur-2025.2.1.data/data/lib/libur_loader.so.0",
        sha256: "a4877d87c83acf58a38eaabe7d9227e6af676fbcfc31771f0497b251c44ad0f5",
        executable: false,
    },
    KnownTool {
        package: "intel-opencl-rt",
        version: "2025.2.1",
        path: "intel_opencl_rt-2025.2.1.data/data/lib/libOpenCL.so.1",
        sha256: "a3a85fc381d4addda69cf18fee697aee2ad16922d889fd61bf35b86676da82c4",
        executable: false,
    },
    KnownTool {
        package: "intel-sycl-rt",
        version: "2025.2.1",
        path: "intel_sycl_rt-2025.2.1.data/data/lib/libsycl.so.8",
        sha256: "d9475a22724da866773b933b5cb8eb6ac9aed700da83cc07738011e41c1e4f83",
        executable: false,
    },
    KnownTool {
        package: "intel-extension-for-openxla",
        version: "0.7.0",
        path: "jax_plugins/intel_extension_for_openxla/service/gpu/sycl_onednn.so",
        sha256: "623411bc593be6d976604bef53fd27ec3999d830ff08fdfe193e2bbf37a451d0",
        executable: false,
    },
    KnownTool {
        package: "mkl",
        version: "2025.2.0",
        path: "mkl-2025.2.0.data/data/lib/libmkl_core.so.2",
        sha256: "9c1c93e0ce6584d4e7ab960c0e140c74fa6fafa19e3132148926af3093de3a86",
        executable: false,
    },
    KnownTool {
        package: "mkl",
        version: "2025.2.0",
        path: "mkl-2025.2.0.data/data/lib/libmkl_intel_ilp64.so.2",
        sha256: "b7ff0314c21604b070cd4d5adfcd61a5994392f4e8b4ebb07340e2f4b2200bb3",
        executable: false,
    },
    KnownTool {
        package: "mkl",
        version: "2025.2.0",
        path: "mkl-2025.2.0.data/data/lib/libmkl_sequential.so.2",
        sha256: "7217c766d06e33f9a2cbe2f4563cdcf3d50610128639f761a683fbc7f4f4a468",
        executable: false,
    },
    KnownTool {
        package: "oneccl",
        version: "2021.16.1",
        path: "oneccl-2021.16.1.data/data/lib/libccl.so.1",
        sha256: "0b186487875f510df7400438ef93620142752d2c6542fdab46856bc36bd2a304",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-blas",
        version: "2025.2.0",
        path: "onemkl_sycl_blas-2025.2.0.data/data/lib/libmkl_sycl_blas.so.5",
        sha256: "d0bb62b75c65a63593ec3c96ff387bddf484dff6f5ff5d11716b91a924a2e4be",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-datafitting",
        version: "2025.2.0",
        path: "onemkl_sycl_datafitting-2025.2.0.data/data/lib/libmkl_sycl_data_fitting.so.5",
        sha256: "c2db334366dd398b723b850da5d09ef34228249cb22349a677a9b8ffd5a243cc",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-dft",
        version: "2025.2.0",
        path: "onemkl_sycl_dft-2025.2.0.data/data/lib/libmkl_sycl_dft.so.5",
        sha256: "8d2bf04f243edc5a71a405eb4853f19f3fa9dc38f93ce1e6a2d8e7d22345a7a1",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-lapack",
        version: "2025.2.0",
        path: "onemkl_sycl_lapack-2025.2.0.data/data/lib/libmkl_sycl_lapack.so.5",
        sha256: "22c18c12852300a270c8eb93df4f51fd9d16658e6aa01ab0bbe0cd9dbdc2756a",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-rng",
        version: "2025.2.0",
        path: "onemkl_sycl_rng-2025.2.0.data/data/lib/libmkl_sycl_rng.so.5",
        sha256: "217ad8237eb31ecc86b305bfdb943e5a3d435b040251927b6e7ab260fe6eecd0",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-sparse",
        version: "2025.2.0",
        path: "onemkl_sycl_sparse-2025.2.0.data/data/lib/libmkl_sycl_sparse.so.5",
        sha256: "522a611e8e26a3a65e9386d1a0eaa219d8a0ba106bd86500e6be3c748dd095ca",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-stats",
        version: "2025.2.0",
        path: "onemkl_sycl_stats-2025.2.0.data/data/lib/libmkl_sycl_stats.so.5",
        sha256: "159a323f226fae3970b8341296966dc8231ab2e6214c997a572c4f0d71cedfff",
        executable: false,
    },
    KnownTool {
        package: "onemkl-sycl-vm",
        version: "2025.2.0",
        path: "onemkl_sycl_vm-2025.2.0.data/data/lib/libmkl_sycl_vm.so.5",
        sha256: "73d98c83596f4c098591a1ce68571cebc5472ea59a3a0c4db3816876125d00a3",
        executable: false,
    },
];

/// The plugins `pjrt plugin install` knows. The first is the default.
///
/// The CUDA ones (`cuda12`, `cuda13`, 410-500 MB each) load and compile on machines without a
/// GPU: they are what pjrt-client's `GpuTarget` compiles with. Each comes with NVIDIA's `ptxas` and
/// `libdevice` from PyPI, which XLA needs to compile for a GPU. The TPU one (`tpu`, `libtpu`,
/// 467 MB) makes TPU topologies and compiles for them without a TPU (`TPU_SKIP_MDS_QUERY=1`).
/// The ROCm ones (`rocm7`, `rocm10`) install but load only where ROCm's runtime is (not on PyPI);
/// the Intel one (`intel`) comes with the oneAPI runtime wheels and loads with Level Zero's
/// loader and libpython in the process (see each entry).
pub const KNOWN_PLUGINS: &[KnownPlugin] = &[
    KnownPlugin {
        name: "cpu",
        platform: "cpu",
        package: "lammps-jax-pjrt-cpu",
        version: "0.11.2",
        library: "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so",
        sha256: "ad1309ac822b1b24d51b7f9947c7c9fa9ef5d67f390584cbc3d1fa2428fed9c2",
        tools: &[],
        cuda_data_dir: None,
    },
    KnownPlugin {
        name: "cpu-0.106",
        platform: "cpu",
        package: "fastatomstruct-xla-cpu",
        version: "2026.6.23",
        library: "fastatomstruct_xla_cpu/libpjrt_cpu.so",
        sha256: "0a0fe56ca17be9efc7b942e89e534e5e0ad4a0f1e369b66d27b62184509015b9",
        tools: &[],
        cuda_data_dir: None,
    },
    // The same JAX release (0.11.2, hence the same XLA) as the default CPU plugin and `cuda13`.
    KnownPlugin {
        name: "cuda12",
        platform: "cuda",
        package: "jax-cuda12-pjrt",
        version: "0.11.2",
        library: "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        sha256: "ed4d60d77427548709ca0b5a8e04c1b24cc0091452bb564e4aea01e03ae7eac1",
        tools: &CUDA12_TOOLS,
        cuda_data_dir: Some("nvidia/cuda_nvcc"),
    },
    // The build on the GPU machine this project tests on: an executable loads only on the
    // plugin build that compiled it.
    KnownPlugin {
        name: "cuda13",
        platform: "cuda",
        package: "jax-cuda13-pjrt",
        version: "0.11.2",
        library: "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
        sha256: "43d3efd6fd43d8a5d9aa67176e830d81e4ad5fc19fda4ad09cdcc4aebd9f3920",
        tools: &CUDA13_TOOLS,
        cuda_data_dir: Some("nvidia/cu13"),
    },
    // The newest JAX release's CUDA plugins (API 0.116, StableHLO up to 1.22.0), beside the pinned
    // 0.11.2 ones that the GPU machine's executables were built with. The same CUDA compiler
    // pieces as theirs.
    KnownPlugin {
        name: "cuda12-0.12.0.1",
        platform: "cuda",
        package: "jax-cuda12-pjrt",
        version: "0.12.0.1",
        library: "jax_plugins/xla_cuda12/xla_cuda_plugin.so",
        sha256: "921aaa9c635255fb7b7a660d11c8f702c78a70e7f7d005d4f377c2dc5f0fede2",
        tools: &CUDA12_TOOLS,
        cuda_data_dir: Some("nvidia/cuda_nvcc"),
    },
    KnownPlugin {
        name: "cuda13-0.12.0.1",
        platform: "cuda",
        package: "jax-cuda13-pjrt",
        version: "0.12.0.1",
        library: "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
        sha256: "b6de513893c09af2c77e71afcef46d9706f8c259337cdef4cd5cae2353886f75",
        tools: &CUDA13_TOOLS,
        cuda_data_dir: Some("nvidia/cu13"),
    },
    // JAX's ROCm plugins (0.12.0, for ROCm 7 and ROCm 10). They install, but load only where ROCm's
    // runtime is installed (HIP, rocBLAS, MIOpen, rocprofiler-sdk, ...): it is not on PyPI, and
    // Debian packages ROCm 5 only. `pjrt info` names the first library missing.
    KnownPlugin {
        name: "rocm7",
        platform: "rocm",
        package: "jax-rocm7-pjrt",
        version: "0.12.0",
        library: "jax_plugins/xla_rocm7/xla_rocm_plugin.so",
        sha256: "6e7239347f37f1a5a17c2a2d9301411f9f17e30e0707a717f4717556fa402511",
        tools: &[],
        cuda_data_dir: None,
    },
    KnownPlugin {
        name: "rocm10",
        platform: "rocm",
        package: "jax-rocm10-pjrt",
        version: "0.12.0",
        library: "jax_plugins/xla_rocm10/xla_rocm_plugin.so",
        sha256: "1fca9d70d3f30c351006089c07eac4f78162e6e3a5338266127247c7fdbc1e2e",
        tools: &[],
        cuda_data_dir: None,
    },
    // Intel's XPU plugin (API 0.54, no StableHLO version attributes) with the oneAPI runtime it
    // links against. Loading it also needs Level Zero's loader (`libze_loader.so.1`, Debian's
    // `libze1`, not on PyPI) and libpython in the process (it calls Python's C API): `pjrt info`
    // says which is missing. On a machine without an Intel GPU it has no device.
    KnownPlugin {
        name: "intel",
        platform: "xpu",
        package: "intel-extension-for-openxla",
        version: "0.7.0",
        library: "jax_plugins/intel_extension_for_openxla/pjrt_plugin_xpu.so",
        sha256: "f92d7a5e8460d7275b759ef249b9c6fdf5e54af30be13915696727acf85e59fc",
        tools: &INTEL_TOOLS,
        cuda_data_dir: None,
    },
    // Google's TPU plugin. It loads and makes TPU topologies (and compiles for them) on machines
    // without a TPU when `TPU_SKIP_MDS_QUERY=1` is set; it then has no device. PyPI has one wheel
    // per Python tag (cp311 to cp315t), which differ only in their metadata: the installer takes
    // the first the index lists, and the pin is the library's, checked from the cp311 and cp312
    // wheels.
    KnownPlugin {
        name: "tpu",
        platform: "tpu",
        package: "libtpu",
        version: "0.0.52",
        library: "libtpu/libtpu.so",
        sha256: "f86de4d04a058e6b5101f73e0824b95f27e2cec996d2b9191d9cffda75c03077",
        tools: &[],
        cuda_data_dir: None,
    },
];

/// The OpenBLAS that JAX's LAPACK kernels run on (pjrt-client's `lapack`): scipy's build from PyPI
/// (`scipy-openblas32`, 32-bit integers, symbols prefixed `scipy_`, about 9 MB), installed into
/// the plugin cache like a plugin (`pjrt plugin install openblas`), with its two runtime
/// libraries beside it. Not a PJRT plugin: [`find_all`](crate::find_all) and [`resolve`](crate::resolve()) never return it.
///
/// ```
/// let openblas = &pjrt_plugins::OPENBLAS;
/// assert_eq!(openblas.package, "scipy-openblas32");
/// assert!(pjrt_plugins::known_plugin("openblas").is_none()); // not a plugin
/// assert_eq!(pjrt_plugins::known_package("openblas"), Some(openblas));
/// ```
pub const OPENBLAS: KnownPlugin = KnownPlugin {
    name: "openblas",
    platform: "lapack",
    package: "scipy-openblas32",
    // The OpenBLAS release (0.3.30) of the scipy that JAX 0.10-0.12 install.
    version: "0.3.30.443.1",
    library: "scipy_openblas32/lib/libscipy_openblas.so",
    sha256: "db8c2dfee82155d13902745e7abd5bb363b5fe0adb8a4dfd630d0fc2bd04256a",
    tools: &[
        // Found by the library's RPATH ($ORIGIN): gfortran's runtime and the one it needs.
        KnownTool {
            package: "scipy-openblas32",
            version: "0.3.30.443.1",
            path: "scipy_openblas32/lib/libgfortran-040039e1.so.5.0.0",
            sha256: "0352e75f0719d9a299cb52919977eb5d7bd249d1fcad06d5e14030b272aae619",
            executable: false,
        },
        KnownTool {
            package: "scipy-openblas32",
            version: "0.3.30.443.1",
            path: "scipy_openblas32/lib/libquadmath-96973f99.so.0.0.0",
            sha256: "934c22ded0e7d169c4d4678876c96051adf3d94545da962f60b41659b075da3b",
            executable: false,
        },
    ],
    cuda_data_dir: None,
};

/// A known plugin ([`known_plugin`]) or [`OPENBLAS`], by name: what `pjrt plugin install NAME`
/// installs.
pub fn known_package(name: &str) -> Option<&'static KnownPlugin> {
    known_plugin(name).or((name == OPENBLAS.name).then_some(&OPENBLAS))
}

/// The default CPU plugin.
pub fn default_plugin() -> &'static KnownPlugin {
    &KNOWN_PLUGINS[0]
}

/// Looks a known plugin up by name.
pub fn known_plugin(name: &str) -> Option<&'static KnownPlugin> {
    KNOWN_PLUGINS.iter().find(|p| p.name == name)
}

pub(crate) const NO_CACHE_DIR: &str =
    "there is no plugin cache folder (no HOME, XDG_CACHE_HOME or PJRT_PLUGIN_CACHE, and no \
                            home in the password database); set PJRT_PLUGIN_CACHE to a folder only you can write";

/// Where a known plugin is installed in the cache (`None` without a cache, see [`cache_dir`]).
pub fn cached_path(plugin: &KnownPlugin) -> Option<PathBuf> {
    cache_dir().map(|cache| install_root_in(&cache, plugin).join(plugin.library))
}

/// Where a known plugin's packages are installed in the cache.
pub(crate) fn install_root_in(cache: &Path, plugin: &KnownPlugin) -> PathBuf {
    cache.join(format!("{}-{}", plugin.package, plugin.version))
}

/// The folder to give XLA as `xla_gpu_cuda_data_dir` for a CUDA plugin at `library`: the one
/// that holds `bin/ptxas` (where XLA runs `ptxas` from) and `nvvm/libdevice/libdevice.10.bc`,
/// installed beside the plugin. That is the case for `cuda12` and `cuda13` installed by
/// [`install`](crate::install()), and for a plugin installed with pip together with `nvidia-cuda-nvcc-cu12`
/// (CUDA 12) or `nvidia-cuda-nvcc` and `nvidia-nvvm` (CUDA 13) in the same site-packages.
/// `None` when `library` is not a CUDA plugin or its compiler pieces are not there; XLA then
/// looks on its own (`PATH`, `/usr/local/cuda`) and fails with "libdevice not found" when they
/// are nowhere.
///
/// pjrt-client's `DebugOption::GpuCudaDataDir` passes the folder to one compilation.
///
/// ```
/// use pjrt_plugins;
///
/// // A CPU plugin has no CUDA data folder.
/// let found = pjrt_plugins::resolve_or_install(None, |_| ())?;
/// assert_eq!(pjrt_plugins::cuda_data_dir(&found.path), None);
/// // cuda12 keeps its compiler pieces beside the plugin, in the cache.
/// let cuda12 = pjrt_plugins::known_plugin("cuda12").unwrap();
/// if let Some(dir) = pjrt_plugins::cached_path(cuda12).and_then(|path| pjrt_plugins::cuda_data_dir(&path)) {
///     assert!(dir.join("bin/ptxas").is_file() && dir.ends_with("nvidia/cuda_nvcc"));
/// }
/// # Ok::<(), pjrt_plugins::Error>(())
/// ```
pub fn cuda_data_dir(library: &Path) -> Option<PathBuf> {
    KNOWN_PLUGINS.iter().find_map(|known| {
        let data_dir = known.cuda_data_dir?;
        // ROOT/jax_plugins/xla_cudaNN/xla_cuda_plugin.so -> ROOT
        let mut root = library;
        for _ in Path::new(known.library).components() {
            root = root.parent()?;
        }
        if root.join(known.library) != library {
            return None;
        }
        let dir = root.join(data_dir);
        (dir.join("bin").join("ptxas").is_file() && dir.join("nvvm/libdevice/libdevice.10.bc").is_file()).then_some(dir)
    })
}

/// The folders that hold the runtime libraries a plugin at `library` needs beside it, when it is
/// a known plugin whose runtime comes as libraries of other packages that its own library path
/// does not name (Intel's XPU plugin: the oneAPI runtime wheels' `<package>.data/data/lib`, and
/// the folder of its oneDNN library). Empty for other plugins. A process that loads such a plugin
/// needs these on `LD_LIBRARY_PATH`: `pjrt info` prints them when the plugin does not load.
///
/// ```
/// let intel = pjrt_plugins::known_plugin("intel").unwrap();
/// let library = std::path::Path::new("/cache/intel-extension-for-openxla-0.7.0").join(intel.library);
/// let dirs = pjrt_plugins::runtime_library_dirs(&library);
/// assert!(dirs.iter().any(|d| d.ends_with("intel_sycl_rt-2025.2.1.data/data/lib")));
/// assert!(pjrt_plugins::runtime_library_dirs(std::path::Path::new("/x/libtpu/libtpu.so")).is_empty());
/// ```
pub fn runtime_library_dirs(library: &Path) -> Vec<PathBuf> {
    let Some(known) = KNOWN_PLUGINS.iter().find(|k| k.platform == "xpu" && library.ends_with(k.library)) else {
        return Vec::new();
    };
    let mut root = library;
    for _ in Path::new(known.library).components() {
        let Some(parent) = root.parent() else { return Vec::new() };
        root = parent;
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for tool in known.tools.iter().filter(|t| t.path.ends_with(".so") || t.path.contains(".so.")) {
        let Some(dir) = Path::new(tool.path).parent() else { continue };
        let dir = root.join(dir);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_plugins_are_pinned() {
        for p in KNOWN_PLUGINS {
            assert_eq!(p.sha256.len(), 64);
            assert!(p.version.chars().all(|c| c.is_ascii_digit() || c == '.'));
            for tool in p.tools {
                assert_eq!(tool.sha256.len(), 64, "{tool:?}");
                assert!(tool.version.chars().all(|c| c.is_ascii_digit() || c == '.'));
                if let Some(dir) = p.cuda_data_dir {
                    assert!(tool.path.starts_with(dir), "{tool:?}");
                }
            }
            // A CUDA plugin brings ptxas (as a program) and libdevice.
            if p.platform == "cuda" {
                let dir = p.cuda_data_dir.unwrap();
                assert!(p.tools.iter().any(|t| t.executable && t.path == format!("{dir}/bin/ptxas")), "{p:?}");
                assert!(p.tools.iter().any(|t| t.path == format!("{dir}/nvvm/libdevice/libdevice.10.bc")), "{p:?}");
            }
        }
        assert_eq!(default_plugin().package, "lammps-jax-pjrt-cpu");
        assert_eq!(known_plugin("cuda13").unwrap().version, "0.11.2", "the GPU machine's build");
        assert_eq!(known_plugin("tpu").unwrap().library, "libtpu/libtpu.so");
    }

    #[test]
    fn the_cuda_data_dir_is_found_beside_a_plugin_only_when_ptxas_and_libdevice_are_there() {
        let root = std::env::temp_dir().join(format!("pjrt-cuda-dir-test-{}", std::process::id()));
        let library = root.join("jax_plugins/xla_cuda12/xla_cuda_plugin.so");
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        std::fs::write(&library, b"").unwrap();
        assert_eq!(cuda_data_dir(&library), None, "no compiler pieces yet");
        let dir = root.join("nvidia/cuda_nvcc");
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/ptxas"), b"").unwrap();
        assert_eq!(cuda_data_dir(&library), None, "ptxas without libdevice");
        std::fs::create_dir_all(dir.join("nvvm/libdevice")).unwrap();
        std::fs::write(dir.join("nvvm/libdevice/libdevice.10.bc"), b"").unwrap();
        assert_eq!(cuda_data_dir(&library), Some(dir));
        // The CUDA 13 layout is not taken for a CUDA 12 plugin, and other paths have none.
        assert_eq!(cuda_data_dir(&root.join("jax_plugins/xla_cuda13/xla_cuda_plugin.so")), None);
        assert_eq!(cuda_data_dir(Path::new("/x.so")), None);
        let _ = std::fs::remove_dir_all(&root);
    }
}
