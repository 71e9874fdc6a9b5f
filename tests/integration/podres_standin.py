#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A kubelet PodResources v1 server made with python3-grpcio, the independent peer for gpulet's client.

Messages come from `protoc --python_out` run on proto/podresources.proto into a temp dir, so the
wire format is judged by Google's protobuf, not by protobuf-c. The pods come from a JSON file read
on every call (tests rewrite it to move devices between pods):
  [{"name": "p", "namespace": "ns", "containers": [{"name": "c",
     "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-..."]}]}]}]
usage: podres_standin.py SOCKET PODS.json [--delay SECONDS] [--ready FILE]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "..", "proto", "podresources.proto")


def load_messages():
    gen = tempfile.mkdtemp(prefix="podres-py-")
    proto_dir = os.path.dirname(os.path.abspath(PROTO))
    subprocess.run(["protoc", "--proto_path=" + proto_dir, "--python_out=" + gen, os.path.abspath(PROTO)],
                   check=True)
    sys.path.insert(0, gen)
    import podresources_pb2  # noqa: E402 (generated just above)
    return podresources_pb2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("pods")
    ap.add_argument("--delay", type=float, default=0.0, help="sleep before answering List (slow kubelet)")
    ap.add_argument("--ready", help="file created once the server listens")
    a = ap.parse_args()
    pb = load_messages()
    calls = {"n": 0}

    def list_pods(request, context):
        calls["n"] += 1
        if a.delay:
            time.sleep(a.delay)
        with open(a.pods) as f:
            pods = json.load(f)
        resp = pb.ListPodResourcesResponse()
        for p in pods:
            pr = resp.pod_resources.add(name=p["name"], namespace=p["namespace"])
            for c in p.get("containers", []):
                cr = pr.containers.add(name=c["name"])
                for d in c.get("devices", []):
                    cr.devices.add(resource_name=d["resource_name"], device_ids=d["device_ids"])
                cr.cpu_ids.extend(c.get("cpu_ids", []))
        return resp

    def allocatable(request, context):
        return pb.AllocatableResourcesResponse()

    handler = grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
        "List": grpc.unary_unary_rpc_method_handler(
            list_pods, request_deserializer=pb.ListPodResourcesRequest.FromString,
            response_serializer=pb.ListPodResourcesResponse.SerializeToString),
        "GetAllocatableResources": grpc.unary_unary_rpc_method_handler(
            allocatable, request_deserializer=pb.AllocatableResourcesRequest.FromString,
            response_serializer=pb.AllocatableResourcesResponse.SerializeToString),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    try:
        os.unlink(a.socket)  # one left by an earlier run; never exists-then-unlink (another may remove it between)
    except FileNotFoundError:
        pass
    server.add_insecure_port("unix://" + a.socket)
    server.start()
    if a.ready:
        with open(a.ready, "w") as f:
            f.write(str(os.getpid()))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(0)
    print("podres_standin: %d List calls" % calls["n"], file=sys.stderr)


if __name__ == "__main__":
    main()
