#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kubelet's side of the DRA plugin protocol, with Debian's python3-grpcio and python3-protobuf (an
implementation of gRPC and protobuf independent of gpulet's C-core + protobuf-c), as kubelet's plugin
watcher and DRA manager call a driver (docs/reference/dra.md §2, §3):

  * GetInfo / NotifyRegistrationStatus on <registry dir>/<driver>-reg.sock
    (/pluginregistration.Registration/...);
  * NodePrepareResources / NodeUnprepareResources on the endpoint GetInfo names, v1 or v1beta1
    (/k8s.io.kubelet.pkg.apis.dra.<version>.DRAPlugin/...), with the messages compiled from
    proto/dra.proto (the v1beta1 module is the same file under the v1beta1 package).

Library use (tests import it) or the command line, printing one JSON document:

    dra_standin.py info REG_SOCK
    dra_standin.py notify REG_SOCK true|false [ERROR]
    dra_standin.py prepare|unprepare SOCK v1|v1beta1 '[{"namespace": "ns", "name": "c", "uid": "u"}]'
    dra_standin.py health SOCK [N]     the first N messages of the NodeWatchResources stream (kubelet's
                                       ResourceHealthStatus gate: /v1alpha1.DRAResourceHealth/...)
"""
import json
import os
import sys

import grpc

sys.path.insert(0, os.path.join(os.environ.get("GPULET_BUILD", "build"), "gen", "py"))
import dra_pb2  # noqa: E402  (generated at build time by protoc --python_out)
import dra_v1beta1_pb2  # noqa: E402
import dra_health_pb2  # noqa: E402
import pluginregistration_pb2 as reg_pb  # noqa: E402

PB = {"v1": dra_pb2, "v1beta1": dra_v1beta1_pb2}
PACKAGE = {"v1": "k8s.io.kubelet.pkg.apis.dra.v1", "v1beta1": "k8s.io.kubelet.pkg.apis.dra.v1beta1"}
TIMEOUT = 45  # kubelet's defaultClientCallTimeout (pkg/kubelet/cm/dra/plugin/dra_plugin.go)


def _call(sock, method, req, resp_cls, timeout=TIMEOUT):
    with grpc.insecure_channel("unix:" + sock) as ch:
        return ch.unary_unary(method, request_serializer=type(req).SerializeToString,
                              response_deserializer=resp_cls.FromString)(req, timeout=timeout)


def info(reg_sock):
    r = _call(reg_sock, "/pluginregistration.Registration/GetInfo", reg_pb.InfoRequest(), reg_pb.PluginInfo)
    return {"type": r.type, "name": r.name, "endpoint": r.endpoint, "supported_versions": list(r.supported_versions)}


def notify(reg_sock, registered, error=""):
    _call(reg_sock, "/pluginregistration.Registration/NotifyRegistrationStatus",
          reg_pb.RegistrationStatus(plugin_registered=registered, error=error), reg_pb.RegistrationStatusResponse)
    return {}


def _claims(pb, claims):
    return [pb.Claim(namespace=c.get("namespace", ""), name=c.get("name", ""), uid=c.get("uid", "")) for c in claims]


def prepare(sock, version, claims, timeout=TIMEOUT):
    pb = PB[version]
    r = _call(sock, "/%s.DRAPlugin/NodePrepareResources" % PACKAGE[version],
              pb.NodePrepareResourcesRequest(claims=_claims(pb, claims)), pb.NodePrepareResourcesResponse, timeout)
    return {uid: {"error": one.error,
                  "devices": [{"request_names": list(d.request_names), "pool_name": d.pool_name,
                               "device_name": d.device_name, "cdi_device_ids": list(d.cdi_device_ids)}
                              for d in one.devices]}
            for uid, one in r.claims.items()}


def unprepare(sock, version, claims, timeout=TIMEOUT):
    pb = PB[version]
    r = _call(sock, "/%s.DRAPlugin/NodeUnprepareResources" % PACKAGE[version],
              pb.NodeUnprepareResourcesRequest(claims=_claims(pb, claims)), pb.NodeUnprepareResourcesResponse,
              timeout)
    return {uid: {"error": one.error} for uid, one in r.claims.items()}


HEALTH = {0: "UNKNOWN", 1: "HEALTHY", 2: "UNHEALTHY"}


def health(sock, messages=1, timeout=TIMEOUT, each=None):
    """The first `messages` lists the stream sends, each {pool/device: health}; each(i) is called after
    message i arrived (to change something the next message must show)."""
    out = []
    with grpc.insecure_channel("unix:" + sock) as ch:
        stream = ch.unary_stream("/v1alpha1.DRAResourceHealth/NodeWatchResources",
                                 request_serializer=dra_health_pb2.NodeWatchResourcesRequest.SerializeToString,
                                 response_deserializer=dra_health_pb2.NodeWatchResourcesResponse.FromString)(
            dra_health_pb2.NodeWatchResourcesRequest(), timeout=timeout)
        for m in stream:
            out.append({"%s/%s" % (d.device.pool_name, d.device.device_name): HEALTH[d.health] for d in m.devices})
            if each:
                each(len(out) - 1)
            if len(out) == messages:
                stream.cancel()
                break
    return out


def main(argv):
    try:
        if argv[1] == "info":
            out = info(argv[2])
        elif argv[1] == "notify":
            out = notify(argv[2], argv[3] == "true", argv[4] if len(argv) > 4 else "")
        elif argv[1] == "health":
            out = health(argv[2], int(argv[3]) if len(argv) > 3 else 1)
        elif argv[1] in ("prepare", "unprepare"):
            out = globals()[argv[1]](argv[2], argv[3], json.loads(argv[4]))
        else:
            sys.stderr.write(__doc__)
            return 2
    except grpc.RpcError as e:
        out = {"rpc_error": e.code().name, "details": e.details()}
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
