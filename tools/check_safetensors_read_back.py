#!/usr/bin/env python3
"""Read a safetensors file written by pjrt-formats with Python's `safetensors` package.

Usage: check_safetensors_read_back.py FILE EXPECTED.json

EXPECTED.json maps each tensor name to {"dtype": numpy dtype name, "shape": [...],
"values": [...flat...]}. Checks that `safetensors.numpy.load_file` reads every tensor with that
dtype, shape and values, and that each tensor's data starts aligned to its element size (the data
section at a multiple of 64 bytes). Prints "ok N tensors" or fails with a message.
"""

import json
import struct
import sys

import numpy as np
from safetensors.numpy import load_file


def main(path, expected_path):
    with open(expected_path) as f:
        expected = json.load(f)
    tensors = load_file(path)
    assert sorted(tensors) == sorted(expected), (sorted(tensors), sorted(expected))
    for name, want in expected.items():
        got = tensors[name]
        assert got.dtype == np.dtype(want["dtype"]), (name, got.dtype, want["dtype"])
        assert list(got.shape) == want["shape"], (name, got.shape, want["shape"])
        values = np.array(want["values"], dtype=want["dtype"]).reshape(want["shape"])
        assert np.array_equal(got, values), (name, got, values)
    with open(path, "rb") as f:
        raw = f.read()
    (header_len,) = struct.unpack("<Q", raw[:8])
    data_start = 8 + header_len
    assert data_start % 64 == 0, data_start
    header = json.loads(raw[8:data_start])
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin = entry["data_offsets"][0]
        size = np.dtype(expected[name]["dtype"]).itemsize
        assert (data_start + begin) % size == 0, (name, begin, size)
    print(f"ok {len(expected)} tensors")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
