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

/// The plugins `pjrt plugin install` knows. The first is the default.
///
/// The CUDA ones (`cuda12`, `cuda13`, 410-500 MB each) load and compile on machines without a
/// GPU: they are what pjrt-client's `GpuTarget` compiles with. Each comes with NVIDIA's `ptxas` and
/// `libdevice` from PyPI, which XLA needs to compile for a GPU. The TPU one (`tpu`, `libtpu`,
/// 467 MB) makes TPU topologies and compiles for them without a TPU (`TPU_SKIP_MDS_QUERY=1`).
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
        tools: &[
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
        ],
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
        tools: &[
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
        ],
        cuda_data_dir: Some("nvidia/cu13"),
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
                assert!(tool.path.starts_with(p.cuda_data_dir.unwrap()), "{tool:?}");
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
