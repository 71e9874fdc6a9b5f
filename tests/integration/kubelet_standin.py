#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A kubelet stand-in for the device plugin API, written with Debian's python3-grpcio and
python3-protobuf (an implementation of gRPC and protobuf independent of gpulet's C-core +
protobuf-c). It does what kubelet's device manager does on the wire:

  * on start, removes every file in the device-plugin dir except kubelet_internal_checkpoint
    (kubelet does this on restart, which is why plugins must re-register), then serves
    v1beta1.Registration/Register on <dir>/kubelet.sock;
  * on Register, checks the version, dials <dir>/<endpoint>, calls GetDevicePluginOptions and
    keeps a ListAndWatch stream open.

Every event is printed as one JSON line on stdout (time.time() in "t"), so a test that runs this
as a separate process can kill it (kubelet restart) and read what it saw.

usage: kubelet_standin.py DIR
"""
import json
import os
import sys
import threading
import time
from concurrent import futures

import grpc

sys.path.insert(0, os.path.join(os.environ.get("GPULET_BUILD", "build"), "gen", "py"))
import deviceplugin_pb2 as pb  # noqa: E402  (generated at build time by protoc --python_out)

_lock = threading.Lock()


def emit(**ev):
    ev["t"] = time.time()
    with _lock:
        sys.stdout.write(json.dumps(ev, sort_keys=True) + "\n")
        sys.stdout.flush()


def devices_json(resp):
    out = []
    for d in resp.devices:
        out.append({"id": d.ID, "health": d.health,
                    "numa": [n.ID for n in d.topology.nodes] if d.HasField("topology") else None})
    return out


def watch(dirname, req):
    path = "unix:" + os.path.join(dirname, req.endpoint)
    ch = grpc.insecure_channel(path)
    try:
        opts = ch.unary_unary("/v1beta1.DevicePlugin/GetDevicePluginOptions",
                              request_serializer=pb.Empty.SerializeToString,
                              response_deserializer=pb.DevicePluginOptions.FromString)(pb.Empty(), timeout=5)
        emit(event="options", resource=req.resource_name,
             get_preferred_allocation_available=opts.get_preferred_allocation_available,
             pre_start_required=opts.pre_start_required)
        stream = ch.unary_stream("/v1beta1.DevicePlugin/ListAndWatch",
                                 request_serializer=pb.Empty.SerializeToString,
                                 response_deserializer=pb.ListAndWatchResponse.FromString)(pb.Empty())
        for resp in stream:
            emit(event="list", resource=req.resource_name, endpoint=req.endpoint, devices=devices_json(resp))
        emit(event="stream_end", resource=req.resource_name, code="OK")
    except grpc.RpcError as e:
        emit(event="stream_end", resource=req.resource_name, code=e.code().name, details=e.details())
    finally:
        ch.close()


class Registration:
    def __init__(self, dirname):
        self.dirname = dirname

    def register(self, request, context):
        emit(event="register", version=request.version, endpoint=request.endpoint,
             resource=request.resource_name,
             options={"pre_start_required": request.options.pre_start_required,
                      "get_preferred_allocation_available": request.options.get_preferred_allocation_available},
             has_options=request.HasField("options"))
        if request.version != "v1beta1":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unsupported version " + request.version)
        threading.Thread(target=watch, args=(self.dirname, request), daemon=True).start()
        return pb.Empty()


def clear_dir(dirname):
    """What kubelet's device manager does at start: every file but its checkpoint removed. A running
    plugin removes its own sockets too (a stop, a restart): one gone since the listing is what kubelet
    wanted anyway, never an error."""
    for name in os.listdir(dirname):
        if name != "kubelet_internal_checkpoint":
            try:
                os.unlink(os.path.join(dirname, name))
            except FileNotFoundError:
                pass


def main():
    dirname = sys.argv[1]
    os.makedirs(dirname, exist_ok=True)
    clear_dir(dirname)
    reg = Registration(dirname)
    handler = grpc.method_handlers_generic_handler("v1beta1.Registration", {
        "Register": grpc.unary_unary_rpc_method_handler(
            reg.register, request_deserializer=pb.RegisterRequest.FromString,
            response_serializer=pb.Empty.SerializeToString)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("unix:" + os.path.join(dirname, "kubelet.sock"))
    server.start()
    emit(event="listening", socket=os.path.join(dirname, "kubelet.sock"))
    server.wait_for_termination()


if __name__ == "__main__":
    main()
