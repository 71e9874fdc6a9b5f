#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The chart's view of the host's /dev in a real pod (issue 30 item 9): the plugin's and the doctor's
/dev volume and mounts, exactly as `helm template` renders them for this node's Kubernetes, run by the
real kubelet and containerd 2 in a busybox pod. From the pod's own /proc/self/mountinfo (nothing is
written anywhere): every mount at or below /host/dev is read-only (the host's /dev/mqueue and
/dev/hugepages included, through recursiveReadOnly: IfPossible), and /host/dev/shm and /host/dev/pts
are the chart's empty volume, not the host's shared memory and terminals. The rendered objects
themselves, for every Kubernetes version: tests/integration/test_helm.py (test_host_dev).

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import helm_lib  # noqa: E402
from node import Node, NodeError  # noqa: E402
from podcheck import check  # noqa: E402

KUBE = "1.34.0"  # the node's kubelet (tests/k8s/peers.py)


def dev_spec(component):
    """The rendered DaemonSet's volumes and mounts that make up its view of /dev."""
    docs = helm_lib.template(kube_version=KUBE)
    ds = next(d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"].endswith("-" + component))
    pod = ds["spec"]["template"]["spec"]
    mounts = [m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"].startswith("/host/dev")]
    names = {m["name"] for m in mounts}
    return [v for v in pod["volumes"] if v["name"] in names], mounts


def below_dev(log):
    """mountinfo lines at or below /host/dev: (mount point, root within its fs, options, fs type)."""
    out = []
    for line in log.splitlines():
        f = line.split()
        if len(f) < 10 or not (f[4] == "/host/dev" or f[4].startswith("/host/dev/")):
            continue
        sep = f.index("-")
        out.append((f[4], f[3], f[5].split(","), f[sep + 1]))
    return out


def test_chart_mounts():
    t0 = time.time()
    with Node() as node:
        node.start()
        for comp in ("device-plugin", "doctor"):
            volumes, mounts = dev_spec(comp)
            st, log = node.run_pod("devview-" + comp, "cat /proc/self/mountinfo", {}, volumes=volumes, mounts=mounts)
            node.delete_pod("devview-" + comp)
            check(st.get("phase") == "Succeeded", "%s's /dev view: the pod did not run: %s" % (comp, json.dumps(st)[:1500]))
            seen = below_dev(log)
            check(any(m == "/host/dev" for m, _, _, _ in seen), "%s: no /host/dev in the pod:\n%s" % (comp, log))
            writable = [(m, fs) for m, _, opts, fs in seen if "ro" not in opts]
            check(not writable, "%s: writable below /host/dev: %s" % (comp, writable))
            for want in ("/host/dev/shm", "/host/dev/pts"):
                top = [(root, fs) for m, root, _, fs in seen if m == want][-1:]  # the last mount there is what shows
                check(top and "empty-dir" in top[0][0], "%s: %s is %s, not the chart's empty volume" % (comp, want, top))
            print("PASS %s: %d mounts at or below /host/dev, all read-only; shm and pts masked (%s)"
                  % (comp, len(seen), ", ".join(sorted({m for m, _, _, _ in seen}))))
    print("PASS test_chart_mounts (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        test_chart_mounts()
    except NodeError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
