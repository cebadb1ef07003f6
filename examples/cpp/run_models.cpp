// The C API from C++: RAII owners over libpjrt's handles (a status becomes an exception, every
// handle is freed by its owner's destructor), running models exported by JAX from the repository's
// tests/data and checking them against JAX's outputs:
//
//   1. the exported MLP (jax_export/jax-0.10.2/mlp_f32), its output allocated by the library and
//      owned by a pjrt::Output; within 1e-5 + 1e-5 * |JAX's value| (the data's manifest);
//   2. the shape-polymorphic transformer block (jax_export/symbolic/jax-0.10.2/transformer) at two
//      shapes, its output into a std::vector of ours; within 1e-4 + 1e-4 * |JAX's|;
//   3. a wrong input: a pjrt::Error carrying the status's code and message.
//
//   run_models DATA_DIR        (the repository's tests/data)
//
// Built with CMake against an installed prefix (examples/cpp/CMakeLists.txt). PJRT_EXAMPLE_PLUGIN
// names the plugin (default "cpu"). Exit status 0 when every check passed, 1 otherwise.
#include <pjrt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// The C example's .npy reader (C, without C++ guards of its own).
extern "C" {
#include "../c/npy.h"
}

namespace pjrt {

// A failed call: the status's code and message (the status itself is freed here).
class Error : public std::runtime_error {
 public:
  Error(pjrt_code code, const std::string &message) : std::runtime_error(message), code_(code) {}
  pjrt_code code() const { return code_; }

 private:
  pjrt_code code_;
};

// Throws the status as an Error when it is one; frees it.
inline void check(pjrt_status *status, const char *what) {
  if (!status) return;
  pjrt_code code = pjrt_status_code(status);
  std::string message = std::string(what) + ": " + pjrt_status_message(status);
  pjrt_status_free(status);
  throw Error(code, message);
}

// A pjrt_tensor describing memory of the caller's (row-major, as the model's shapes say).
template <typename T>
pjrt_tensor view(T *data, size_t count, pjrt_dtype dtype, std::initializer_list<int64_t> dims) {
  pjrt_tensor tensor{};
  tensor.data = data;
  tensor.nbytes = count * sizeof(T);
  tensor.dtype = dtype;
  tensor.ndim = static_cast<int32_t>(dims.size());
  std::copy(dims.begin(), dims.end(), tensor.dims);
  return tensor;
}

// An output the library allocates (data NULL on the way in), freed by the destructor.
class Output {
 public:
  Output() : tensor_{} {}
  Output(const Output &) = delete;
  Output &operator=(const Output &) = delete;
  ~Output() { pjrt_status_free(pjrt_tensor_free(&tensor_)); }
  pjrt_tensor *get() { return &tensor_; }
  const pjrt_tensor &operator*() const { return tensor_; }

 private:
  pjrt_tensor tensor_;
};

// A model loaded on a runtime; it keeps working after the Runtime is gone.
class Model {
 public:
  Model(pjrt_model *handle) : handle_(handle) {}
  Model(Model &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() { pjrt_status_free(pjrt_model_free(handle_)); }

  pjrt_signature signature() const {
    pjrt_signature signature{};
    check(pjrt_model_signature(handle_, &signature), "pjrt_model_signature");
    return signature;
  }

  void run(const std::vector<pjrt_tensor> &inputs, pjrt_tensor *outputs, size_t n_outputs) const {
    check(pjrt_model_run(handle_, inputs.data(), inputs.size(), outputs, n_outputs), "pjrt_model_run");
  }

 private:
  pjrt_model *handle_;
};

// A runtime: one plugin, a client on it, the device models run on.
class Runtime {
 public:
  explicit Runtime(const char *plugin) {
    pjrt_options options{};
    options.struct_size = sizeof options;
    options.plugin = plugin;
    check(pjrt_runtime_new(&options, &handle_), "pjrt_runtime_new");
  }
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;
  ~Runtime() { pjrt_status_free(pjrt_runtime_free(handle_)); }

  Model load(const std::string &path) const {
    pjrt_model *model = nullptr;
    check(pjrt_model_load(handle_, path.c_str(), nullptr, &model), path.c_str());
    return Model(model);
  }

 private:
  pjrt_runtime *handle_ = nullptr;
};

}  // namespace pjrt

namespace {

int failures = 0;

// The .npy files DIR/in0.npy, in1.npy, ... (inputs) and DIR/out0.npy (JAX's output), freed on exit.
struct Case {
  std::vector<npy_array> in;
  npy_array out{};
  explicit Case(const std::string &dir) {
    for (int i = 0;; i++) {
      std::string path = dir + "/in" + std::to_string(i) + ".npy";
      if (FILE *f = std::fopen(path.c_str(), "rb")) std::fclose(f);
      else break;
      npy_array array{};
      if (npy_read(path.c_str(), &array) != 0) throw std::runtime_error("cannot read " + path);
      in.push_back(array);
    }
    if (in.empty() || npy_read((dir + "/out0.npy").c_str(), &out) != 0)
      throw std::runtime_error("cannot read the case in " + dir);
  }
  Case(const Case &) = delete;
  ~Case() {
    for (auto &a : in) npy_free(&a);
    npy_free(&out);
  }
  std::vector<pjrt_tensor> inputs() const {
    std::vector<pjrt_tensor> tensors;
    for (auto &a : in) tensors.push_back(npy_tensor(&a));
    return tensors;
  }
};

void expect(bool ok, const std::string &what) {
  std::printf("%s %s\n", ok ? "  ok:" : "FAIL:", what.c_str());
  if (!ok) failures++;
}

// Whether `got` (float32) is JAX's `want` within atol + rtol * |want|, shape included.
bool matches(const pjrt_tensor &got, const npy_array &want, float atol, float rtol) {
  if (got.dtype != PJRT_DTYPE_F32 || got.ndim != want.ndim || got.nbytes != want.nbytes ||
      std::memcmp(got.dims, want.dims, sizeof(int64_t) * static_cast<size_t>(want.ndim)) != 0)
    return false;
  const float *g = static_cast<const float *>(got.data), *w = static_cast<const float *>(want.data);
  for (size_t i = 0; i < want.nbytes / sizeof(float); i++)
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]))) return false;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR (the repository's tests/data)\n", argv[0]);
    return 2;
  }
  if (pjrt_abi_version() >> 16 != PJRT_ABI_VERSION_MAJOR) {
    std::fprintf(stderr, "libpjrt's ABI major version is %u, this program's %d\n", pjrt_abi_version() >> 16,
                 PJRT_ABI_VERSION_MAJOR);
    return 1;
  }
  const std::string data = argv[1];
  const char *plugin = std::getenv("PJRT_EXAMPLE_PLUGIN") ? std::getenv("PJRT_EXAMPLE_PLUGIN") : "cpu";
  try {
    pjrt::Runtime runtime(plugin);

    // 1. The MLP, its output allocated by the library.
    pjrt::Model mlp = runtime.load(data + "/jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
    Case mlp_case(data + "/jax_export/jax-0.10.2/mlp_f32");
    {
      pjrt::Output out;
      mlp.run(mlp_case.inputs(), out.get(), 1);
      expect(matches(*out, mlp_case.out, 1e-5f, 1e-5f), "mlp: f32[4, 3], JAX's output (allocated by libpjrt)");
    }

    // 2. The transformer at two shapes, its output into a vector of ours.
    pjrt::Model transformer = runtime.load(data + "/jax_export/symbolic/jax-0.10.2/transformer/model.jaxexport");
    expect(transformer.signature().inputs[0].dims[0] == -1, "transformer: its batch dimension is symbolic (-1)");
    for (const char *set : {"ok0", "ok1"}) {
      Case c(data + "/jax_export/symbolic/jax-0.10.2/transformer/" + set);
      std::vector<float> y(c.out.nbytes / sizeof(float));
      pjrt_tensor out{};
      out.data = y.data();
      out.nbytes = y.size() * sizeof(float);
      transformer.run(c.inputs(), &out, 1);
      expect(out.data == y.data() && matches(out, c.out, 1e-4f, 1e-4f),
             "transformer, x: f32[" + std::to_string(c.in[0].dims[0]) + ", " + std::to_string(c.in[0].dims[1]) +
                 ", 8]: JAX's output, into our vector");
    }

    // 3. A wrong input is an exception with the status's code and message.
    std::vector<pjrt_tensor> wrong = mlp_case.inputs();
    std::vector<float> x(4 * 9);
    wrong.back() = pjrt::view(x.data(), x.size(), PJRT_DTYPE_F32, {4, 9});
    try {
      pjrt::Output out;
      mlp.run(wrong, out.get(), 1);
      expect(false, "a wrong shape is refused");
    } catch (const pjrt::Error &e) {
      expect(e.code() == PJRT_CODE_INVALID_ARGUMENT, std::string("a wrong shape is refused: ") + e.what());
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
  if (failures) {
    std::fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  std::printf("all checks passed\n");
  return 0;
}
