#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""NVIDIA's GpuConfig sharing through a claim, prepared by `gpulet dra` on a real 1.34 node
(tests/k8s/node.py, control plane, no device plugin; docs/reference/dra.md §6):

  * TimeSlicing (interval Medium): nvidia-smi sets the GPU's compute mode and time slice (a stand-in
    records the calls), the pod runs, and the slice is set back to Default when the claim goes;
  * MPS (50 % of the threads, 10Gi pinned per device): NVIDIA's real nvidia-cuda-mps-control (the
    535 driver's, tests/lib/realdriver.py) runs for the claim with those limits; the container has
    CUDA_MPS_PIPE_DIRECTORY and sees the daemon's control pipe and its own /dev/shm; killed, the daemon
    is started again with the same limits when gpulet dra restarts; the claim's end stops it and
    removes its dirs;
  * configs gpulet refuses (an interval that does not exist, a TimeSlicing strategy with an MPS
    config, a kind it does not serve) fail the pod's prepare with the reason in the pod's events,
    and nothing is left behind.

Without the registries (Go module proxy, npm, Debian's mirror for the real driver) the test fails."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dralib import (BUILD, Node, apply, check, claim, claim_of, delete_pod, events, gpu_config, log_count, pod,  # noqa: E402
                    read_spec, request, set_boot_id, setup_classes, smi_calls, smi_standin, spec_path, start_dra, stop_dra, timed,
                    wait_running)

ATTR = "device.attributes['gpu.nvidia.com']"
PLUGIN_DIR = "var/lib/kubelet/plugins/gpu.nvidia.com"


def gpu_claim(name, index, config):
    return claim(name, [request("gpu", cel=ATTR + ".index == %d" % index)], config=config)


def mps_control(node, cid, cmd):
    """One command to the claim's control daemon, as a client of its pipe dir."""
    mps = os.path.join(node.root, PLUGIN_DIR, "mps", cid)
    p = subprocess.run([os.path.join(node.root, "usr/bin/nvidia-cuda-mps-control")], input=cmd + "\n",
                       capture_output=True, text=True, timeout=10,
                       env={"CUDA_MPS_PIPE_DIRECTORY": mps + "/pipe", "CUDA_MPS_LOG_DIRECTORY": mps + "/log"})
    return p.returncode, p.stdout.strip()


def main():
    t0 = time.time()
    real = os.path.join(BUILD, "realdriver", "root-plain", "usr/bin/nvidia-cuda-mps-control")
    check(os.path.exists(real), "%s missing: run the realdriver_setup test first" % real)
    with Node() as node:
        node.start(control_plane=True, plugin=False)
        calls = smi_standin(node)
        set_boot_id(node, "boot-1")
        shutil.copy(real, os.path.join(node.root, "usr/bin/nvidia-cuda-mps-control"))
        start_dra(node)
        setup_classes(node)
        timed("node up, gpulet dra registered and published", t0)

        t = time.time()
        apply(node, gpu_claim("ts", 1, [gpu_config({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Medium"}})]),
              pod("p-ts", "true", claim_name="ts"))
        wait_running(node, "p-ts")
        uuid = node.get("resourceslices")["items"][0]["spec"]["devices"][1]["attributes"]["uuid"]["string"]
        got = smi_calls(calls)
        check(got == ["-i %s -c DEFAULT" % uuid, "compute-policy -i %s --set-timeslice 2" % uuid], "nvidia-smi: %s" % got)
        uid = claim_of(node, "p-ts")["metadata"]["uid"]
        delete_pod(node, "p-ts")
        node.kubectl("delete", "resourceclaim", "ts")
        node.wait("the TimeSlicing claim unprepared", lambda: not os.path.exists(spec_path(node, uid)), timeout=90, proc="dra")
        check(smi_calls(calls)[-1] == "compute-policy -i %s --set-timeslice 0" % uuid, "set back: %s" % smi_calls(calls))
        timed("TimeSlicing Medium: compute mode and time slice set on the claim's GPU, Default again at its end", t)

        t = time.time()
        mps = [gpu_config({"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50,
                                                            "defaultPinnedDeviceMemoryLimit": "10Gi"}})]
        script = ("echo MPS=$CUDA_MPS_PIPE_DIRECTORY; [ -S /tmp/nvidia-mps/control ] && echo CONTROL; "
                  "echo from-the-pod > /dev/shm/gpulet-probe")
        apply(node, gpu_claim("mps", 2, mps), pod("p-mps", script, claim_name="mps"))
        log = wait_running(node, "p-mps")
        c = claim_of(node, "p-mps")
        uid, cid = c["metadata"]["uid"], "0"  # the first MPS daemon's dir (dra/sharing.c mps_new_dir())
        check("MPS=/tmp/nvidia-mps" in log and "CONTROL" in log, "the pod's view of MPS: %s" % log)
        # the container's /dev/shm is the claim's tmpfs (mounted in the node's mount namespace)
        shm = os.path.join(node.root, PLUGIN_DIR, "mps", cid, "shm")
        out = subprocess.run(node.ns(["sh", "-c", "cat %s/gpulet-probe; stat -f -c %%T %s" % (shm, shm)]),
                             capture_output=True, text=True).stdout
        check(out == "from-the-pod\ntmpfs\n", "the claim's /dev/shm on the node: %r" % out)
        check(mps_control(node, cid, "get_default_active_thread_percentage") == (0, "50.0"),
              "thread percentage: %s" % (mps_control(node, cid, "get_default_active_thread_percentage"),))
        rc, out = mps_control(node, cid, "get_default_device_pinned_mem_limit 0")
        check(rc == 0 and out == "10G", "pinned limit: %s %s" % (rc, out))
        sp = read_spec(node, uid)
        mounts = sp["devices"][0]["containerEdits"]["mounts"]
        check({m["containerPath"] for m in mounts} >= {"/dev/shm", "/tmp/nvidia-mps"}, "spec mounts: %s" % mounts)
        timed("MPS: the real control daemon runs with the claim's limits; the container has its pipe and /dev/shm", t)

        t = time.time()
        check(mps_control(node, cid, "quit")[0] == 0, "quit")
        node.wait("the daemon gone", lambda: mps_control(node, cid, "get_default_active_thread_percentage")[0] != 0,
                  timeout=20)
        stop_dra(node)
        start_dra(node)
        check(log_count(node, "dra", "Started the dead MPS control daemon of a prepared claim again") == 1,
              node.log_tail("dra"))
        check(mps_control(node, cid, "get_default_active_thread_percentage") == (0, "50.0"), "revived limits")
        check(mps_control(node, cid, "get_default_device_pinned_mem_limit 0") == (0, "10G"), "revived pinned limit")
        timed("a dead MPS daemon of a prepared claim is started again with its limits when gpulet dra restarts", t)

        t = time.time()
        delete_pod(node, "p-mps")
        node.kubectl("delete", "resourceclaim", "mps")
        node.wait("the MPS claim unprepared", lambda: not os.path.exists(spec_path(node, uid)), timeout=90, proc="dra")
        check(not os.path.exists(os.path.join(node.root, PLUGIN_DIR, "mps", cid)), "the daemon's dir is left")
        check(mps_control(node, cid, "get_default_active_thread_percentage")[0] != 0, "the daemon still answers")
        timed("the MPS claim's end: its daemon stopped, its dirs removed", t)

        t = time.time()
        refused = {
            "bad-interval": ([gpu_config({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Sometimes"}})],
                             "unknown time-slice interval \"Sometimes\""),
            "mixed": ([gpu_config({"strategy": "TimeSlicing", "mpsConfig": {"defaultActiveThreadPercentage": 10}})],
                      "mpsConfig"),
            "vfio": ([gpu_config(kind="VfioDeviceConfig")], "VfioDeviceConfig"),
        }
        for i, (name, (cfg, _)) in enumerate(refused.items()):
            apply(node, gpu_claim(name, 3 + i, cfg), pod("p-" + name, "true", claim_name=name))
        for name, (_, why) in refused.items():
            msgs = node.wait("%s's prepare failing" % name, lambda name=name: events(node, "p-" + name, "FailedPrepareDynamicResources"),
                             timeout=60, proc="dra")
            check(any(why in m for m in msgs), "%s: the events say %s" % (name, msgs))
            check(node.get("pod", "p-" + name)["status"]["phase"] == "Pending", "%s not pending" % name)
            check(not os.path.exists(spec_path(node, claim_of(node, "p-" + name)["metadata"]["uid"])),
                  "%s left a spec" % name)
        timed("refused configs fail the pod's prepare with the reason in its events, nothing left behind", t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
