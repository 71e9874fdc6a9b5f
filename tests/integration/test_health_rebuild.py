#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Health survives a re-advertise: a GPU made unhealthy by an XID stays Unhealthy when the plugin
rebuilds its resources after a MIG re-partition of another GPU (the new servers' first
ListAndWatch must not show it Healthy again: a rebuild is no recovery; recovery is the watcher's
quiet-period decision). `gpulet plugin` on the fake NVML, python3-grpcio as the kubelet."""
import os
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


if __name__ == "__main__":
    run(test_xid_survives_repartition)
