#!/usr/bin/env python3
"""KServe's own SDK clients (``kserve.InferenceRESTClient``, ``kserve.InferenceGRPCClient``,
protocol v2, from PyPI) against ``pjrt serve``, serving Triton's example model "simple"
(INPUT0 + INPUT1, INPUT0 - INPUT1, int32 [-1, 16]) as ``tools/check_triton_tools.py`` sets it
up; that script runs this one in a process of its own (KServe's SDK and ``tritonclient.grpc``
register the same protobuf names, which one process refuses):

    python tools/check_kserve_sdk.py --http HOST:PORT --grpc HOST:PORT [--not-ready]

Checks health, readiness and inference from numpy (REST as JSON and as binary tensors, gRPC
with the ``binary_data_size`` parameter the SDK sets); with ``--not-ready``, that
``is_server_ready`` reports the server not ready as KServe's SDK does for a 503 (it raises).
Exits non-zero with what failed.
"""

import argparse
import asyncio
import sys

import numpy as np

# kserve parses the command line when imported (its model server's options): ours first, then
# kserve imported with an empty one.
ARGS = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ARGS.add_argument("--http", required=True, help="the server's HTTP address, HOST:PORT")
ARGS.add_argument("--grpc", required=True, help="its gRPC address")
ARGS.add_argument("--not-ready", action="store_true", help="check that the server reports not ready")
OPTIONS = ARGS.parse_args()
sys.argv = sys.argv[:1]

import httpx  # noqa: E402
from kserve import InferenceGRPCClient, InferenceRESTClient, InferInput, InferRequest, RESTConfig  # noqa: E402


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


A = np.arange(32, dtype=np.int32).reshape(2, 16)
B = np.full((2, 16), 7, dtype=np.int32)


def request(binary):
    inputs = [InferInput("INPUT0", [2, 16], "INT32"), InferInput("INPUT1", [2, 16], "INT32")]
    inputs[0].set_data_from_numpy(A, binary_data=binary)
    inputs[1].set_data_from_numpy(B, binary_data=binary)
    return InferRequest(model_name="simple", infer_inputs=inputs)


def check_outputs(response, what):
    got = {o.name: o.as_numpy() for o in response.outputs}
    expect(np.array_equal(got["OUTPUT0"], A + B) and np.array_equal(got["OUTPUT1"], A - B), f"{what}: {got}")


async def ready(http):
    rest = InferenceRESTClient(RESTConfig(protocol="v2"))
    try:
        await rest.is_server_ready(f"http://{http}")
    except httpx.HTTPStatusError as e:
        expect(e.response.status_code == 503, f"is_server_ready: {e}")
        expect(await rest.is_server_live(f"http://{http}") is True, "is_server_live")
        return
    finally:
        await rest.close()
    raise AssertionError("is_server_ready did not report the server not ready")


async def clients(http, grpc):
    rest = InferenceRESTClient(RESTConfig(protocol="v2"))
    base = f"http://{http}"
    try:
        expect(await rest.is_server_live(base) is True, "REST is_server_live")
        expect(await rest.is_server_ready(base) is True, "REST is_server_ready")
        expect(await rest.is_model_ready(base, "simple") is True, "REST is_model_ready")
        expect(await rest.is_model_ready(base, "wrong_model_name") is False, "REST is_model_ready (unknown)")
        for binary in (False, True):
            check_outputs(await rest.infer(base, request(binary), model_name="simple"), f"REST (binary {binary})")
    finally:
        await rest.close()
    client = InferenceGRPCClient(grpc)
    try:
        expect(await client.is_server_live() is True, "gRPC is_server_live")
        expect(await client.is_server_ready() is True, "gRPC is_server_ready")
        expect(await client.is_model_ready("simple") is True, "gRPC is_model_ready")
        check_outputs(await client.infer(request(True)), "gRPC")
    finally:
        await client.close()
    print("KServe SDK: REST (JSON and binary) and gRPC clients: health, readiness and inference as expected")


def main():
    if OPTIONS.not_ready:
        asyncio.run(ready(OPTIONS.http))
    else:
        asyncio.run(clients(OPTIONS.http, OPTIONS.grpc))


if __name__ == "__main__":
    sys.exit(main())
