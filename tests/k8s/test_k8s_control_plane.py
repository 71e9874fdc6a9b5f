#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The rest of a real control plane beside the node (tests/k8s/node.py start(control_plane=True)):
kube-scheduler and kube-controller-manager of the same 1.34 release, what DRA needs around a driver
(docs/reference/dra.md §10):

  * a plain pod without nodeName is bound to the node by the real scheduler (event Scheduled from
    default-scheduler), and runs;
  * a pod with a ResourceClaimTemplate gets its ResourceClaim from the resourceclaim controller
    (owned by the pod, named in the pod's status); with no driver publishing devices the scheduler
    cannot allocate it and says so; deleting the pod lets the garbage collector remove the claim.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from node import BUSYBOX_IMAGE, NODE_NAME, Node  # noqa: E402
from podcheck import check  # noqa: E402


def pod(name, claims=None):
    spec = {"hostNetwork": True, "automountServiceAccountToken": False, "enableServiceLinks": False,
            "restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                            "command": ["/bin/sh", "-c", "echo RUNNING; exec sleep 3600"]}]}
    if claims:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claims}]
        spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}




def main():
    t0 = time.time()
    with Node() as node:
        node.start(control_plane=True)
        print("PASS node with kube-scheduler and kube-controller-manager up (%.1fs)" % (time.time() - t0))

        t = time.time()
        node.kubectl("apply", "-f", "-", stdin=json.dumps(pod("scheduled")))
        node.wait("pod scheduled running", lambda: node.get("pod", "scheduled")["status"].get("phase") == "Running"
                  and "RUNNING" in node.kubectl("logs", "scheduled", check=False)[1], timeout=90, proc="kube-scheduler")
        p = node.get("pod", "scheduled")
        check(p["spec"].get("nodeName") == NODE_NAME, "bound to %s" % p["spec"].get("nodeName"))
        ev = node.events_of("scheduled")
        check(any(r == "Scheduled" and c == "default-scheduler" for r, c, _ in ev), "events: %s" % ev)
        print("PASS a pod without nodeName scheduled by kube-scheduler and running (%.1fs)" % (time.time() - t))

        t = time.time()
        node.kubectl("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}))
        node.kubectl("apply", "-f", "-", stdin=json.dumps(pod("claimed", claims="one-gpu")))

        def claim_made():
            st = node.get("pod", "claimed")["status"].get("resourceClaimStatuses") or []
            return st and st[0].get("resourceClaimName")
        name = node.wait("the resourceclaim controller's claim", claim_made, timeout=60, proc="kube-controller-manager")
        c = node.get("resourceclaim", name)
        owner = c["metadata"].get("ownerReferences", [{}])[0]
        check(owner.get("kind") == "Pod" and owner.get("name") == "claimed", "claim owner: %s" % owner)
        node.wait("the scheduler's word on the claim", lambda: [m for r, comp, m in node.events_of("claimed")
                                                               if r == "FailedScheduling"], timeout=60)
        ev = [m for r, _, m in node.events_of("claimed") if r == "FailedScheduling"]
        check(any("gpu.nvidia.com" in m or "claim" in m for m in ev), "FailedScheduling: %s" % ev)
        check(node.get("pod", "claimed")["status"].get("phase") == "Pending", "pod not pending")
        node.kubectl("delete", "pod", "claimed", "--wait=false")
        node.wait("the claim garbage-collected",
                  lambda: node.kubectl("get", "resourceclaim", name, check=False)[0] != 0, timeout=60)
        print("PASS ResourceClaimTemplate -> claim by kube-controller-manager, unallocatable, collected (%.1fs)"
              % (time.time() - t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
