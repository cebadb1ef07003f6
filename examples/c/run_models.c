/* Runs models exported by JAX through libpjrt from C, and checks them against JAX's outputs:
 *
 *   1. the exported MLP (tests/data/jax_export/jax-0.10.2/mlp_f32), its output allocated by the
 *      library and then written into a buffer of ours; within 1e-5 + 1e-5 * |JAX's value|, the
 *      tolerance of the data's manifest;
 *   2. the shape-polymorphic transformer block (tests/data/jax_export/symbolic/jax-0.10.2/
 *      transformer) at two shapes, x: f32[1, 1, 8] and f32[2, 7, 8]; within 1e-4 + 1e-4 * |JAX's|;
 *   3. bad input, each a status with a code and a message (NULL pointers, a wrong dtype, rank or
 *      size, an output buffer too small, a freed handle used again, a damaged model file, ...);
 *   4. one model run from many threads at once, every answer checked.
 *
 * JAX's outputs were written by tools/gen_jax_export_testdata.py and tools/gen_symbolic_testdata.py.
 *
 *   run_models [--quick] [--bench N] DATA_DIR
 *
 * DATA_DIR is the repository's tests/data. --quick runs the MLP, the bad inputs and a short
 * thread test only (what runs under valgrind). --bench N times the MLP instead: N calls, each
 * timed alone, their median (tools/bench_capi.sh compares it with Rust), with the client
 * options PJRT_BENCH_CLIENT_OPTIONS (default "asynchronous=false").
 * PJRT_EXAMPLE_PLUGIN names the plugin (a name or a path; default "cpu").
 *
 * Exit status: 0 when every check passed. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "npy.h"
#include "pjrt.h"

static int failures;

#define CHECK(cond, ...)                                                  \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
      failures++;                                                         \
    }                                                                     \
  } while (0)

/* 1 when `status` is NULL (success); else prints and frees it and returns 0. */
static int ok(pjrt_status *status, const char *what) {
  if (!status) return 1;
  fprintf(stderr, "FAIL %s: status %d: %s\n", what, pjrt_status_code(status), pjrt_status_message(status));
  pjrt_status_free(status);
  failures++;
  return 0;
}

/* Checks that `status` is an error of `code` whose message contains `text`; frees it. */
static void expect_error(pjrt_status *status, pjrt_code code, const char *text, const char *what) {
  if (!status) {
    fprintf(stderr, "FAIL %s: succeeded, expected an error\n", what);
    failures++;
    return;
  }
  const char *message = pjrt_status_message(status);
  CHECK(pjrt_status_code(status) == code, "%s: code %d, expected %d (%s)", what, pjrt_status_code(status), code,
        message);
  CHECK(strstr(message, text) != NULL, "%s: \"%s\" not in the message \"%s\"", what, text, message);
  printf("  ok: %-34s -> %s\n", what, message);
  pjrt_status_free(status);
}

/* The .npy files of one case: DIR/in0.npy, in1.npy, ... and DIR/out0.npy, ... */
typedef struct {
  npy_array in[16];
  pjrt_tensor tensors[16];
  int n_in;
  npy_array out[4];
  int n_out;
} case_data;

static int exists(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f) fclose(f);
  return f != NULL;
}

static int load_case(const char *dir, case_data *c) {
  char path[4096];
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 16; i++) {
    snprintf(path, sizeof path, "%s/in%d.npy", dir, i);
    if (!exists(path)) break;
    if (npy_read(path, &c->in[i]) != 0) return -1;
    c->tensors[i] = npy_tensor(&c->in[i]);
    c->n_in++;
  }
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/out%d.npy", dir, i);
    if (!exists(path)) break;
    if (npy_read(path, &c->out[i]) != 0) return -1;
    c->n_out++;
  }
  if (c->n_in == 0) {
    fprintf(stderr, "no inputs in %s\n", dir);
    return -1;
  }
  return 0;
}

static void free_case(case_data *c) {
  for (int i = 0; i < c->n_in; i++) npy_free(&c->in[i]);
  for (int i = 0; i < c->n_out; i++) npy_free(&c->out[i]);
}

/* Compares a float32 output with JAX's within atol + rtol * |want|; 1 when it matches. */
static int matches(const pjrt_tensor *got, const npy_array *want, float atol, float rtol, const char *what) {
  if (got->dtype != PJRT_DTYPE_F32 || got->ndim != want->ndim || got->nbytes != want->nbytes ||
      memcmp(got->dims, want->dims, sizeof(int64_t) * (size_t)want->ndim) != 0) {
    fprintf(stderr, "FAIL %s: dtype %d, rank %d, %zu bytes; JAX's has rank %d, %zu bytes\n", what, got->dtype,
            got->ndim, got->nbytes, want->ndim, want->nbytes);
    failures++;
    return 0;
  }
  const float *g = got->data, *w = want->data;
  float worst = 0;
  for (size_t i = 0; i < want->nbytes / 4; i++) {
    float diff = fabsf(g[i] - w[i]);
    if (!(diff <= atol + rtol * fabsf(w[i]))) {
      fprintf(stderr, "FAIL %s: element %zu is %g, JAX's is %g\n", what, i, g[i], w[i]);
      failures++;
      return 0;
    }
    if (diff > worst) worst = diff;
  }
  printf("  ok: %-34s matches JAX (largest difference %.3g)\n", what, worst);
  return 1;
}

/* Runs `model` on the case's inputs, outputs allocated by the library, and compares. */
static void run_and_check(pjrt_model *model, case_data *c, float atol, float rtol, const char *what) {
  pjrt_tensor outputs[4];
  memset(outputs, 0, sizeof outputs); /* data NULL: the library allocates */
  if (!ok(pjrt_model_run(model, c->tensors, (size_t)c->n_in, outputs, (size_t)c->n_out), what)) return;
  for (int i = 0; i < c->n_out; i++) {
    matches(&outputs[i], &c->out[i], atol, rtol, what);
    ok(pjrt_tensor_free(&outputs[i]), "pjrt_tensor_free");
    CHECK(outputs[i].data == NULL, "pjrt_tensor_free sets data to NULL");
  }
}

static pjrt_model *load(pjrt_runtime *runtime, const char *data, const char *file) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", data, file);
  pjrt_model *model = NULL;
  if (!ok(pjrt_model_load(runtime, path, NULL, &model), path)) return NULL;
  return model;
}

static void print_signature(pjrt_model *model, const char *name) {
  pjrt_signature signature;
  if (!ok(pjrt_model_signature(model, &signature), "pjrt_model_signature")) return;
  printf("%s: %zu inputs, %zu outputs; input 0 is dtype %d [", name, signature.n_inputs, signature.n_outputs,
         signature.inputs[0].dtype);
  for (int d = 0; d < signature.inputs[0].ndim; d++)
    printf("%s%lld", d ? ", " : "", (long long)signature.inputs[0].dims[d]);
  printf("] (-1: symbolic)\n");
}

/* 1. The MLP: its output allocated by the library, then into a buffer of ours. */
static void mlp(pjrt_runtime *runtime, const char *data, case_data *c) {
  pjrt_model *model = load(runtime, data, "jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
  if (!model) return;
  print_signature(model, "mlp");
  run_and_check(model, c, 1e-5f, 1e-5f, "mlp, output allocated");
  float buffer[12];
  pjrt_tensor out;
  memset(&out, 0, sizeof out);
  out.data = buffer;
  out.nbytes = sizeof buffer;
  if (ok(pjrt_model_run(model, c->tensors, 5, &out, 1), "mlp, output into our buffer")) {
    CHECK(out.data == buffer && out.nbytes == 48, "the output went into our buffer");
    matches(&out, &c->out[0], 1e-5f, 1e-5f, "mlp, output into our buffer");
  }
  ok(pjrt_model_free(model), "pjrt_model_free");
}

/* 2. The shape-polymorphic transformer at two shapes. */
static void transformer(pjrt_runtime *runtime, const char *data) {
  pjrt_model *model = load(runtime, data, "jax_export/symbolic/jax-0.10.2/transformer/model.jaxexport");
  if (!model) return;
  print_signature(model, "transformer");
  const char *cases[] = {"ok0", "ok1"};
  for (int k = 0; k < 2; k++) {
    char dir[4096], what[64];
    snprintf(dir, sizeof dir, "%s/jax_export/symbolic/jax-0.10.2/transformer/%s", data, cases[k]);
    case_data c;
    if (load_case(dir, &c) != 0) {
      failures++;
      continue;
    }
    snprintf(what, sizeof what, "transformer, x: f32[%lld, %lld, 8]", (long long)c.in[0].dims[0],
             (long long)c.in[0].dims[1]);
    run_and_check(model, &c, 1e-4f, 1e-4f, what);
    free_case(&c);
  }
  ok(pjrt_model_free(model), "pjrt_model_free");
}

/* 3. Bad input from C: each a status with a message. */
static void bad_inputs(pjrt_runtime *runtime, const char *data, case_data *c) {
  printf("bad inputs:\n");
  pjrt_model *model = load(runtime, data, "jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
  if (!model) return;
  pjrt_tensor out, inputs[5];
  memset(&out, 0, sizeof out);

  expect_error(pjrt_model_run(model, NULL, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "inputs is NULL",
               "inputs NULL");
  expect_error(pjrt_model_run(model, c->tensors, 5, NULL, 1), PJRT_CODE_INVALID_ARGUMENT, "outputs is NULL",
               "outputs NULL");
  expect_error(pjrt_model_run(model, c->tensors, 4, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "n_inputs is 4",
               "too few inputs");

  memcpy(inputs, c->tensors, sizeof inputs);
  inputs[4].dtype = PJRT_DTYPE_S32;
  expect_error(pjrt_model_run(model, inputs, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "inputs[4]", "wrong dtype");
  memcpy(inputs, c->tensors, sizeof inputs);
  inputs[4].ndim = 3;
  inputs[4].dims[2] = 1;
  expect_error(pjrt_model_run(model, inputs, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "inputs[4]", "wrong rank");
  memcpy(inputs, c->tensors, sizeof inputs);
  inputs[4].nbytes -= 4;
  expect_error(pjrt_model_run(model, inputs, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "nbytes is 124",
               "wrong size");
  memcpy(inputs, c->tensors, sizeof inputs);
  inputs[4].ndim = PJRT_MAX_NDIM + 1;
  expect_error(pjrt_model_run(model, inputs, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "ndim 9", "rank too large");
  memcpy(inputs, c->tensors, sizeof inputs);
  inputs[4].data = NULL;
  expect_error(pjrt_model_run(model, inputs, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "data is NULL",
               "input data NULL");

  float small[4];
  out.data = small;
  out.nbytes = sizeof small;
  expect_error(pjrt_model_run(model, c->tensors, 5, &out, 1), PJRT_CODE_OUT_OF_RANGE, "needs 48",
               "output buffer too small");
  CHECK(out.nbytes == 48 && out.ndim == 2 && out.dims[0] == 4 && out.dims[1] == 3,
        "the size it needs is written back: %zu bytes", out.nbytes);
  expect_error(pjrt_tensor_free(&out), PJRT_CODE_INVALID_ARGUMENT, "not allocated by this library",
               "freeing our own buffer");

  /* A freed handle used again. */
  pjrt_model *gone = load(runtime, data, "jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
  ok(pjrt_model_free(gone), "pjrt_model_free");
  memset(&out, 0, sizeof out);
  expect_error(pjrt_model_run(gone, c->tensors, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT, "freed already",
               "a freed model run");
  expect_error(pjrt_model_free(gone), PJRT_CODE_INVALID_ARGUMENT, "freed already", "a freed model freed");
  expect_error(pjrt_model_run((pjrt_model *)runtime, c->tensors, 5, &out, 1), PJRT_CODE_INVALID_ARGUMENT,
               "not a pjrt_model", "a runtime passed as a model");

  /* Files: missing, damaged (the MLP cut in half), and options without their size. */
  pjrt_model *none = NULL;
  expect_error(pjrt_model_load(runtime, "/nonexistent/model.jaxexport", NULL, &none), PJRT_CODE_NOT_FOUND,
               "/nonexistent/model.jaxexport", "a missing model file");
  char source[4096];
  snprintf(source, sizeof source, "%s/jax_export/jax-0.10.2/mlp_f32/model.jaxexport", data);
  char damaged[4096];
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(damaged, sizeof damaged, "%s/pjrt-c-example-%ld.jaxexport", tmp, (long)getpid());
  FILE *in = fopen(source, "rb");
  char bytes[65536];
  size_t n = in ? fread(bytes, 1, sizeof bytes, in) : 0;
  if (in) fclose(in);
  FILE *outf = fopen(damaged, "wb");
  if (outf) {
    fwrite(bytes, 1, n / 2, outf);
    fclose(outf);
    expect_error(pjrt_model_load(runtime, damaged, NULL, &none), PJRT_CODE_INVALID_ARGUMENT,
                 "not a readable jax.export artifact", "a damaged model file");
    remove(damaged);
  } else {
    CHECK(0, "cannot write %s", damaged);
  }
  CHECK(none == NULL, "a failed load leaves NULL");
  expect_error(pjrt_model_load(runtime, NULL, NULL, &none), PJRT_CODE_INVALID_ARGUMENT, "path is NULL",
               "a NULL path");
  pjrt_options options;
  memset(&options, 0, sizeof options); /* struct_size forgotten */
  pjrt_runtime *other = NULL;
  expect_error(pjrt_runtime_new(&options, &other), PJRT_CODE_INVALID_ARGUMENT, "struct_size is 0",
               "options without struct_size");
  expect_error(pjrt_runtime_new(NULL, NULL), PJRT_CODE_INVALID_ARGUMENT, "is NULL", "no place for the runtime");

  /* Statuses: NULL is OK, a second free is ignored. */
  CHECK(pjrt_status_code(NULL) == PJRT_CODE_OK && strcmp(pjrt_status_message(NULL), "OK") == 0, "NULL is OK");
  pjrt_status *status = pjrt_model_free(gone);
  pjrt_status_free(status);
  pjrt_status_free(status);
  ok(pjrt_model_free(model), "pjrt_model_free");
}

/* 4. One model, many threads. */
typedef struct {
  pjrt_model *model;
  case_data *c;
  int runs;
  int failed;
} thread_job;

static void *thread_main(void *arg) {
  thread_job *job = arg;
  float buffer[12];
  for (int i = 0; i < job->runs; i++) {
    pjrt_tensor out;
    memset(&out, 0, sizeof out);
    out.data = buffer;
    out.nbytes = sizeof buffer;
    pjrt_status *status = pjrt_model_run(job->model, job->c->tensors, 5, &out, 1);
    if (status) {
      fprintf(stderr, "thread run failed: %s\n", pjrt_status_message(status));
      pjrt_status_free(status);
      job->failed++;
      continue;
    }
    const float *want = job->c->out[0].data;
    for (int k = 0; k < 12; k++)
      if (!(fabsf(buffer[k] - want[k]) <= 1e-5f + 1e-5f * fabsf(want[k]))) {
        job->failed++;
        break;
      }
  }
  return NULL;
}

static void threads(pjrt_runtime *runtime, const char *data, case_data *c, int n_threads, int runs) {
  pjrt_model *model = load(runtime, data, "jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
  if (!model) return;
  pthread_t ids[16];
  thread_job jobs[16];
  for (int t = 0; t < n_threads; t++) {
    jobs[t] = (thread_job){model, c, runs, 0};
    if (pthread_create(&ids[t], NULL, thread_main, &jobs[t]) != 0) {
      CHECK(0, "pthread_create");
      n_threads = t;
      break;
    }
  }
  int failed = 0;
  for (int t = 0; t < n_threads; t++) {
    pthread_join(ids[t], NULL);
    failed += jobs[t].failed;
  }
  CHECK(failed == 0, "%d of %d runs from threads failed or differed from JAX", failed, n_threads * runs);
  if (failed == 0) printf("  ok: %d threads x %d runs of one model, every answer JAX's\n", n_threads, runs);
  ok(pjrt_model_free(model), "pjrt_model_free");
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* --bench N: the MLP, its output into our buffer; N calls after 1000 to warm up, each timed
 * alone: the median, and the quartiles. */
static void bench(pjrt_runtime *runtime, const char *data, case_data *c, int n) {
  pjrt_model *model = load(runtime, data, "jax_export/jax-0.10.2/mlp_f32/model.jaxexport");
  if (!model) return;
  float buffer[12];
  pjrt_tensor out;
  double *times = malloc(sizeof(double) * (size_t)n);
  if (!times) return;
  for (int i = -1000; i < n; i++) {
    memset(&out, 0, sizeof out);
    out.data = buffer;
    out.nbytes = sizeof buffer;
    double start = now_ns();
    pjrt_status *status = pjrt_model_run(model, c->tensors, 5, &out, 1);
    double took = now_ns() - start;
    if (status) {
      ok(status, "bench");
      free(times);
      return;
    }
    if (i >= 0) times[i] = took;
  }
  qsort(times, (size_t)n, sizeof times[0], by_value);
  printf("c: mlp run, output into a buffer of ours, client options \"%s\": median %.0f ns per call "
         "(quartiles %.0f .. %.0f, %d calls)\n",
         getenv("PJRT_BENCH_CLIENT_OPTIONS") ? getenv("PJRT_BENCH_CLIENT_OPTIONS") : "asynchronous=false",
         times[n / 2], times[n / 4], times[3 * n / 4], n);
  free(times);
  ok(pjrt_model_free(model), "pjrt_model_free");
}

int main(int argc, char **argv) {
  int quick = 0, bench_runs = 0;
  const char *data = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--bench") == 0 && i + 1 < argc) bench_runs = atoi(argv[++i]);
    else data = argv[i];
  }
  if (!data) {
    fprintf(stderr, "usage: %s [--quick] [--bench N] DATA_DIR (the repository's tests/data)\n", argv[0]);
    return 2;
  }
  if (pjrt_abi_version() >> 16 != PJRT_ABI_VERSION_MAJOR) {
    fprintf(stderr, "libpjrt's ABI is %u.%u, this program was built for %d.x\n", pjrt_abi_version() >> 16,
            pjrt_abi_version() & 0xffff, PJRT_ABI_VERSION_MAJOR);
    return 1;
  }

  pjrt_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.plugin = getenv("PJRT_EXAMPLE_PLUGIN") ? getenv("PJRT_EXAMPLE_PLUGIN") : "cpu";
  if (bench_runs > 0) {
    /* As the Rust side of tools/bench_capi.sh: the CPU plugin's asynchronous=false unless
     * PJRT_BENCH_CLIENT_OPTIONS says otherwise ("" for the plugin's defaults). */
    const char *specs = getenv("PJRT_BENCH_CLIENT_OPTIONS");
    options.client_options = specs ? specs : "asynchronous=false";
  }
  pjrt_runtime *runtime = NULL;
  if (!ok(pjrt_runtime_new(&options, &runtime), "pjrt_runtime_new")) return 1;

  char dir[4096];
  snprintf(dir, sizeof dir, "%s/jax_export/jax-0.10.2/mlp_f32", data);
  case_data mlp_case;
  if (load_case(dir, &mlp_case) != 0) return 1;

  if (bench_runs > 0) {
    bench(runtime, data, &mlp_case, bench_runs);
  } else {
    mlp(runtime, data, &mlp_case);
    if (!quick) transformer(runtime, data);
    bad_inputs(runtime, data, &mlp_case);
    printf("threads:\n");
    if (quick) threads(runtime, data, &mlp_case, 4, 5);
    else threads(runtime, data, &mlp_case, 8, 50);
  }

  free_case(&mlp_case);
  ok(pjrt_runtime_free(runtime), "pjrt_runtime_free");
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
