/* A small reader of NumPy .npy files for the C example: little-endian float32, int32 and bool
 * arrays in C order (what tests/data holds), enough to feed pjrt_model_run and compare with
 * JAX's outputs. Not a general .npy reader. */
#ifndef PJRT_EXAMPLE_NPY_H
#define PJRT_EXAMPLE_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "pjrt.h"

typedef struct npy_array {
  void *data;       /* malloc'ed; free with npy_free */
  size_t nbytes;
  pjrt_dtype dtype; /* PJRT_DTYPE_F32, _S32 or _BOOL */
  int32_t ndim;
  int64_t dims[PJRT_MAX_NDIM];
} npy_array;

/* Reads `path` into `out`; 0 on success, else -1 with a message on stderr. */
int npy_read(const char *path, npy_array *out);

/* Frees what npy_read allocated. */
void npy_free(npy_array *array);

/* A pjrt_tensor over the array's bytes (valid while the array is). */
pjrt_tensor npy_tensor(const npy_array *array);

#endif
