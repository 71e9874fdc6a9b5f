#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Health and MIG end to end: `gpulet plugin` on the fake NVML, python3-grpcio as the kubelet.

  * a GPU lost while the plugin runs (the fake answers GPU_IS_LOST for it): ListAndWatch marks it
    Unhealthy and only it; Allocate and GetPreferredAllocation keep serving the other GPUs and the
    preferred allocation never contains the lost one even when kubelet still offers it (#2038);
  * a MIG re-partition (mixed strategy): the new profile's resource server is started and
    registered, its ListAndWatch lists the new MIG device, without restarting the process
    (#240, #389, #992); the time from the change to the new list is printed;
  * topology choice on the dgx-a100 fixture: every pair has 12 NVLinks through NVSwitch, so the PCIe
    path decides (pairs on one PCIe switch, then the same NUMA node), also with a GPU lost.
"""
import time

from plugin_lib import check, pb, run


def preferred(h, resource, available, size, must=()):
    req = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
        available_deviceIDs=list(available), must_include_deviceIDs=list(must), allocation_size=size)])
    resp = h.call(resource, "GetPreferredAllocation", req, pb.PreferredAllocationResponse)
    return list(resp.container_responses[0].deviceIDs)


def test_lost_gpu_keeps_serving(h):
    fx = h.fixture_data()
    uuids = [g["uuid"] for g in fx["gpus"]]
    h.start_standin()
    mark = h.start_plugin("--rescan-interval", "1")
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 8 and all(x["health"] == "Healthy" for x in d))

    lost = uuids[2]
    fx["gpus"][2]["lost"] = True
    mark = h.events.mark()
    t0 = time.time()
    h.write_fixture(fx)
    ev = h.wait_list("nvidia.com/gpu", start=mark, timeout=15,
                     pred=lambda d: any(x["id"] == lost and x["health"] == "Unhealthy" for x in d))
    print("# lost GPU to ListAndWatch Unhealthy: %.0f ms (rescan interval 1 s)" % ((ev["t"] - t0) * 1000))
    health = {x["id"]: x["health"] for x in ev["devices"]}
    check(set(health) == set(uuids), "the lost GPU must stay listed (capacity), got %s" % sorted(health))
    check(all(health[u] == "Healthy" for u in uuids if u != lost), "only the lost GPU is unhealthy: %s" % health)
    h.wait_log(r'msg="unhealthy device" .*uuid=%s index=2 ' % lost)

    # kubelet offers the healthy GPUs: allocation works
    healthy = [u for u in uuids if u != lost]
    got = preferred(h, "nvidia.com/gpu", healthy, 2)
    check(len(got) == 2 and set(got) <= set(healthy), "preferred %s" % got)
    resp = h.allocate("nvidia.com/gpu", got)
    envs = dict(resp.container_responses[0].envs)
    check(sorted(envs.get("NVIDIA_VISIBLE_DEVICES", "").split(",")) == sorted(got), "Allocate envs %s" % envs)
    # kubelet may still offer the lost GPU in a race: the preference skips it while others remain
    got = preferred(h, "nvidia.com/gpu", uuids, 4)
    check(len(got) == 4 and lost not in got, "preferred with the lost GPU offered: %s" % got)
    h.check_alive()


def test_mig_repartition_live(h):
    fx = h.fixture_data()
    h.start_standin()
    mark = h.start_plugin("--mig-strategy", "mixed", "--rescan-interval", "1",
                          wait_resources=("nvidia.com/gpu", "nvidia.com/mig-3g.20gb"))
    pid = h.plugin.pid
    # GPU 6: 3g.20gb + 2g.10gb + 2x 1g.5gb  ->  one 7g.40gb
    new_uuid = "MIG-7e7e7e7e-1001-5001-8001-a100c0de0777"
    gpu6 = fx["gpus"][6]
    check(gpu6.get("mig_mode") == 1, "fixture GPU 6 is expected to have MIG on")
    gpu6["mig"] = [{"gi": 0, "gi_profile": 4, "placement": [0, 8],
                    "cis": [{"ci": 0, "uuid": new_uuid, "profile_name": "7g.40gb"}]}]
    mark = h.events.mark()
    t0 = time.time()
    h.write_fixture(fx)
    ev = h.wait_list("nvidia.com/mig-7g.40gb", start=mark, timeout=20)
    print("# MIG re-partition to re-advertised ListAndWatch: %.0f ms (rescan interval 1 s)" % ((ev["t"] - t0) * 1000))
    check([d["id"] for d in ev["devices"]] == [new_uuid], "7g.40gb list %s" % ev["devices"])
    regs = [e for e in h.events.items[mark:] if e["event"] == "register" and e["resource"] == "nvidia.com/mig-7g.40gb"]
    check(regs and regs[0]["endpoint"] == "nvidia-mig-7g.40gb.sock", "registration %s" % regs)
    # the 1g.5gb resource now only has GPU 7's instance
    gpu7 = [ci["uuid"] for gi in fx["gpus"][7]["mig"] for ci in gi["cis"] if ci["profile_name"] == "1g.5gb"]
    h.wait_list("nvidia.com/mig-1g.5gb", start=mark, pred=lambda d: sorted(x["id"] for x in d) == sorted(gpu7))
    check(h.plugin.pid == pid, "same process")
    h.check_alive()
    # and Allocate on the new device works
    resp = h.allocate("nvidia.com/mig-7g.40gb", [new_uuid])
    check(resp.container_responses[0].envs.get("NVIDIA_VISIBLE_DEVICES") == new_uuid,
          "Allocate %s" % resp.container_responses[0])


def test_topology_dgx_a100(h):
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"]]
    pairs = [{g[0], g[1]}, {g[2], g[3]}, {g[4], g[5]}, {g[6], g[7]}]  # pcie level 20 (one switch each)
    h.start_standin()
    h.start_plugin("--rescan-interval", "1")
    got = preferred(h, "nvidia.com/gpu", list(reversed(g)), 2)
    check(set(got) in pairs, "size 2: a pair behind one PCIe switch, got %s" % got)
    got = preferred(h, "nvidia.com/gpu", g, 2, must=[g[5]])
    check(set(got) == {g[4], g[5]}, "GPU 5 required: {4,5}, got %s" % got)
    got = preferred(h, "nvidia.com/gpu", g, 4, must=[g[6]])
    check(set(got) == set(g[4:8]), "GPU 6 required, size 4: the NUMA-1 quad, got %s" % got)
    # GPU 1 lost: a quad can no longer be {0,1,2,3}; the other NUMA node's quad is the best left
    fx["gpus"][1]["lost"] = True
    mark = h.events.mark()
    h.write_fixture(fx)
    h.wait_list("nvidia.com/gpu", start=mark, timeout=15,
                pred=lambda d: any(x["id"] == g[1] and x["health"] == "Unhealthy" for x in d))
    got = preferred(h, "nvidia.com/gpu", g, 4)
    check(set(got) == set(g[4:8]), "with GPU 1 lost: {4,5,6,7}, got %s" % got)
    got = preferred(h, "nvidia.com/gpu", g, 2, must=[g[0]])
    check(g[1] not in got and set(got) - {g[0]} <= {g[2], g[3]}, "GPU 0 required, 1 lost: 0 with 2 or 3, got %s" % got)


if __name__ == "__main__":
    run(test_lost_gpu_keeps_serving)
    run(test_mig_repartition_live)
    run(test_topology_dgx_a100)
