#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""XID health end to end: `gpulet plugin` on the fake NVML, python3-grpcio as the kubelet.

  * XID events injected through the fake's FAKE_NVML_EVENTS file reach ListAndWatch as an
    Unhealthy device; the event-to-update latency is measured over 56 events (7 plugin runs x 8
    GPUs) and printed with its p99 (the issue's target is 100 ms; printed, not asserted);
  * application XIDs (13) change nothing; DP_ENABLE_HEALTHCHECKS=13 makes 13 count;
  * with time-slicing, one XID takes down every replica of that GPU (#1929); with MIG (mixed), an
    XID attributed to one instance takes down that instance only;
  * the kernel log is a second source: a "GPU has fallen off the bus" line appended to the log file
    the plugin follows (<root>/dev/kmsg, a regular file in the fake root) marks that GPU Unhealthy.
"""
import os
import time

from plugin_lib import check, run

RUNS = 7


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def healthy_map(devs):
    return {d["id"]: d["health"] for d in devs}


def start(h, *args, env=None, wait=("nvidia.com/gpu",)):
    h.events_file = os.path.join(h.tmp, "nvml-events")
    append(h.events_file, "# fake NVML events\n")
    e = {"FAKE_NVML_EVENTS": h.events_file}
    e.update(env or {})
    return h.start_plugin(*args, env=e, wait_resources=wait)


def test_xid_latency(h):
    uuids = [g["uuid"] for g in h.fixture_data()["gpus"]]
    h.start_standin()
    lat = []
    for run_no in range(RUNS):
        mark = start(h)
        h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 8 and
                    all(x["health"] == "Healthy" for x in d))
        time.sleep(0.2)  # the watcher has registered its event set
        for i, u in enumerate(uuids):
            mark = h.events.mark()
            t0 = time.time()
            append(h.events_file, "xid %d 48\n" % i)
            ev = h.wait_list("nvidia.com/gpu", start=mark, timeout=5,
                             pred=lambda d, u=u: healthy_map(d).get(u) == "Unhealthy")
            lat.append(ev["t"] - t0)
            m = healthy_map(ev["devices"])
            check(all(m[x] == ("Unhealthy" if j <= i else "Healthy") for j, x in enumerate(uuids)),
                  "after XID on GPU %d: %s" % (i, m))
        h.wait_log(r'uuid=%s .*index=7 .*(xid=48|XID 48)' % uuids[7])
        h.check_alive()
        h.stop_plugin()
    lat.sort()
    n = len(lat)
    print("# XID event -> ListAndWatch update over %d events: p50 %.1f ms, p99 %.1f ms, max %.1f ms "
          "(fake NVML polls its event file every 5 ms)" % (n, lat[n // 2] * 1000, lat[min(n - 1, n * 99 // 100)] * 1000,
                                                          lat[-1] * 1000))


def test_app_xid_and_enable(h):
    uuids = [g["uuid"] for g in h.fixture_data()["gpus"]]
    h.start_standin()
    mark = start(h)
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 8)
    time.sleep(0.2)
    mark = h.events.mark()
    append(h.events_file, "xid 1 13\nxid 2 31\nxid 3 48\n")
    ev = h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: healthy_map(d).get(uuids[3]) == "Unhealthy")
    m = healthy_map(ev["devices"])
    check(m[uuids[1]] == "Healthy" and m[uuids[2]] == "Healthy", "application XIDs 13/31 must not count: %s" % m)
    h.stop_plugin()

    mark = start(h, env={"DP_ENABLE_HEALTHCHECKS": "13"})
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 8)
    time.sleep(0.2)
    mark = h.events.mark()
    append(h.events_file, "xid 1 13\n")
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: healthy_map(d).get(uuids[1]) == "Unhealthy")


def test_replicas_all_unhealthy(h):
    uuids = [g["uuid"] for g in h.fixture_data()["gpus"]]
    cfg = os.path.join(h.tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
    h.start_standin()
    mark = start(h, "--config-file", cfg)
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 32)
    time.sleep(0.2)
    mark = h.events.mark()
    append(h.events_file, "xid 5 48\n")
    ev = h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: any(x["health"] == "Unhealthy" for x in d))
    bad = sorted(x["id"] for x in ev["devices"] if x["health"] == "Unhealthy")
    check(bad == sorted("%s::%d" % (uuids[5], k) for k in range(4)), "unhealthy replicas %s" % bad)


def test_mig_instance(h):
    fx = h.fixture_data()
    gpu6 = fx["gpus"][6]
    by_profile = {}
    for gi in gpu6["mig"]:
        for ci in gi["cis"]:
            by_profile.setdefault(ci["profile_name"], []).append(ci["uuid"])
    target = by_profile["1g.5gb"][0]
    h.start_standin()
    mark = start(h, "--mig-strategy", "mixed", wait=("nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb"))
    time.sleep(0.2)
    mark = h.events.mark()
    append(h.events_file, "xid %s 94\n" % target)
    ev = h.wait_list("nvidia.com/mig-1g.5gb", start=mark, pred=lambda d: healthy_map(d).get(target) == "Unhealthy")
    bad = [x["id"] for x in ev["devices"] if x["health"] == "Unhealthy"]
    check(bad == [target], "only the attributed instance: %s" % bad)
    time.sleep(0.3)
    for e in h.events.items[mark:]:
        if e["event"] == "list" and e["resource"] == "nvidia.com/mig-3g.20gb":
            check(all(x["health"] == "Healthy" for x in e["devices"]), "3g.20gb on the same GPU touched: %s" % e)


def test_kernel_log_fallen_off(h):
    fx = h.fixture_data()
    g = fx["gpus"][4]
    kmsg = os.path.join(h.root, "dev", "kmsg")
    if os.path.exists(kmsg) and not os.path.isfile(kmsg):
        os.unlink(kmsg)
    append(kmsg, "6,1,1,-;Linux version\n")
    h.start_standin()
    mark = start(h)
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 8)
    time.sleep(0.3)
    bus = g["pci_bus_id"].lower()  # "00000000:87:00.0" -> kernel form "PCI:0000:87:00"
    dom, b, dev = bus.split(":")[0][-4:], bus.split(":")[1], bus.split(":")[2].split(".")[0]
    mark = h.events.mark()
    t0 = time.time()
    append(kmsg, "4,2,2,-;NVRM: Xid (PCI:%s:%s:%s): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
           % (dom, b, dev))
    ev = h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: healthy_map(d).get(g["uuid"]) == "Unhealthy")
    print("# kernel-log XID 79 -> ListAndWatch: %.1f ms" % ((ev["t"] - t0) * 1000))
    m = healthy_map(ev["devices"])
    check(sum(v == "Unhealthy" for v in m.values()) == 1, "only GPU 4: %s" % m)
    h.wait_log(r'uuid=%s' % g["uuid"])


if __name__ == "__main__":
    run(test_xid_latency)
    run(test_app_xid_and_enable)
    run(test_replicas_all_unhealthy)
    run(test_mig_instance)
    run(test_kernel_log_fallen_off)
