#!/usr/bin/env python3
"""NVIDIA's own client, ``tritonclient`` (from PyPI), against ``pjrt serve``: the outputs it gets
over HTTP (binary tensors, its default, and JSON) equal what ``pjrt run`` writes, for the MLP,
the CNN and the shape-polymorphic transformer (at two batch sizes).

Python is only the client here: the server is the ``pjrt`` binary. ``.ci/run`` makes the
virtual environment (``python3 -m venv DIR && DIR/bin/pip install 'tritonclient[http]' numpy``)
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
    command = [pjrt, "serve", "--port", "0"]
    for name, model, _ in MODELS:
        command += ["--model", f"{name}={model}"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True)
    failures = []
    try:
        line = server.stdout.readline()
        if "http://" not in line:
            sys.exit(f"pjrt serve did not start: {line!r}")
        url = line.split("http://", 1)[1].split()[0]
        client = httpclient.InferenceServerClient(url=url)
        assert client.is_server_live() and client.is_server_ready()
        print(f"tritonclient {version('tritonclient')} against pjrt serve at {url}")
        for name, model, cases in MODELS:
            assert client.is_model_ready(name), name
            metadata = client.get_model_metadata(name)
            for k, inputs in enumerate(cases):
                expected = pjrt_run(pjrt, model, inputs, os.path.join(scratch, f"{name}-{k}"))
                arrays = [np.load(p) for p in inputs]
                for binary in (True, False):
                    request = []
                    for spec, array in zip(metadata["inputs"], arrays):
                        tensor = httpclient.InferInput(spec["name"], list(array.shape), spec["datatype"])
                        tensor.set_data_from_numpy(array, binary_data=binary)
                        request.append(tensor)
                    wanted = [httpclient.InferRequestedOutput(o["name"], binary_data=binary) for o in metadata["outputs"]]
                    result = client.infer(name, request, outputs=wanted)
                    for spec, want in zip(metadata["outputs"], expected):
                        got = result.as_numpy(spec["name"])
                        how = "binary" if binary else "JSON"
                        if got is None or got.shape != want.shape or not np.array_equal(got, want):
                            failures.append(f"{name} case {k} ({how}): {spec['name']} differs from pjrt run's")
                        else:
                            print(f"{name} case {k} ({how}): {spec['name']} {list(got.shape)} equals pjrt run's")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    if server.returncode != 0:
        failures.append(f"pjrt serve exited with {server.returncode} on SIGTERM")
    if failures:
        sys.exit("\n".join(failures))
    print(json.dumps({"tritonclient_http": "ok", "models": [m[0] for m in MODELS]}))


if __name__ == "__main__":
    main()
