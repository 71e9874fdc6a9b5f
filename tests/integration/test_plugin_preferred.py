#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""GetPreferredAllocation through the plugin socket (policy: src/plugin/alloc.c, reference §7):
NVLink-aware choice on the pcie-4gpu fixture (best pair {0,1}; with 2 required, {2,3}), and
--shared-devices-allocation-policy distributed vs packed for time-slicing replicas."""
import os

import grpc

from plugin_lib import check, pb, run


def preferred(h, available, must, size):
    req = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
        available_deviceIDs=available, must_include_deviceIDs=must, allocation_size=size)])
    r = h.call("nvidia.com/gpu", "GetPreferredAllocation", req, pb.PreferredAllocationResponse)
    check(len(r.container_responses) == 1, "responses %r" % r)
    return list(r.container_responses[0].deviceIDs)


def test_preferred_topology(h):
    g = [x["uuid"] for x in h.fixture_data()["gpus"]]
    h.start_standin()
    h.start_plugin()
    got = preferred(h, [g[3], g[2], g[1], g[0]], [], 2)
    check(sorted(got) == sorted([g[0], g[1]]), "best NVLink pair {0,1}, got %r" % got)
    got = preferred(h, g, [g[2]], 2)
    check(sorted(got) == sorted([g[2], g[3]]), "with GPU 2 required: {2,3}, got %r" % got)
    try:
        preferred(h, g[:2], [], 3)
        check(False, "size above the available devices accepted")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "status %s" % e.code())
    h.check_alive()


test_preferred_topology.harness_args = {"fixture": "pcie-4gpu"}


def test_preferred_replicas(h):
    g = [x["uuid"] for x in h.fixture_data()["gpus"]]
    cfg = os.path.join(h.tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
    h.start_standin()
    avail = ["%s::%d" % (u, k) for u in g for k in range(4)]
    for policy, distinct in (("distributed", 2), ("packed", 1)):
        if h.plugin:
            h.stop_plugin()
        h.start_plugin("--config-file", cfg, "--shared-devices-allocation-policy=" + policy)
        got = preferred(h, avail, [], 2)
        gpus = {x.split("::")[0] for x in got}
        check(len(got) == 2 and set(got) <= set(avail) and len(gpus) == distinct,
              "%s: %r spans %d GPUs, expected %d" % (policy, got, len(gpus), distinct))


test_preferred_replicas.harness_args = {"fixture": "pcie-4gpu"}

if __name__ == "__main__":
    run(test_preferred_topology)
    run(test_preferred_replicas)
