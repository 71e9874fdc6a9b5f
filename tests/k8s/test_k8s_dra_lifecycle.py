#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet dra` through the restarts and failures a node lives through, on a real 1.34 node
(tests/k8s/node.py, control plane, no device plugin). The cases of Kubernetes' own node e2e suite
for DRA drivers (test/e2e_node/dra_test.go at v1.34.4: restarts, a pod made while kubelet is down,
prepare failing then succeeding, unprepare of a deleted pod failing then succeeding also across a
kubelet restart, slices removed at kubelet start and after the plugin unregistered) with gpulet's own
faults in place of the test driver's switches, plus gpulet's promises (docs/reference/dra.md §7):

  * kubelet restart: kubelet wipes the node's slices, gpulet publishes them again within 10 s (one
    generation up) and is registered again; a pod made while kubelet was down runs;
  * plugin restart: registered again, the pool left as it was (no write, the same generation), the
    prepared claims kept: when kubelet (restarted too, so it forgot what it had prepared) asks again
    for a new pod of a prepared TimeSlicing claim, the answer comes from the checkpoint and nvidia-smi
    is not called a second time;
  * the registration socket removed: served and registered again;
  * prepare fails while a GPU's device node is missing (the pod's events say which), and succeeds
    once it is back;
  * unprepare of a deleted pod's claim fails while nvidia-smi cannot set the time slice back, goes on
    failing across a kubelet restart, and succeeds once it can: the spec goes, the slice is Default;
  * the slices deleted by someone: created again; removed by kubelet 30 s after the plugin stopped,
    published again when it starts;
  * a simulated reboot (containers gone, /var/run/cdi emptied, another boot id): the claims are undone
    and prepared afresh, and the pod starts again with its GPU.

Without the registries (Go module proxy, npm) the peers cannot be built and the test fails."""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dralib import (Node, apply, check, claim, claim_of, delete_pod, generation, gpu_config, log_count, pod,  # noqa: E402
                    pool, request, set_boot_id, setup_classes, slices, smi_calls, smi_fail, smi_standin, spec_path,
                    start_dra, stop_dra, timed, wait_running)

ATTR = "device.attributes['gpu.nvidia.com']"
LS = "ls /dev | grep '^nvidia[0-9]'"


def gpu_claim(name, index, config=None):
    return claim(name, [request("gpu", cel=ATTR + ".index == %d" % index)], config=config)


def gpus_seen(log):
    return log.split("PROBE-DONE")[0].split()


def restart_kubelet(node):
    node.stop_proc("kubelet")
    node.start_kubelet()


def main():
    t0 = time.time()
    with Node() as node:
        node.start(control_plane=True, plugin=False)
        set_boot_id(node, "boot-1")
        calls = smi_standin(node)
        start_dra(node)
        setup_classes(node)
        timed("node up, gpulet dra registered and published", t0)

        # -- kubelet restart -------------------------------------------------------------------
        t = time.time()
        ts = [gpu_config({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}})]
        apply(node, gpu_claim("c1", 1, ts), pod("p1", LS, claim_name="c1", restart="Always"))
        check(gpus_seen(wait_running(node, "p1")) == ["nvidia1"], "p1 sees nvidia1")
        applied = smi_calls(calls)
        check(any("--set-timeslice 3" in c for c in applied), "TimeSlicing Long applied: %s" % applied)
        gen, regs = generation(node), log_count(node, "dra", "Registered DRA plugin with kubelet")
        node.stop_proc("kubelet")
        apply(node, gpu_claim("c2", 2), pod("p2", LS, claim_name="c2", restart="Always"))
        time.sleep(2)
        check(node.get("pod", "p2")["status"].get("phase") == "Pending", "p2 runs without a kubelet")
        t1 = time.time()
        node.start_kubelet()
        node.wait("the pool published again after kubelet wiped it", lambda: generation(node) > gen and pool(node),
                  timeout=30, proc="dra")
        back = time.time() - t1
        check(back < 10, "slices back after %.1fs" % back)
        node.wait("kubelet registers gpulet dra again",
                  lambda: log_count(node, "dra", "Registered DRA plugin with kubelet") > regs, timeout=30, proc="dra")
        check(gpus_seen(wait_running(node, "p2")) == ["nvidia2"], "p2 sees nvidia2")
        check(smi_calls(calls) == applied, "sharing applied again: %s" % smi_calls(calls)[len(applied):])
        timed("kubelet restart: slices wiped and back in %.1fs (generation %d -> %d), registered again, "
              "a pod made while kubelet was down runs" % (back, gen, generation(node)), t)

        # -- plugin restart ----------------------------------------------------------------------
        t = time.time()
        gen, prepared = generation(node), log_count(node, "dra", "Prepared claim")
        stop_dra(node)
        start_dra(node, wait_published=False)
        node.wait("the restarted plugin's pool", lambda: "Published the ResourceSlices" in node.log_tail("dra", 10 ** 8)
                  .rsplit("Serving DRA plugin", 1)[1] or pool(node), timeout=30, proc="dra")
        check(generation(node) == gen, "the pool's generation moved on a plugin restart: %d -> %d" % (gen, generation(node)))
        check('claims=2' in node.log_tail("dra", 10 ** 8).rsplit("msg=\"Checkpoint\"", 1)[1].split("\n")[0],
              "the checkpoint's claims: %s" % node.log_tail("dra", 3000))
        # kubelet's own "prepared" mark is in memory: after its restart a new pod of a claim it had
        # prepared makes it ask again (pkg/kubelet/cm/dra/claiminfo.go), and gpulet answers from its checkpoint
        restart_kubelet(node)
        apply(node, pod("p1b", LS, claim_name="c1"))
        check(gpus_seen(wait_running(node, "p1b")) == ["nvidia1"], "p1b sees nvidia1")
        check(log_count(node, "dra", "Prepared claim") > prepared, "kubelet did not ask for c1 again")
        check(smi_calls(calls) == applied, "a claim prepared twice: %s" % smi_calls(calls)[len(applied):])
        check(gpus_seen(node.kubectl("logs", "p1")[1]) == ["nvidia1"], "p1 still runs")
        timed("plugin restart: re-registered, the pool unchanged (generation %d), nothing prepared twice" % gen, t)

        # -- the registration socket removed ------------------------------------------------------
        t = time.time()
        regs = log_count(node, "dra", "Registered DRA plugin with kubelet")
        os.unlink(os.path.join(node.kubelet_root, "plugins_registry", "gpu.nvidia.com-reg.sock"))
        node.wait("registered again", lambda: log_count(node, "dra", "Registered DRA plugin with kubelet") > regs,
                  timeout=30, proc="dra")
        timed("the registration socket removed: served and registered again", t)

        # -- prepare fails, then succeeds ----------------------------------------------------------
        t = time.time()
        dev4 = os.path.join(node.root, "dev/nvidia4")
        os.rename(dev4, dev4 + ".away")
        apply(node, gpu_claim("c4", 4), pod("p4", LS, claim_name="c4"))

        def failed():
            return [m for r, _, m in node.events_of("p4") if r == "FailedPrepareDynamicResources"]
        msgs = node.wait("p4's prepare failing", failed, timeout=60, proc="dra")
        check(any("/dev/nvidia4" in m for m in msgs), "the reason names the missing node: %s" % msgs)
        check(node.get("pod", "p4")["status"]["phase"] == "Pending", "p4 not pending")
        os.rename(dev4 + ".away", dev4)
        check(gpus_seen(wait_running(node, "p4", timeout=120)) == ["nvidia4"], "p4 sees nvidia4")
        timed("prepare fails while /dev/nvidia4 is missing (the event says so), succeeds once it is back", t)

        # -- unprepare of a deleted pod fails, also across a kubelet restart, then succeeds ---------
        t = time.time()
        uid1 = node.get("resourceclaim", "c1")["metadata"]["uid"]
        open(smi_fail(node), "w").close()
        failures = log_count(node, "dra", "Cannot unprepare claim")
        delete_pod(node, "p1")
        delete_pod(node, "p1b")
        node.kubectl("delete", "resourceclaim", "c1", "--wait=false")
        node.wait("unprepare failing", lambda: log_count(node, "dra", "Cannot unprepare claim") > failures,
                  timeout=60, proc="dra")
        print("  unprepare failed after %.1fs" % (time.time() - t))
        check(os.path.exists(spec_path(node, uid1)), "c1's spec went although its undo failed")
        failures = log_count(node, "dra", "Cannot unprepare claim")
        restart_kubelet(node)
        node.wait("unprepare failing after kubelet's restart",
                  lambda: log_count(node, "dra", "Cannot unprepare claim") > failures, timeout=90, proc="dra")
        print("  unprepare failed after kubelet's restart at %.1fs" % (time.time() - t))
        os.unlink(smi_fail(node))
        node.wait("c1's spec removed", lambda: not os.path.exists(spec_path(node, uid1)), timeout=90, proc="dra")
        check(any("--set-timeslice 0" in c for c in smi_calls(calls)), "the time slice set back: %s" % smi_calls(calls))
        timed("unprepare of a deleted pod's claim: fails, fails after a kubelet restart, then succeeds", t)

        # -- slices deleted: by someone, by kubelet after the plugin stopped -------------------------
        t = time.time()
        gen = generation(node)
        node.kubectl("delete", "resourceslices", "--all")
        node.wait("the pool created again", lambda: generation(node) > gen and pool(node), timeout=30, proc="dra")
        timed("slices deleted by someone: created again (generation %d -> %d)" % (gen, generation(node)), t)
        t = time.time()
        stop_dra(node)
        node.wait("kubelet wipes the slices 30 s after the plugin went", lambda: not slices(node), timeout=60)
        wiped = time.time() - t
        start_dra(node)
        timed("slices removed by kubelet %.0fs after the plugin stopped, published again at its start" % wiped, t)

        # -- a simulated reboot ------------------------------------------------------------------------
        t = time.time()
        uid2 = node.get("resourceclaim", "c2")["metadata"]["uid"]
        check(os.path.exists(spec_path(node, uid2)), "c2's spec before the reboot")
        before = node.get("pod", "p2")["status"]["containerStatuses"][0]["containerID"]
        stop_dra(node)
        node.stop_proc("kubelet")
        node.crictl("rmp", "-fa")
        for f in os.listdir(node.cdi_dir):
            os.unlink(os.path.join(node.cdi_dir, f))
        set_boot_id(node, "boot-2")
        node.start_kubelet()
        start_dra(node)
        log = node.log_tail("dra", 10 ** 8).rsplit("Serving DRA plugin", 1)[0]
        check('found="another boot\'s"' in log and "The node rebooted since the checkpoint" in log, log[-3000:])
        def again():
            cs = node.get("pod", "p2")["status"].get("containerStatuses", [{}])[0]
            return cs.get("containerID") not in (None, before) and cs.get("state", {}).get("running")
        node.wait("p2 running again in a new container", again, timeout=120, proc="dra")
        check(os.path.exists(spec_path(node, uid2)), "c2's spec written again")
        rc, out = node.kubectl("logs", "p2")
        check(gpus_seen(out) == ["nvidia2"], "p2 after the reboot: %r" % out)
        timed("simulated reboot: claims undone and prepared afresh, the pod starts again with its GPU", t)
        for p in ("p2", "p4"):
            delete_pod(node, p, wait=False)
        shutil.rmtree(os.path.join(node.t, "unused"), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
