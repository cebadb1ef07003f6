#!/usr/bin/env python3
"""NVIDIA's own client, ``tritonclient`` (from PyPI), against ``pjrt serve``: the outputs it gets
over HTTP (binary tensors, its default, and JSON) and over gRPC equal what ``pjrt run`` writes,
for the MLP, the CNN and the shape-polymorphic transformer (at two batch sizes).

Python is only the client here: the server is the ``pjrt`` binary. ``.ci/run`` makes the
virtual environment (``python3 -m venv DIR && DIR/bin/pip install -r tools/serving-clients.txt``)
and runs:

    DIR/bin/python tools/check_tritonclient.py --pjrt target/debug/pjrt

Exits non-zero with what differed.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from importlib.metadata import version

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

DATA = "tests/data/jax_export"

# name, model file, input files per case.
MODELS = [
    ("mlp", f"{DATA}/jax-0.10.2/mlp_f32/model.jaxexport", [[f"{DATA}/jax-0.10.2/mlp_f32/in{i}.npy" for i in range(5)]]),
    ("cnn", f"{DATA}/jax-0.10.2/cnn/model.jaxexport", [[f"{DATA}/jax-0.10.2/cnn/in{i}.npy" for i in range(4)]]),
    (
        "transformer",
        f"{DATA}/symbolic/jax-0.10.2/transformer/model.jaxexport",
        [[f"{DATA}/symbolic/jax-0.10.2/transformer/{ok}/in{i}.npy" for i in range(13)] for ok in ("ok0", "ok1")],
    ),
]


def pjrt_run(pjrt, model, inputs, out_dir):
    args = [pjrt, "run", model]
    for path in inputs:
        args += ["--input", path]
    subprocess.run(args + ["--output-dir", out_dir], check=True, capture_output=True)
    outputs = sorted(f for f in os.listdir(out_dir) if f.startswith("out") and f.endswith(".npy"))
    return [np.load(os.path.join(out_dir, f)) for f in sorted(outputs, key=lambda f: int(f[3:-4]))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pjrt", required=True, help="the pjrt binary")
    args = parser.parse_args()
    pjrt = os.path.abspath(args.pjrt)
    scratch = tempfile.mkdtemp(prefix="tritonclient-check-")
    env = dict(os.environ, PJRT_CACHE_DIR=os.path.join(scratch, "cache"))
    command = [pjrt, "serve", "--port", "0", "--grpc-port", "0"]
    for name, model, _ in MODELS:
        command += ["--model", f"{name}={model}"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True)
    failures = []
    try:
        line = server.stdout.readline()
        if "http://" not in line:
            sys.exit(f"pjrt serve did not start: {line!r}")
        url = line.split("http://", 1)[1].split()[0]
        grpc_url = line.split("grpc://", 1)[1].split()[0]
        client = httpclient.InferenceServerClient(url=url)
        grpc = grpcclient.InferenceServerClient(url=grpc_url)
        assert client.is_server_live() and client.is_server_ready()
        assert grpc.is_server_live() and grpc.is_server_ready()
        assert grpc.get_server_metadata().name == "pjrt-serve"
        print(f"tritonclient {version('tritonclient')} against pjrt serve at {url} (HTTP) and {grpc_url} (gRPC)")
        for name, model, cases in MODELS:
            assert client.is_model_ready(name) and grpc.is_model_ready(name), name
            metadata = client.get_model_metadata(name)
            grpc_metadata = grpc.get_model_metadata(name, as_json=True)
            for a, b in zip(metadata["inputs"], grpc_metadata["inputs"]):
                assert a["name"] == b["name"] and a["datatype"] == b["datatype"], (a, b)
                assert [int(d) for d in b["shape"]] == a["shape"], (a, b)
            for k, inputs in enumerate(cases):
                expected = pjrt_run(pjrt, model, inputs, os.path.join(scratch, f"{name}-{k}"))
                arrays = [np.load(p) for p in inputs]
                for how in ("binary", "JSON", "gRPC"):
                    lib = grpcclient if how == "gRPC" else httpclient
                    request = []
                    for spec, array in zip(metadata["inputs"], arrays):
                        tensor = lib.InferInput(spec["name"], list(array.shape), spec["datatype"])
                        if how == "gRPC":
                            tensor.set_data_from_numpy(array)
                        else:
                            tensor.set_data_from_numpy(array, binary_data=how == "binary")
                        request.append(tensor)
                    if how == "gRPC":
                        wanted = [grpcclient.InferRequestedOutput(o["name"]) for o in metadata["outputs"]]
                        result = grpc.infer(name, request, outputs=wanted)
                    else:
                        wanted = [
                            httpclient.InferRequestedOutput(o["name"], binary_data=how == "binary")
                            for o in metadata["outputs"]
                        ]
                        result = client.infer(name, request, outputs=wanted)
                    for spec, want in zip(metadata["outputs"], expected):
                        got = result.as_numpy(spec["name"])
                        if got is None or got.shape != want.shape or not np.array_equal(got, want):
                            failures.append(f"{name} case {k} ({how}): {spec['name']} differs from pjrt run's")
                        else:
                            print(f"{name} case {k} ({how}): {spec['name']} {list(got.shape)} equals pjrt run's")
        # A wrong shape is refused by both with the server's message.
        for lib, call in ((httpclient, client), (grpcclient, grpc)):
            bad = lib.InferInput("input0", [2], "FP32")
            bad.set_data_from_numpy(np.zeros(2, np.float32))
            try:
                call.infer("cnn", [bad])
                failures.append(f"{lib.__name__}: a wrong request was answered")
            except Exception as e:  # tritonclient's InferenceServerException
                if "input0" not in str(e):
                    failures.append(f"{lib.__name__}: the error does not name the input: {e}")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    if server.returncode != 0:
        failures.append(f"pjrt serve exited with {server.returncode} on SIGTERM")
    if failures:
        sys.exit("\n".join(failures))
    print(json.dumps({"tritonclient": "ok", "http": ["binary", "JSON"], "grpc": True, "models": [m[0] for m in MODELS]}))


if __name__ == "__main__":
    main()
