#!/usr/bin/env python3
"""Triton's and KServe's own tools and clients against ``pjrt serve``, unchanged.

What a Triton or KServe user brings, from PyPI (``tools/serving-clients.txt``, pinned):

- Triton's load tool ``perf_analyzer`` (the binary inside the ``tritonclient`` 2.45.0 wheel) over
  HTTP and gRPC at concurrency 1..4 on Triton's example model "simple" (made by JAX:
  ``add_sub`` of tests/data/jax_export/symbolic, served under Triton's tensor names): each
  reports a throughput, and the server's statistics count its requests.
- ``tritonclient``'s calls for model configuration, statistics and model control with a
  config override, as Triton's example clients (``simple_{http,grpc}_{infer_client,
  health_metadata,model_control}.py`` of triton-inference-server/client) make them, with
  their checks: Triton's wording ("Request for unknown model", "failed to load"), the
  override changing ``max_batch_size``, an unloaded model not ready.
- ``tritonclient.utils.shared_memory`` over HTTP and gRPC (the server started with
  ``--shared-memory``): regions created, filled and registered, "simple" run with its inputs read
  from and its outputs written to them (``get_contents_as_numpy``), the status and unregister
  calls; an output region too small and an input region truncated after registering give
  errors, and the server serves on.
- KServe's SDK clients (``kserve.InferenceRESTClient`` and ``InferenceGRPCClient``, protocol
  v2): health, model readiness and inference from numpy (REST JSON, REST binary, gRPC with
  ``binary_data_size``), by ``tools/check_kserve_sdk.py``.
- Kubernetes' probes: ``grpc.health.v1.Health/Check`` and ``/v2/health/ready``; a server
  whose repository has a model that failed to load is not ready, and says which.
- Prometheus: Triton's metric names (``nv_inference_*``) scraped from ``/metrics``.

Python is only the client: the server is the ``pjrt`` binary. ``.ci/run`` makes the virtual
environments (``python3 -m venv DIR && DIR/bin/pip install -r tools/serving-clients.txt``, and
KSERVE for ``tools/kserve-clients.txt``: their protobuf pins conflict; perf_analyzer also needs
Debian's ``libb64-0d``) and runs:

    DIR/bin/python tools/check_triton_tools.py --pjrt target/debug/pjrt --kserve-python KSERVE/bin/python

It prints what it measured and exits non-zero with the list of what failed.
"""

import argparse
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from importlib.metadata import version

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

DATA = "tests/data/jax_export"
SIMPLE = f"{DATA}/symbolic/jax-0.10.2/add_sub/model.jaxexport"
MLP = f"{DATA}/jax-0.10.2/mlp_f32/model.jaxexport"

# Triton's example model "simple": INPUT0 + INPUT1 and INPUT0 - INPUT1, int32 [-1, 16], at most
# 8 rows a request (Triton's config.pbtxt of it says max_batch_size: 8).
SIMPLE_CONFIG = {
    "inputs": ["INPUT0", "INPUT1"],
    "outputs": ["OUTPUT0", "OUTPUT1"],
    "batching": {"batch_independent": True, "max_batch_size": 8},
}

FAILURES = []
# The interpreter tools/check_kserve_sdk.py runs in (--kserve-python).
KSERVE_PYTHON = sys.executable


def check(name):
    """Runs the decorated check at once, recording (not raising) its failure."""

    def run(function):
        try:
            function()
            print(f"ok   {name}")
        except Exception as e:  # noqa: BLE001 (every failure is reported, then the next check runs)
            FAILURES.append(f"{name}: {type(e).__name__}: {e}")
            print(f"FAIL {name}: {type(e).__name__}: {e}")
        return function

    return run


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def raises(function, *words):
    """The exception `function` raises, which must contain each of `words`."""
    try:
        function()
    except Exception as e:  # noqa: BLE001
        text = e.message() if isinstance(e, InferenceServerException) else str(e)
        for word in words:
            expect(word in text, f"{text!r} does not say {word!r}")
        return e
    raise AssertionError(f"no error; expected one saying {words}")


class Server:
    """`pjrt serve REPOSITORY` on free ports, until stopped."""

    def __init__(self, pjrt, repository, scratch, *extra):
        env = dict(os.environ, PJRT_CACHE_DIR=os.path.join(scratch, "cache"))
        command = [pjrt, "serve", repository, "--port", "0", "--grpc-port", "0", *extra]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        line = self.process.stdout.readline()
        if "http://" not in line:
            self.process.kill()
            sys.exit(f"pjrt serve did not start: {line!r}\n{self.process.stderr.read()}")
        self.url = line.split("http://", 1)[1].split()[0]
        self.grpc_url = line.split("grpc://", 1)[1].split()[0]

    def get(self, path):
        """(status, content type, body) of GET `path`."""
        try:
            with urllib.request.urlopen(f"http://{self.url}{path}") as r:
                return r.status, r.headers.get("content-type"), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("content-type"), e.read()

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def grpc_health(target, service=""):
    """grpc.health.v1.Health/Check's status (1 SERVING, 2 NOT_SERVING), or the RpcError's code.
    The two messages are encoded by hand: a string field 1, an enum field 1."""
    with grpc.insecure_channel(target) as channel:
        check_call = channel.unary_unary(
            "/grpc.health.v1.Health/Check", request_serializer=lambda b: b, response_deserializer=lambda b: b
        )
        name = service.encode()
        request = b"\x0a" + bytes([len(name)]) + name if name else b""
        try:
            answer = check_call(request, timeout=10)
        except grpc.RpcError as e:
            return e.code()
        expect(answer[:1] in (b"", b"\x08"), f"a HealthCheckResponse, not {answer!r}")
        return answer[1] if answer else 0


def simple_inputs(module, rows=1):
    a = np.arange(16 * rows, dtype=np.int32).reshape(rows, 16)
    b = np.full((rows, 16), -1, dtype=np.int32)
    inputs = [module.InferInput("INPUT0", [rows, 16], "INT32"), module.InferInput("INPUT1", [rows, 16], "INT32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return a, b, inputs


def kserve_sdk(server, *extra):
    """tools/check_kserve_sdk.py against the server: in a process of its own (KServe's SDK and
    tritonclient.grpc register the same protobuf names, which one process refuses)."""
    run = subprocess.run([KSERVE_PYTHON, "tools/check_kserve_sdk.py", "--http", server.url, "--grpc",
                          server.grpc_url, *extra], capture_output=True, text=True, timeout=120)
    expect(run.returncode == 0, f"exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")


def perf_analyzer(server, protocol, scratch):
    """perf_analyzer at concurrency 1..4: the inferences per second at each."""
    binary = shutil.which("perf_analyzer", path=os.path.dirname(sys.executable))
    expect(binary, "perf_analyzer is not in the virtual environment (tritonclient 2.45.0 ships it)")
    report = os.path.join(scratch, f"perf-{protocol}.csv")
    url = server.url if protocol == "http" else server.grpc_url
    command = [binary, "-m", "simple", "-u", url, "-i", protocol, "--concurrency-range", "1:4",
               "--measurement-mode", "count_windows", "--measurement-request-count", "100",
               "--stability-percentage", "50", "--max-trials", "10", "-f", report]
    # It loads libcudart.so.12 even on a CPU-only machine: the CUDA runtime wheel's.
    import nvidia.cuda_runtime

    cudart = os.path.join(list(nvidia.cuda_runtime.__path__)[0], "lib")
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(filter(None, [cudart, os.environ.get("LD_LIBRARY_PATH")])))
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    expect(run.returncode == 0, f"perf_analyzer exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    with open(report) as f:
        rows = list(csv.DictReader(f))
    throughput = {int(r["Concurrency"]): float(r["Inferences/Second"]) for r in rows}
    expect(sorted(throughput) == [1, 2, 3, 4] and all(t > 0 for t in throughput.values()), f"{throughput}")
    latency = {int(r["Concurrency"]): float(r["p99 latency"]) / 1000 for r in rows}
    print(f"     perf_analyzer {protocol}: " + ", ".join(
        f"c={c}: {throughput[c]:.0f} infer/s (p99 {latency[c]:.2f} ms)" for c in sorted(throughput)))
    return throughput


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pjrt", required=True, help="the pjrt binary")
    parser.add_argument("--kserve-python", default=sys.executable,
                        help="the Python of a virtual environment with KServe's SDK (tools/kserve-clients.txt)")
    args = parser.parse_args()
    global KSERVE_PYTHON
    KSERVE_PYTHON = args.kserve_python
    pjrt = os.path.abspath(args.pjrt)
    scratch = tempfile.mkdtemp(prefix="triton-tools-check-")
    repository = os.path.join(scratch, "models")
    os.makedirs(os.path.join(repository, "simple"))
    shutil.copy(SIMPLE, os.path.join(repository, "simple", "model.jaxexport"))
    with open(os.path.join(repository, "simple", "config.json"), "w") as f:
        json.dump(SIMPLE_CONFIG, f)
    os.makedirs(os.path.join(repository, "mlp"))
    shutil.copy(MLP, os.path.join(repository, "mlp", "model.jaxexport"))
    kserve = subprocess.run([KSERVE_PYTHON, "-c", "from importlib.metadata import version; print(version('kserve'))"],
                            capture_output=True, text=True).stdout.strip()
    print(f"tritonclient {version('tritonclient')}, grpcio {version('grpcio')}, protobuf {version('protobuf')}; "
          f"kserve {kserve or 'missing'} (in {KSERVE_PYTHON})")

    server = Server(pjrt, repository, scratch, "--model-control", "explicit", "--shared-memory")
    try:
        checks(server, scratch)
    finally:
        server.stop()

    # A repository with a model that does not load: the server runs, but is not ready.
    os.makedirs(os.path.join(repository, "broken"))
    with open(os.path.join(repository, "broken", "model.jaxexport"), "wb") as f:
        f.write(b"not a jax.export file")
    server = Server(pjrt, repository, scratch)
    try:
        not_ready_checks(server)
    finally:
        server.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} checks failed:\n" + "\n".join(FAILURES))
    print("every check passed")


def checks(server, scratch):
    http = httpclient.InferenceServerClient(url=server.url)
    grpc_client = grpcclient.InferenceServerClient(url=server.grpc_url)

    @check("health: JSON bodies (KServe), tritonclient live and ready, gRPC health SERVING")
    def _():
        for path, body in (("/v2/health/live", {"live": True}), ("/v2/health/ready", {"ready": True})):
            status, content_type, text = server.get(path)
            expect(status == 200 and json.loads(text) == body, f"{path}: {status} {text!r}")
            expect(content_type.startswith("application/json"), f"{path}: {content_type}")
        # (simple_http_health_metadata.py passes query parameters to the health call.)
        expect(http.is_server_live(query_params={"test_1": 1, "test_2": 2}) and http.is_server_ready(), "HTTP")
        expect(grpc_client.is_server_live() and grpc_client.is_server_ready(), "gRPC")
        expect(http.is_model_ready("simple") and grpc_client.is_model_ready("simple"), "model ready")
        expect(grpc_health(server.grpc_url) == 1, "Health/Check of the server")
        expect(grpc_health(server.grpc_url, "inference.GRPCInferenceService") == 1, "Health/Check of the service")
        expect(grpc_health(server.grpc_url, "no.such.Service") == grpc.StatusCode.NOT_FOUND, "unknown service")

    @check("unknown models answered in Triton's words")
    def _():
        raises(lambda: http.get_model_metadata("wrong_model_name"), "Request for unknown model")
        raises(lambda: grpc_client.get_model_metadata("wrong_model_name"), "Request for unknown model")

    @check("model configuration (HTTP and gRPC), as perf_analyzer and Triton's clients read it")
    def _():
        config = http.get_model_config("simple")
        expect(config["name"] == "simple" and config["max_batch_size"] == 8, config)
        inputs = {i["name"]: i for i in config["input"]}
        expect(sorted(inputs) == ["INPUT0", "INPUT1"], config)
        expect(inputs["INPUT0"]["data_type"] == "TYPE_INT32" and list(map(int, inputs["INPUT0"]["dims"])) == [16],
               config)
        expect(sorted(o["name"] for o in config["output"]) == ["OUTPUT0", "OUTPUT1"], config)
        over_grpc = grpc_client.get_model_config("simple", as_json=True)["config"]
        expect(over_grpc["name"] == "simple" and int(over_grpc["max_batch_size"]) == 8, over_grpc)
        expect([int(d) for d in over_grpc["input"][0]["dims"]] == [16], over_grpc)
        mlp = http.get_model_config("mlp")
        expect(mlp["max_batch_size"] == 0, mlp)

    @check("inference as simple_{http,grpc}_infer_client.py makes it (binary and JSON outputs)")
    def _():
        a, b, inputs = simple_inputs(httpclient)
        outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
                   httpclient.InferRequestedOutput("OUTPUT1", binary_data=False)]
        result = http.infer("simple", inputs, outputs=outputs)
        expect(np.array_equal(result.as_numpy("OUTPUT0"), a + b), "OUTPUT0")
        expect(np.array_equal(result.as_numpy("OUTPUT1"), a - b), "OUTPUT1")
        a, b, inputs = simple_inputs(grpcclient, rows=3)
        result = grpc_client.infer("simple", inputs)
        expect(np.array_equal(result.as_numpy("OUTPUT0"), a + b), "gRPC OUTPUT0")
        expect(np.array_equal(result.as_numpy("OUTPUT1"), a - b), "gRPC OUTPUT1")

    @check("statistics (HTTP and gRPC) count the requests")
    def _():
        stats = http.get_inference_statistics("simple")
        expect(len(stats["model_stats"]) == 1, stats)
        model = stats["model_stats"][0]
        success = model["inference_stats"]["success"]
        expect(model["name"] == "simple" and success["count"] >= 2 and success["ns"] > 0, model)
        expect(model["inference_count"] >= 4 and model["last_inference"] > 0, model)
        over_grpc = grpc_client.get_inference_statistics("simple", as_json=True)["model_stats"][0]
        expect(int(over_grpc["inference_stats"]["success"]["count"]) >= 2, over_grpc)
        expect(len(http.get_inference_statistics()["model_stats"]) >= 2, "every model's")

    throughputs = {}
    for protocol in ("http", "grpc"):
        @check(f"perf_analyzer over {protocol}, concurrency 1..4")
        def _():
            before = http.get_inference_statistics("simple")["model_stats"][0]["inference_stats"]["success"]["count"]
            throughputs[protocol] = perf_analyzer(server, protocol, scratch)
            after = http.get_inference_statistics("simple")["model_stats"][0]["inference_stats"]["success"]["count"]
            expect(after - before >= 400, f"the statistics counted {after - before} requests of perf_analyzer's")

    @check("metrics: Triton's names and labels")
    def _():
        status, _, text = server.get("/metrics")
        expect(status == 200, status)
        values = {}
        for line in text.decode().splitlines():
            if line.startswith("nv_") and 'model="simple"' in line:
                name, value = line.rsplit(" ", 1)
                values[name.split("{", 1)[0]] = float(value)
        for name in ("nv_inference_request_success", "nv_inference_count", "nv_inference_exec_count",
                     "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                     "nv_inference_compute_input_duration_us", "nv_inference_compute_infer_duration_us",
                     "nv_inference_compute_output_duration_us"):
            expect(values.get(name, 0) > 0, f"{name}: {values.get(name)}")
        expect("nv_inference_request_failure" in values and "nv_inference_pending_request_count" in values, values)
        expect('version="1"' in text.decode(), "the version label")

    @check("model control as simple_{http,grpc}_model_control.py makes it")
    def _():
        index = http.get_model_repository_index()
        expect(sorted(m["name"] for m in index) == ["mlp", "simple"], index)
        for client in (http, grpc_client):
            client.load_model("simple")
            expect(client.is_model_ready("simple"), "loaded")
            # The override in the wrong format, then in the right one (Triton's field names and
            # JSON's int64 strings).
            raises(lambda: client.load_model("simple", config='"parameters": {"config": {{"max_batch_size": "16"}}}'),
                   "failed to load")
            client.load_model("simple", config='{"max_batch_size":"16"}')
            config = client.get_model_config("simple")
            max_batch_size = config["max_batch_size"] if client is http else config.config.max_batch_size
            expect(max_batch_size == 16, f"max_batch_size {max_batch_size} after the override")
            raises(lambda: client.load_model("simple", config="{}", files={"file:1/model.jaxexport": b"x"}),
                   "file:")
            client.unload_model("simple")
            expect(not client.is_model_ready("simple"), "unloaded")
            state = {m["name"]: m for m in http.get_model_repository_index()}["simple"]
            expect(state["state"] == "UNAVAILABLE", state)
            raises(lambda: client.load_model("wrong_model_name"), "failed to load")
            expect(client.is_server_live(), "live after the refused loads")
        http.load_model("simple")

    for module, client in ((httpclient, http), (grpcclient, grpc_client)):
        @check(f"system shared memory over {module.__name__.split('.')[-1]}: inputs and outputs in regions")
        def _():
            shared_memory_checks(module, client)

    @check("KServe's SDK: REST and gRPC clients (health, readiness, inference from numpy)")
    def _():
        kserve_sdk(server)


def shared_memory_checks(module, client):
    """"simple" with its inputs read from a region and its outputs written to another, as
    Triton's simple_{http,grpc}_shm_client.py makes it; then the errors."""
    protocol = module.__name__.split(".")[-1]
    keys = {"in": f"/pjrt_check_in_{protocol}_{os.getpid()}", "out": f"/pjrt_check_out_{protocol}_{os.getpid()}"}
    names = {k: f"{k}_{protocol}" for k in keys}
    size = 16 * 4  # one INT32 row of 16
    handles = {k: shm.create_shared_memory_region(names[k], keys[k], 2 * size) for k in keys}
    try:
        a = np.arange(16, dtype=np.int32).reshape(1, 16)
        b = np.full((1, 16), -1, dtype=np.int32)
        shm.set_shared_memory_region(handles["in"], [a])
        shm.set_shared_memory_region(handles["in"], [b], offset=size)
        client.unregister_system_shared_memory()
        for k in keys:
            client.register_system_shared_memory(names[k], keys[k], 2 * size)
        status = client.get_system_shared_memory_status()
        if module is grpcclient:
            status = list(client.get_system_shared_memory_status(as_json=True)["regions"].values())
        expect(sorted(r["name"] for r in status) == sorted(names.values()), status)
        expect({r["key"] for r in status} == set(keys.values()), status)

        def request(out_room=size):
            inputs = [module.InferInput("INPUT0", [1, 16], "INT32"), module.InferInput("INPUT1", [1, 16], "INT32")]
            inputs[0].set_shared_memory(names["in"], size)
            inputs[1].set_shared_memory(names["in"], size, offset=size)
            outputs = [module.InferRequestedOutput("OUTPUT0"), module.InferRequestedOutput("OUTPUT1")]
            outputs[0].set_shared_memory(names["out"], out_room)
            outputs[1].set_shared_memory(names["out"], out_room, offset=size)
            return inputs, outputs

        inputs, outputs = request()
        result = client.infer("simple", inputs, outputs=outputs)
        expect(result.get_output("OUTPUT0") is not None, "OUTPUT0 listed in the answer")
        out0 = shm.get_contents_as_numpy(handles["out"], np.int32, [1, 16])
        out1 = shm.get_contents_as_numpy(handles["out"], np.int32, [1, 16], offset=size)
        expect(np.array_equal(out0, a + b), f"OUTPUT0 in shared memory: {out0}")
        expect(np.array_equal(out1, a - b), f"OUTPUT1 in shared memory: {out1}")

        # An output region too small, an unknown region, then the input object truncated after
        # it was registered: errors, and the server serves on.
        inputs, outputs = request(out_room=8)
        raises(lambda: client.infer("simple", inputs, outputs=outputs), "should be at least")
        raises(lambda: client.register_system_shared_memory(names["in"], keys["in"], size), "already in manager")
        os.truncate(f"/dev/shm/{keys['in'].lstrip('/')}", 4)
        inputs, outputs = request()
        raises(lambda: client.infer("simple", inputs, outputs=outputs), "truncated")
        expect(client.is_server_live(), "live after a truncated region")
        client.unregister_system_shared_memory(names["in"])
        inputs, outputs = request()
        raises(lambda: client.infer("simple", inputs, outputs=outputs), "Unable to find shared memory region")
        client.unregister_system_shared_memory()
        status = client.get_system_shared_memory_status()
        if module is grpcclient:
            status = client.get_system_shared_memory_status(as_json=True).get("regions", {})
        expect(len(status) == 0, f"regions left after unregistering all: {status}")
    finally:
        for handle in handles.values():
            shm.destroy_shared_memory_region(handle)


def not_ready_checks(server):
    http = httpclient.InferenceServerClient(url=server.url)
    grpc_client = grpcclient.InferenceServerClient(url=server.grpc_url)

    @check("a model that failed to load: the server is live but not ready, and says why")
    def _():
        status, _, text = server.get("/v2/health/ready")
        expect(status == 503 and json.loads(text)["ready"] is False, f"{status} {text!r}")
        expect(http.is_server_live() and not http.is_server_ready(), "HTTP")
        expect(grpc_client.is_server_live() and not grpc_client.is_server_ready(), "gRPC")
        expect(grpc_health(server.grpc_url) == 2, "Health/Check NOT_SERVING")
        expect(http.is_model_ready("mlp") and not http.is_model_ready("broken"), "model readiness")
        state = {m["name"]: m for m in http.get_model_repository_index()}["broken"]
        expect(state["state"] == "UNAVAILABLE" and state.get("reason"), state)
        kserve_sdk(server, "--not-ready")


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    main()
