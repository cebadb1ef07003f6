#!/usr/bin/env python3
"""The Python baseline for ``pjrt serve``'s load test: a minimal Open Inference Protocol server
(HTTP/1.1 keep-alive, JSON and Triton's binary tensor data) in front of
``jax.jit(exported.call)``, the way a Python service would serve a ``jax.export`` model.

Not part of the product: ``tools/bench_serve.sh`` runs it in a JAX virtual environment beside
``pjrt serve`` and drives both with ``pjrt bench serve``.

    python tools/jax_oip_server.py --port 8010 --model NAME=PATH[:params=W.safetensors] ...

Prints ``serving N model(s) on http://127.0.0.1:PORT`` once every model is loaded and (for
models of static shapes) compiled by a first call, as ``pjrt serve`` compiles them at load.
Weights from a safetensors file are the model's first inputs, in file order, put on the device
once (``jax.device_put``), as ``pjrt serve`` does.
"""

import argparse
import json
import os
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax import export  # noqa: E402

DTYPES = {
    "float32": "FP32", "float64": "FP64", "float16": "FP16", "bfloat16": "BF16",
    "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
    "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64", "bool": "BOOL",
}
NUMPY = {v: k for k, v in DTYPES.items() if k != "bfloat16"}
SAFETENSORS = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I32": np.int32, "I64": np.int64,
               "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = memoryview(data)[8 + n:]
    tensors = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    out = []
    for _, t in tensors:
        start, end = t["data_offsets"]
        out.append(np.frombuffer(body[start:end], dtype=SAFETENSORS[t["dtype"]]).reshape(t["shape"]))
    return out


class Model:
    def __init__(self, name, path, params):
        with open(path, "rb") as f:
            self.exported = export.deserialize(bytearray(f.read()))
        self.name = name
        self.call = jax.jit(self.exported.call)
        self.weights = [jax.device_put(w) for w in read_safetensors(params)] if params else []
        avals = self.exported.in_avals[len(self.weights):]
        self.inputs = [self.spec(f"input{i}", a) for i, a in enumerate(avals)]
        self.outputs = [self.spec(f"output{i}", a) for i, a in enumerate(self.exported.out_avals)]
        if all(d >= 0 for s in self.inputs for d in s["shape"]):
            zeros = [np.zeros(s["shape"], NUMPY.get(s["datatype"], np.float32)) for s in self.inputs]
            self.run(zeros)

    @staticmethod
    def spec(name, aval):
        shape = [d if isinstance(d, int) else -1 for d in aval.shape]
        return {"name": name, "datatype": DTYPES[str(aval.dtype)], "shape": shape}

    def run(self, arrays):
        # The export's own argument structure (a params dict, then the inputs, say).
        args, kwargs = jax.tree_util.tree_unflatten(self.exported.in_tree, [*self.weights, *arrays])
        outs = jax.block_until_ready(self.call(*args, **kwargs))
        return [np.asarray(o) for o in jax.tree_util.tree_leaves(outs)]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are written separately: without this, Nagle's algorithm and delayed
    # ACKs add ~40 ms to every answer, which would be the baseline's fault, not JAX's.
    disable_nagle_algorithm = True
    models = {}

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, status, message):
        self.reply(status, json.dumps({"error": message}).encode(), [("Content-Type", "application/json")])

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        if parts[:2] == ["v2", "health"]:
            return self.reply(200, b"")
        if len(parts) == 3 and parts[:2] == ["v2", "models"] and parts[2] in self.models:
            m = self.models[parts[2]]
            body = {"name": m.name, "versions": ["1"], "platform": "jax", "inputs": m.inputs, "outputs": m.outputs}
            return self.reply(200, json.dumps(body).encode(), [("Content-Type", "application/json")])
        self.error(404, f"no route {self.path}")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        parts = self.path.strip("/").split("/")
        if len(parts) != 4 or parts[:2] != ["v2", "models"] or parts[3] != "infer" or parts[2] not in self.models:
            return self.error(404, f"no route {self.path}")
        model = self.models[parts[2]]
        header_length = self.headers.get("Inference-Header-Content-Length")
        split = int(header_length) if header_length else len(body)
        request = json.loads(body[:split])
        binary = memoryview(body)[split:]
        arrays = []
        for t in request["inputs"]:
            dtype = NUMPY[t["datatype"]]
            size = t.get("parameters", {}).get("binary_data_size")
            if size is not None:
                arrays.append(np.frombuffer(binary[:size], dtype=dtype).reshape(t["shape"]))
                binary = binary[size:]
            else:
                arrays.append(np.asarray(t["data"], dtype=dtype).reshape(t["shape"]))
        try:
            outputs = model.run(arrays)
        except Exception as e:  # a wrong request
            return self.error(400, str(e))
        as_binary = request.get("parameters", {}).get("binary_data_output", False)
        tensors, blobs = [], []
        for spec, out in zip(model.outputs, outputs):
            t = {"name": spec["name"], "datatype": spec["datatype"], "shape": list(out.shape)}
            if as_binary:
                blob = np.ascontiguousarray(out).tobytes()
                t["parameters"] = {"binary_data_size": len(blob)}
                blobs.append(blob)
            else:
                t["data"] = out.reshape(-1).tolist()
            tensors.append(t)
        head = json.dumps({"model_name": model.name, "model_version": "1", "outputs": tensors}).encode()
        if as_binary:
            self.reply(200, head + b"".join(blobs),
                       [("Content-Type", "application/octet-stream"), ("Inference-Header-Content-Length", str(len(head)))])
        else:
            self.reply(200, head, [("Content-Type", "application/json")])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument("--model", action="append", required=True, help="NAME=PATH[:params=W.safetensors]")
    args = parser.parse_args()
    started = time.time()
    for spec in args.model:
        name, rest = spec.split("=", 1)
        path, _, params = rest.partition(":params=")
        Handler.models[name] = Model(name, path, params or None)
    # The default listen backlog (5) resets connections beyond it: 16 clients connect at once.
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"serving {len(Handler.models)} model(s) on http://127.0.0.1:{server.server_address[1]} "
          f"(ready in {(time.time() - started) * 1e3:.1f} ms)", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
