#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ListAndWatch updates on the open stream, driven by the health watcher (src/plugin/health.c):
a critical XID marks the GPU -- every replica of it -- Unhealthy, an XID on a MIG instance marks
only that instance, default-ignored XIDs and DP_DISABLE_HEALTHCHECKS=all change nothing, a GPU
that falls off the bus (fake NVML answers GPU_IS_LOST) turns Unhealthy; each with a log line
naming the UUID and the reason. A MIG re-partition is re-advertised live (vanished profile
emptied, others re-registered). --rescan-interval=1 keeps the NVML polling fast."""
import os
import time

from plugin_lib import check, run


def healths(lst):
    return {x["id"]: x["health"] for x in lst["devices"]}


def replicas_config(h, n):
    cfg = os.path.join(h.tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                "      replicas: %d\n" % n)
    return cfg


def test_xid_and_lost(h):
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"]]
    h.start_standin()
    mark = h.start_plugin("--rescan-interval=1", "--config-file", replicas_config(h, 2))
    regs = len([e for e in h.events.items if e["event"] == "register"])

    h.nvml_event("xid 3 13")  # application error: ignored by default (upstream's list)
    h.nvml_event("xid 3 48")  # double-bit ECC XID: critical
    t0 = time.time()
    lst = h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: any(x["health"] == "Unhealthy" for x in d))
    bad = healths(lst)
    check(bad[g[3] + "::0"] == "Unhealthy" and bad[g[3] + "::1"] == "Unhealthy", "both replicas: %r" % bad)
    check(all(v == "Healthy" for k, v in bad.items() if not k.startswith(g[3])), "others healthy: %r" % bad)
    check(len(bad) == 2 * len(g), "unhealthy devices stay listed")
    print("XID 48 -> Unhealthy on the open stream in %.0f ms" % ((lst["t"] - t0) * 1e3))
    h.wait_log(r'msg="unhealthy device" resource=nvidia\.com/gpu id=%s::0 uuid=%s index=3 reason="[^"]*48'
               % (g[3], g[3]))

    # SIGHUP rebuilds the resources: what the health checks found is kept
    mark = h.events.mark()
    h.plugin.send_signal(__import__("signal").SIGHUP)
    lst = h.events.wait(lambda e: e["event"] == "list" and e["resource"] == "nvidia.com/gpu" and e["devices"],
                        start=mark, what="list after SIGHUP")
    check(healths(lst)[g[3] + "::1"] == "Unhealthy", "SIGHUP forgot the XID: %r" % healths(lst))
    regs = len([e for e in h.events.items if e["event"] == "register"])

    mark = h.events.mark()
    fx["gpus"][5]["lost"] = True
    h.write_fixture(fx)
    lst = h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: healths({"devices": d})[g[5] + "::1"] == "Unhealthy")
    check(healths(lst)[g[3] + "::0"] == "Unhealthy", "earlier state kept: %r" % healths(lst))
    h.wait_log(r'msg="unhealthy device" resource=nvidia\.com/gpu id=%s::0 uuid=%s index=5 reason="[^"]*lost' % (g[5], g[5]))
    check(len([e for e in h.events.items if e["event"] == "register"]) == regs, "health changes must not re-register")
    h.check_alive()


def test_mig_xid(h):
    fx = h.fixture_data()
    migs = [ci["uuid"] for gi in fx["gpus"][6]["mig"] for ci in gi["cis"] if ci["profile_name"] == "1g.5gb"]
    h.start_standin()
    mark = h.start_plugin("--mig-strategy=mixed", wait_resources=("nvidia.com/mig-1g.5gb", "nvidia.com/gpu"))
    h.nvml_event("xid %s 48" % migs[0])
    lst = h.wait_list("nvidia.com/mig-1g.5gb", start=mark, pred=lambda d: any(x["health"] == "Unhealthy" for x in d))
    bad = healths(lst)
    check(bad[migs[0]] == "Unhealthy" and bad[migs[1]] == "Healthy", "only the MIG instance hit: %r" % bad)
    h.check_alive()


def test_health_disabled(h):
    g = [x["uuid"] for x in h.fixture_data()["gpus"]]
    h.start_standin()
    mark = h.start_plugin(env={"DP_DISABLE_HEALTHCHECKS": "all"})
    h.nvml_event("xid 1 48")
    time.sleep(1.5)
    lists = [e for e in h.events.items[mark:] if e["event"] == "list" and e["resource"] == "nvidia.com/gpu"]
    check(all(x["health"] == "Healthy" for e in lists for x in e["devices"]) and len(lists) == 1,
          "DP_DISABLE_HEALTHCHECKS=all still changed health: %r" % lists)
    h.stop_plugin()
    # issue 23 §4: as upstream, a malformed entry is skipped with a warning; the rest still applies
    mark = h.start_plugin(env={"DP_DISABLE_HEALTHCHECKS": "fourty-two, 48"})
    h.wait_log(r"level=warn.*Ignoring malformed XID.*fourty-two", timeout=10)
    h.nvml_event("xid 1 48")
    time.sleep(1.5)
    h.check_alive()
    lists = [e for e in h.events.items[mark:] if e["event"] == "list" and e["resource"] == "nvidia.com/gpu"]
    check(all(x["health"] == "Healthy" for e in lists for x in e["devices"]),
          "XID 48 counted although DP_DISABLE_HEALTHCHECKS names it: %r" % lists)
    del g


def test_mig_repartition(h):
    fx = h.fixture_data()
    h.start_standin()
    h.start_plugin("--rescan-interval=1", "--mig-strategy=mixed",
                   wait_resources=("nvidia.com/mig-3g.20gb", "nvidia.com/mig-1g.5gb"))
    gpu6 = fx["gpus"][6]
    gone = [gi for gi in gpu6["mig"] if gi["cis"][0]["profile_name"] == "3g.20gb"]
    check(len(gone) == 1 and all("3g.20gb" not in ci["profile_name"] for g in fx["gpus"] if g is not gpu6
                                 for gi in g.get("mig", []) for ci in gi["cis"]), "fixture shape changed")
    gpu6["mig"].remove(gone[0])
    mark = h.events.mark()
    t0 = time.time()
    h.write_fixture(fx)
    empty = h.wait_list("nvidia.com/mig-3g.20gb", start=mark, timeout=10, pred=lambda d: d == [])
    h.wait_list("nvidia.com/mig-1g.5gb", start=mark, timeout=10)
    h.wait_log(r"device layout changed")
    print("MIG re-partition -> vanished profile emptied in %.2f s" % (empty["t"] - t0))
    check(not any(e["event"] == "register" and e["resource"] == "nvidia.com/mig-3g.20gb"
                  for e in h.events.items[mark:]), "vanished profile registered again")
    check(not os.path.exists(h.sock("nvidia.com/mig-3g.20gb")), "socket of the vanished profile left")
    h.check_alive()


def test_recovery_and_kernel_log(h):
    """Issue 5 §1-2: a recoverable XID heals after --health-recovery-interval of quiet; an XID 79
    seen only in the kernel log (NVML missed it) marks the GPU Unhealthy and it never heals."""
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"]]
    klog = os.path.join(h.tmp, "kern.log")
    open(klog, "w").close()
    h.start_standin()
    mark = h.start_plugin("--rescan-interval=1", "--health-recovery-interval=2", "--kernel-log", klog)
    h.wait_log(r"kernel|kmsg|Xid|health", timeout=10)
    h.nvml_event("xid 2 32")  # corrupted push buffer: critical but recoverable
    bad = h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: healths({"devices": d})[g[2]] == "Unhealthy")
    t0 = bad["t"]
    good = h.wait_list("nvidia.com/gpu", start=h.events.items.index(bad) + 1, timeout=15,
                       pred=lambda d: healths({"devices": d})[g[2]] == "Healthy")
    quiet = good["t"] - t0
    check(1.5 <= quiet <= 10, "recovered after %.1f s, want about the 2 s quiet period" % quiet)
    print("XID 32 -> Unhealthy -> Healthy again after %.1f s of quiet (interval 2 s)" % quiet)
    h.wait_log(r"%s" % g[2])

    bus = fx["gpus"][4]["pci_bus_id"]  # "00000000:87:00.0" -> kernel form "0000:87:00"
    kbus = bus[4:].rsplit(".", 1)[0].lower()
    mark = h.events.mark()
    with open(klog, "a") as f:
        f.write("Dec  2 10:00:00 node kernel: [12345.678] NVRM: Xid (PCI:%s): 79, pid=0, name=, "
                "GPU has fallen off the bus.\n" % kbus)
    h.wait_list("nvidia.com/gpu", start=mark, timeout=10,
                pred=lambda d: healths({"devices": d})[g[4]] == "Unhealthy")
    time.sleep(4)  # twice the quiet period: XID 79 must not heal
    last = [e for e in h.events.items if e["event"] == "list" and e["resource"] == "nvidia.com/gpu"][-1]
    check(healths(last)[g[4]] == "Unhealthy", "XID 79 healed: %r" % healths(last))
    h.check_alive()


def test_lost_back_after_reload_restart(h):
    """Soak finding F10: after a SIGHUP reload to time-slicing and a kubelet restart, a GPU that NVML
    answers GPU_IS_LOST for is Unhealthy on the new stream, and Healthy again once NVML reads it
    normally (reset, re-attached). Before the fix the lost fault was permanent like an XID 79."""
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"] if not x.get("mig_mode")]
    cfg = os.path.join(h.tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nflags:\n  migStrategy: mixed\n")
    h.start_standin()
    h.start_plugin("--rescan-interval=1", "--config-file", cfg)
    with open(cfg, "a") as f:
        f.write("sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n")
    mark = h.events.mark()
    h.plugin.send_signal(__import__("signal").SIGHUP)
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 2 * len(g))
    h.kill_standin()
    h.start_standin()
    h.events.wait(lambda e: e["event"] == "register" and e["resource"] == "nvidia.com/gpu", what="re-register")
    lost = next(x for x in fx["gpus"] if x["uuid"] == g[1])
    lost["lost"] = True
    mark = h.events.mark()
    h.write_fixture(fx)
    h.wait_list("nvidia.com/gpu", start=mark,
                pred=lambda d: {x["id"] for x in d if x["health"] == "Unhealthy"} == {g[1] + "::0", g[1] + "::1"})
    lost["lost"] = False
    mark = h.events.mark()
    h.write_fixture(fx)
    lst = h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: all(x["health"] == "Healthy" for x in d))
    check(len(lst["devices"]) == 2 * len(g), "replicas kept: %r" % healths(lst))
    h.wait_log(r'msg="device is healthy again" resource=nvidia\.com/gpu id=%s::0' % g[1])
    h.check_alive()


if __name__ == "__main__":
    run(test_recovery_and_kernel_log)
    run(test_xid_and_lost)
    run(test_mig_xid)
    run(test_health_disabled)
    run(test_mig_repartition)
    run(test_lost_back_after_reload_restart)
