#!/usr/bin/env python3
"""Shared memory against the socket: a same-host client of ``pjrt serve`` taking the
transformer's 2 MiB logits (``f32[1,64,8192]``; 64 int32 tokens in) through a system shared
memory region, and through the socket, over HTTP and gRPC, with ``tritonclient`` 2.45.0 (the
figures of docs/serving.md's "Shared memory").

For each protocol and each way, ``--requests`` requests one after another (after 20 to warm
up), each timed from the call to the numpy array of the logits in hand: through the socket,
binary tensor data (HTTP) or ``raw_output_contents`` (gRPC), ``as_numpy``; through shared
memory, the tokens and the logits in two registered regions, ``get_contents_as_numpy`` on the
output region after the call (a view of the client's mapping: no copy, as a shared-memory
client reads it). The logits are compared with the socket's answer once. Prints, per protocol
and way, requests per second, p50/p99 latency and the CPU time per request of the client and
of the server (from /proc: what the transfer costs, less moved by other load on the machine
than the latencies), and writes them as JSON with ``--json``.

    target/jax-venv-0.10.2/bin/python tools/gen_transformer_export.py export /tmp/tfm
    VENV/bin/python tools/bench_serve_shm.py --pjrt target/release/pjrt --transformer /tmp/tfm

VENV: the serving clients' virtual environment (``tools/serving-clients.txt``, as .ci/run
makes it). The server runs with its defaults and ``--shared-memory``.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm


def start(pjrt, transformer, scratch):
    model = f"transformer={transformer}/model.jaxexport:params={transformer}/params.safetensors"
    env = dict(os.environ, PJRT_CACHE_DIR=os.path.join(scratch, "cache"))
    command = [pjrt, "serve", "--port", "0", "--grpc-port", "0", "--shared-memory", "--model", model]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    line = process.stdout.readline()
    if "http://" not in line:
        process.kill()
        sys.exit(f"pjrt serve did not start: {line!r}\n{process.stderr.read()}")
    return process, line.split("http://", 1)[1].split()[0], line.split("grpc://", 1)[1].split()[0]


def cpu_seconds(pid):
    """The user and system CPU time process `pid` has used, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(requests, call, server_pid):
    for _ in range(20):
        call()
    times = []
    client_cpu, server_cpu = time.process_time(), cpu_seconds(server_pid)
    started = time.perf_counter()
    for _ in range(requests):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - started
    client_cpu, server_cpu = time.process_time() - client_cpu, cpu_seconds(server_pid) - server_cpu
    ms = np.array(times) * 1e3
    return {"requests_per_s": requests / wall, "p50_ms": float(np.percentile(ms, 50)),
            "p99_ms": float(np.percentile(ms, 99)), "client_cpu_ms": client_cpu / requests * 1e3,
            "server_cpu_ms": server_cpu / requests * 1e3}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pjrt", default="target/release/pjrt")
    parser.add_argument("--transformer", required=True, help="the folder gen_transformer_export.py export wrote")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    tokens = np.load(os.path.join(args.transformer, "tokens.npy")).astype(np.int32)
    scratch = tempfile.mkdtemp(prefix="bench-serve-shm-")
    process, url, grpc_url = start(os.path.abspath(args.pjrt), args.transformer, scratch)
    results = []
    try:
        for module, client in ((httpclient, httpclient.InferenceServerClient(url=url)),
                               (grpcclient, grpcclient.InferenceServerClient(url=grpc_url))):
            protocol = module.__name__.split(".")[-1]
            metadata = client.get_model_metadata("transformer")
            if module is grpcclient:
                metadata = client.get_model_metadata("transformer", as_json=True)
            output = metadata["outputs"][0]
            shape = [int(d) for d in output["shape"]]
            logits_bytes = int(np.prod(shape)) * 4
            input_name = metadata["inputs"][0]["name"]

            def socket_call():
                inputs = [module.InferInput(input_name, list(tokens.shape), "INT32")]
                inputs[0].set_data_from_numpy(tokens)
                outputs = [module.InferRequestedOutput(output["name"])]
                if module is httpclient:
                    outputs = [module.InferRequestedOutput(output["name"], binary_data=True)]
                return client.infer("transformer", inputs, outputs=outputs).as_numpy(output["name"])

            want = socket_call()
            keys = {"in": f"/bench_shm_in_{protocol}_{os.getpid()}", "out": f"/bench_shm_out_{protocol}_{os.getpid()}"}
            sizes = {"in": tokens.nbytes, "out": logits_bytes}
            handles = {k: shm.create_shared_memory_region(f"{k}_{protocol}", keys[k], sizes[k]) for k in keys}
            try:
                shm.set_shared_memory_region(handles["in"], [tokens])
                for k in keys:
                    client.register_system_shared_memory(f"{k}_{protocol}", keys[k], sizes[k])

                def shm_call():
                    inputs = [module.InferInput(input_name, list(tokens.shape), "INT32")]
                    inputs[0].set_shared_memory(f"in_{protocol}", sizes["in"])
                    outputs = [module.InferRequestedOutput(output["name"])]
                    outputs[0].set_shared_memory(f"out_{protocol}", sizes["out"])
                    client.infer("transformer", inputs, outputs=outputs)
                    return shm.get_contents_as_numpy(handles["out"], np.float32, shape)

                got = shm_call()
                if not np.array_equal(got, want):
                    sys.exit(f"{protocol}: the logits through shared memory differ from the socket's")
                for way, call in (("socket", socket_call), ("shared memory", shm_call)):
                    row = {"protocol": protocol, "way": way, **timed(args.requests, call, process.pid)}
                    results.append(row)
                    print(f"{protocol:5} {way:14} {row['requests_per_s']:7.1f} req/s  "
                          f"p50 {row['p50_ms']:6.2f} ms  p99 {row['p99_ms']:6.2f} ms  "
                          f"CPU per request: client {row['client_cpu_ms']:5.2f} ms, "
                          f"server {row['server_cpu_ms']:6.2f} ms", flush=True)
                client.unregister_system_shared_memory()
            finally:
                for handle in handles.values():
                    shm.destroy_shared_memory_region(handle)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                       "requests": args.requests, "logits_bytes": logits_bytes, "results": results}, f, indent=1)


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    main()
