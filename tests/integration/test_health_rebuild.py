#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Health survives a re-advertise: a GPU made unhealthy by an XID stays Unhealthy when the plugin
rebuilds its resources after a MIG re-partition of another GPU (the new servers' first
ListAndWatch must not show it Healthy again: a rebuild is no recovery; recovery is the watcher's
quiet-period decision). `gpulet plugin` on the fake NVML, python3-grpcio as the kubelet.

Health checking survives a SIGHUP reload too: one whose new config cannot be built leaves the
running watcher (and its NVML) in place, so a later XID still marks the GPU Unhealthy; one that
rebuilds hands the old watcher's faults to the new one, so an application-class XID still recovers
after the quiet period."""
import os
import signal
import time

from plugin_lib import check, run


def test_xid_survives_repartition(h):
    fx = h.fixture_data()
    uuids = [g["uuid"] for g in fx["gpus"]]
    events = os.path.join(h.tmp, "nvml-events")
    with open(events, "w") as f:
        f.write("# fake NVML events\n")
    h.start_standin()
    h.start_plugin("--mig-strategy", "mixed", "--rescan-interval", "1", env={"FAKE_NVML_EVENTS": events},
                   wait_resources=("nvidia.com/gpu", "nvidia.com/mig-3g.20gb"))
    time.sleep(0.3)
    mark = h.events.mark()
    with open(events, "a") as f:
        f.write("xid 0 48\n")
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: any(x["id"] == uuids[0] and x["health"] == "Unhealthy"
                                                                 for x in d))
    # GPU 6 re-partitioned: one 7g.40gb; the plugin re-advertises everything
    new_uuid = "MIG-7e7e7e7e-1001-5001-8001-a100c0de0778"
    fx["gpus"][6]["mig"] = [{"gi": 0, "gi_profile": 4, "placement": [0, 8],
                             "cis": [{"ci": 0, "uuid": new_uuid, "profile_name": "7g.40gb"}]}]
    mark = h.events.mark()
    h.write_fixture(fx)
    h.wait_list("nvidia.com/mig-7g.40gb", start=mark, timeout=20)
    # every nvidia.com/gpu list sent after the rebuild keeps GPU 0 Unhealthy
    time.sleep(1.0)
    lists = [e for e in h.events.items[mark:] if e["event"] == "list" and e["resource"] == "nvidia.com/gpu"]
    check(lists, "no nvidia.com/gpu list after the rebuild")
    for e in lists:
        m = {x["id"]: x["health"] for x in e["devices"]}
        check(m.get(uuids[0]) == "Unhealthy", "GPU 0 (XID 48) advertised %s after the MIG rebuild" % m.get(uuids[0]))
    h.check_alive()


def health_of(uuid, want):
    return lambda devs: any(x["id"] == uuid and x["health"] == want for x in devs)


def test_failed_reload_keeps_watching(h):
    uuid = h.fixture_data()["gpus"][2]["uuid"]
    klog = os.path.join(h.tmp, "kern.log")
    cfg = os.path.join(h.tmp, "config.yaml")
    open(klog, "w").close()
    with open(cfg, "w") as f:
        f.write("version: v1\n")
    h.start_standin()
    h.start_plugin("--config-file", cfg, "--kernel-log", klog)
    # another driver root (another NVML) and an IMEX channel that does not exist: valid, not buildable
    with open(cfg, "w") as f:
        f.write("version: v1\nflags:\n  nvidiaDriverRoot: /driver\nimex:\n  channelIDs: [0]\n  required: true\n")
    h.plugin.send_signal(signal.SIGHUP)
    h.wait_log("serving the previous one")
    time.sleep(0.5)
    mark = h.events.mark()
    h.nvml_event("xid 2 48")
    h.wait_list("nvidia.com/gpu", start=mark, pred=health_of(uuid, "Unhealthy"))
    # and the reload was not dropped silently: the daemon loop's one line (util/loop.h)
    h.wait_log("Config reload failed, keeping the running config")
    h.check_alive()


def test_recovery_after_reload(h):
    uuid = h.fixture_data()["gpus"][2]["uuid"]
    klog = os.path.join(h.tmp, "kern.log")
    open(klog, "w").close()
    h.start_standin()
    h.start_plugin("--health-recovery-interval=3", "--kernel-log", klog)
    time.sleep(0.5)
    mark = h.events.mark()
    h.nvml_event("xid 2 32")  # application class: recovers after the quiet period
    h.wait_list("nvidia.com/gpu", start=mark, pred=health_of(uuid, "Unhealthy"))
    mark = h.events.mark()
    h.plugin.send_signal(signal.SIGHUP)
    h.wait_log("SIGHUP: reloading the config")
    # the rebuilt list carries the fault; the new watcher still recovers it
    h.wait_list("nvidia.com/gpu", start=mark, pred=health_of(uuid, "Healthy"), timeout=15)
    check("healthy again" in h.log_text(), "no recovery logged:\n%s" % h.log_text()[-3000:])
    h.check_alive()


if __name__ == "__main__":
    run(test_xid_survives_repartition)
    run(test_failed_reload_keeps_watching)
    run(test_recovery_after_reload)
