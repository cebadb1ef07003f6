/* See npy.h. The format: "\x93NUMPY", version (1 or 2 bytes), header length (2 or 4 bytes,
 * little-endian), a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), },
 * then the data. */
#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *path, const char *why) {
  fprintf(stderr, "npy_read %s: %s\n", path, why);
  return -1;
}

int npy_read(const char *path, npy_array *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return fail(path, "cannot open");
  unsigned char magic[8];
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) {
    fclose(f);
    return fail(path, "not a .npy file");
  }
  size_t header_len;
  unsigned char len[4] = {0};
  if (magic[6] == 1) {
    if (fread(len, 1, 2, f) != 2) { fclose(f); return fail(path, "cut short"); }
    header_len = (size_t)len[0] | (size_t)len[1] << 8;
  } else {
    if (fread(len, 1, 4, f) != 4) { fclose(f); return fail(path, "cut short"); }
    header_len = (size_t)len[0] | (size_t)len[1] << 8 | (size_t)len[2] << 16 | (size_t)len[3] << 24;
  }
  if (header_len > 65536) { fclose(f); return fail(path, "header too long"); }
  char *header = calloc(header_len + 1, 1);
  if (!header || fread(header, 1, header_len, f) != header_len) {
    free(header);
    fclose(f);
    return fail(path, "cut short");
  }
  size_t element;
  if (strstr(header, "'<f4'")) { out->dtype = PJRT_DTYPE_F32; element = 4; }
  else if (strstr(header, "'<i4'")) { out->dtype = PJRT_DTYPE_S32; element = 4; }
  else if (strstr(header, "'|b1'")) { out->dtype = PJRT_DTYPE_BOOL; element = 1; }
  else { free(header); fclose(f); return fail(path, "a dtype this reader does not know"); }
  if (!strstr(header, "'fortran_order': False")) {
    free(header);
    fclose(f);
    return fail(path, "Fortran order");
  }
  const char *shape = strstr(header, "'shape': (");
  if (!shape) { free(header); fclose(f); return fail(path, "no shape"); }
  shape += strlen("'shape': (");
  size_t count = 1;
  while (*shape && *shape != ')') {
    char *end;
    long long d = strtoll(shape, &end, 10);
    if (end == shape) break;
    if (out->ndim == PJRT_MAX_NDIM || d < 0) { free(header); fclose(f); return fail(path, "a bad shape"); }
    out->dims[out->ndim++] = d;
    count *= (size_t)d;
    shape = end;
    while (*shape == ',' || *shape == ' ') shape++;
  }
  free(header);
  out->nbytes = count * element;
  out->data = malloc(out->nbytes ? out->nbytes : 1);
  if (!out->data || fread(out->data, 1, out->nbytes, f) != out->nbytes) {
    fclose(f);
    npy_free(out);
    return fail(path, "data cut short");
  }
  fclose(f);
  return 0;
}

void npy_free(npy_array *array) {
  free(array->data);
  array->data = NULL;
}

pjrt_tensor npy_tensor(const npy_array *array) {
  pjrt_tensor t;
  memset(&t, 0, sizeof t);
  t.data = array->data;
  t.nbytes = array->nbytes;
  t.dtype = array->dtype;
  t.ndim = array->ndim;
  memcpy(t.dims, array->dims, sizeof t.dims);
  return t;
}
