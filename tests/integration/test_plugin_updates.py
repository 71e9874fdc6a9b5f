#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ListAndWatch updates on the open stream: a GPU that falls off the bus (fake NVML answers
GPU_IS_LOST) turns Unhealthy -- every replica of it -- with a log line naming its UUID and the
reason, and turns Healthy again when it comes back; a MIG re-partition is re-advertised live
(new profile registered, vanished profile emptied). --rescan-interval=1 keeps this fast."""
import time

from plugin_lib import check, run


def test_lost_gpu(h):
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"]]
    h.start_standin()
    cfg = h.tmp + "/config.yaml"
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
    mark = h.start_plugin("--rescan-interval=1", "--config-file", cfg)
    regs = len([e for e in h.events.items if e["event"] == "register"])

    fx["gpus"][2]["lost"] = True
    t0 = time.time()
    h.write_fixture(fx)
    lst = h.wait_list("nvidia.com/gpu", start=mark, timeout=10,
                      pred=lambda d: any(x["health"] == "Unhealthy" for x in d))
    bad = {x["id"]: x["health"] for x in lst["devices"]}
    check(bad[g[2] + "::0"] == "Unhealthy" and bad[g[2] + "::1"] == "Unhealthy", "both replicas unhealthy: %r" % bad)
    check(all(v == "Healthy" for k, v in bad.items() if not k.startswith(g[2])), "others stay healthy: %r" % bad)
    check(len(bad) == 2 * len(g), "lost GPU still listed (capacity kept, allocatable drops)")
    print("lost GPU -> Unhealthy on the open stream in %.2f s" % (lst["t"] - t0))
    h.wait_log(r'msg="unhealthy device" resource=nvidia\.com/gpu id=%s::0 uuid=%s index=2 reason="GPU is lost'
               % (g[2], g[2]))

    fx["gpus"][2]["lost"] = False
    h.write_fixture(fx)
    h.wait_list("nvidia.com/gpu", start=mark, timeout=10, pred=lambda d: all(x["health"] == "Healthy" for x in d)
                and len(d) == 2 * len(g))
    h.wait_log(r'msg="device is healthy again" resource=nvidia\.com/gpu id=%s::0' % g[2])
    check(len([e for e in h.events.items if e["event"] == "register"]) == regs, "health changes must not re-register")
    h.check_alive()


def test_mig_repartition(h):
    fx = h.fixture_data()
    h.start_standin()
    mark = h.start_plugin("--rescan-interval=1", "--mig-strategy=mixed",
                          wait_resources=("nvidia.com/mig-3g.20gb", "nvidia.com/mig-1g.5gb"))
    # GPU 6: drop the 3g.20gb instance (the only one on the node)
    gpu6 = fx["gpus"][6]
    gone = [gi for gi in gpu6["mig"] if gi["cis"][0]["profile_name"] == "3g.20gb"]
    check(len(gone) == 1 and all("3g.20gb" not in ci["profile_name"] for g in fx["gpus"] if g is not gpu6
                                 for gi in g.get("mig", []) for ci in gi["cis"]), "fixture shape changed")
    gpu6["mig"].remove(gone[0])
    mark = h.events.mark()
    h.write_fixture(fx)
    h.wait_list("nvidia.com/mig-3g.20gb", start=mark, timeout=10, pred=lambda d: d == [])
    h.wait_list("nvidia.com/mig-1g.5gb", start=mark, timeout=10)
    h.wait_log(r"device layout changed")
    check(not any(e["event"] == "register" and e["resource"] == "nvidia.com/mig-3g.20gb"
                  for e in h.events.items[mark:]), "vanished profile registered again")
    h.check_alive()


if __name__ == "__main__":
    run(test_lost_gpu)
    run(test_mig_repartition)
