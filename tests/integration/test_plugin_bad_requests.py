#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Bad requests get INVALID_ARGUMENT naming the IDs -- never a crash, never a silent success:
unknown IDs, IDs of another resource, an empty container request, no container requests,
garbage bytes, and more than one replica with failRequestsGreaterThanOne. The daemon keeps
serving afterwards. Also GetPreferredAllocation's contract (size, must-include first)."""
import os
import re
import time

import grpc

from plugin_lib import check, pb, run


def invalid(h, resource, *containers, must=()):
    e = h.allocate_error(resource, *containers)
    check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "status %s (%s)" % (e.code(), e.details()))
    for word in must:
        check(word in e.details(), "error %r does not name %r" % (e.details(), word))
    return e.details()


def test_bad_requests(h):
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"] if not x.get("mig_mode")]
    mig = fx["gpus"][6]["mig"][0]["cis"][0]["uuid"]
    h.start_standin()
    h.start_plugin("--mig-strategy=mixed", wait_resources=("nvidia.com/gpu",))

    invalid(h, "nvidia.com/gpu", [g[0], "GPU-nope-1", "GPU-nope-2"], must=("GPU-nope-1", "GPU-nope-2", "unknown"))
    invalid(h, "nvidia.com/gpu", [mig], must=(mig,))  # a MIG device is not a nvidia.com/gpu
    invalid(h, "nvidia.com/gpu", [g[0]], [], must=("no device IDs",))
    invalid(h, "nvidia.com/gpu", must=("no container requests",))
    try:
        h.call("nvidia.com/gpu", "Allocate", b"\xff\xff\xff garbage", pb.AllocateResponse)
        check(False, "garbage accepted")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "garbage: %s" % e.code())
    h.check_alive()
    r = h.allocate("nvidia.com/gpu", [g[1]])
    check(dict(r.container_responses[0].envs)["NVIDIA_VISIBLE_DEVICES"] == g[1], "good request after bad ones")
    h.wait_log(r'msg="request rejected" resource=nvidia\.com/gpu method=Allocate status=3 .*GPU-nope-1')

    # GetPreferredAllocation: must-include first, then up to the size; too few -> INVALID_ARGUMENT
    req = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
        available_deviceIDs=g[:4], must_include_deviceIDs=[g[2]], allocation_size=2)])
    r = h.call("nvidia.com/gpu", "GetPreferredAllocation", req, pb.PreferredAllocationResponse)
    ids = list(r.container_responses[0].deviceIDs)
    check(len(ids) == 2 and ids[0] == g[2] and len(set(ids)) == 2 and set(ids) <= set(g[:4]), "preferred %r" % ids)
    req.container_requests[0].allocation_size = 9
    try:
        h.call("nvidia.com/gpu", "GetPreferredAllocation", req, pb.PreferredAllocationResponse)
        check(False, "oversized preferred allocation accepted")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "preferred too big: %s" % e.code())
    h.check_alive()


def test_fail_requests_greater_than_one(h):
    g = [x["uuid"] for x in h.fixture_data()["gpus"]]
    cfg = os.path.join(h.tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n"
                "    - name: nvidia.com/gpu\n      replicas: 2\n")
    h.start_standin()
    h.start_plugin("--config-file", cfg)
    ids = [g[0] + "::0", g[1] + "::1"]
    invalid(h, "nvidia.com/gpu", ids, must=("maximum request size for shared resources is 1; found 2",) + tuple(ids))
    r = h.allocate("nvidia.com/gpu", [g[1] + "::1"])
    check(dict(r.container_responses[0].envs)["NVIDIA_VISIBLE_DEVICES"] == g[1], "one replica is fine")
    h.check_alive()


def test_rejects_rate_limited(h):
    """Soak finding F8: a client retrying a bad Allocate gets one log line per second per resource,
    the next line counts the suppressed ones."""
    h.start_standin()
    h.start_plugin()
    t0 = time.time()
    n = 0
    while time.time() - t0 < 1.5:
        try:
            h.allocate("nvidia.com/gpu", ["GPU-nope-%d" % n])
        except grpc.RpcError as e:
            check(e.code() == grpc.StatusCode.INVALID_ARGUMENT, "bad Allocate: %s" % e.code())
        n += 1
    elapsed = time.time() - t0
    time.sleep(1.1)
    try:
        h.allocate("nvidia.com/gpu", ["GPU-nope-last"])
    except grpc.RpcError:
        pass
    h.wait_log(r'msg="request rejected" [^\n]*GPU-nope-last[^\n]*')
    lines = re.findall(r'msg="request rejected"[^\n]*suppressed=(\d+)', h.log_text())
    check(n > 20, "only %d requests in %.1fs" % (n, elapsed))
    check(2 <= len(lines) <= int(elapsed) + 3, "%d log lines for %d rejected requests" % (len(lines), n + 1))
    check(sum(int(x) for x in lines) + len(lines) == n + 1, "suppressed counts %r do not add up to %d" % (lines, n + 1))
    check(lines[0] == "0", "the first rejection is logged at once: %r" % lines)
    h.check_alive()


if __name__ == "__main__":
    run(test_bad_requests)
    run(test_fail_requests_greater_than_one)
    run(test_rejects_rate_limited)
