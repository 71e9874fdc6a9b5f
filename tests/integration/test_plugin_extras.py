#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Issue 23: what the plugin hands out beside the GPUs, and its start, as upstream v0.20 does
(docs/reference/device-plugin.md §8.1 and the comparison table):

  * IMEX: the channel is handed out only when /dev/nvidia-caps-imex-channels/channel0 is a
    character device under the dev root; absent, it is dropped with a warning, and with
    imex.required the plugin does not start; with a CDI strategy the imex-channel spec the name
    refers to is written (k8s.device-plugin.nvidia.com-imex-channel.json);
  * GDS/MOFED/GDRCopy under CDI: one spec each with the nodes that exist, "<class>=all" in
    Allocate; a feature enabled whose nodes are absent is warned about and not named;
  * a feature turned off or absent leaves no spec: the one an earlier run wrote is removed (ours
    only: a file with our name that we did not write, or a symlink, is left alone and said);
  * --cdi-spec-dir: every spec (the GPUs' and the extras') goes there, none below --root (the GPU
    Operator's pod reads the host read-only below /host and mounts the spec dir at /var/run/cdi);
  * zero GPUs with the default failOnInitError: "No devices found. Waiting indefinitely.";
  * a GPU lost at start is never advertised with an empty ID.
"""
import json
import os
import stat
import subprocess
import time

from plugin_lib import GPULET, check, run

VENDOR = "k8s.device-plugin.nvidia.com"
CHANNEL = "/dev/nvidia-caps-imex-channels/channel0"


def restart(h, *args, wait=("nvidia.com/gpu",)):
    if h.plugin:
        check(h.stop_plugin() == 0, "plugin did not stop cleanly")
    return h.start_plugin(*args, wait_resources=wait)


def chardev(h, rel, minor):
    path = os.path.join(h.root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(511, minor))


def one(h, resource, *ids):
    r = h.allocate(resource, list(ids))
    cr = r.container_responses[0]
    return {"envs": dict(cr.envs), "cdi": [c.name for c in cr.cdi_devices],
            "devices": [(d.container_path, d.host_path) for d in cr.devices]}


def spec(h, cls):
    path = os.path.join(h.root, "var/run/cdi/%s-%s.json" % (VENDOR, cls))
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def test_imex(h):
    g = [x["uuid"] for x in h.fixture_data()["gpus"]]
    h.start_standin()
    args = ("--imex-channel-ids=0", "--device-list-strategy=envvar,cdi-cri", "--pass-device-specs")

    # absent: not handed out in any form, and said
    restart(h, *args)
    h.wait_log(r"level=warn.*Ignoring requested IMEX channel.*channel0", timeout=10)
    got = one(h, "nvidia.com/gpu", g[0])
    check(got["cdi"] == ["%s/gpu=%s" % (VENDOR, g[0])], "absent channel named: %r" % got["cdi"])
    check("NVIDIA_IMEX_CHANNELS" not in got["envs"], "absent channel in env: %r" % got["envs"])
    check(all("imex" not in c for c, _ in got["devices"]), "absent channel as a device spec: %r" % got["devices"])
    check(spec(h, "imex-channel") is None, "imex spec written without a channel")
    h.stop_plugin()

    # required and absent: no start
    p = subprocess.run([GPULET, "plugin", *h.base_args(), *args, "--imex-required"], capture_output=True, text=True,
                       env=h.plugin_env(), timeout=20)
    check(p.returncode == 1 and "IMEX channel 0 is required" in p.stderr, "rc %d %s" % (p.returncode, p.stderr))

    # present: every form, and the spec the CDI name refers to
    chardev(h, CHANNEL, 0)
    restart(h, *args, "--imex-required")
    got = one(h, "nvidia.com/gpu", g[0])
    check(got["cdi"] == ["%s/gpu=%s" % (VENDOR, g[0]), "%s/imex-channel=0" % VENDOR], "cdi %r" % got["cdi"])
    check(got["envs"].get("NVIDIA_IMEX_CHANNELS") == "0", "env %r" % got["envs"])
    check((CHANNEL, CHANNEL) in got["devices"], "device spec %r" % got["devices"])
    s = spec(h, "imex-channel")
    check(s and s["kind"] == VENDOR + "/imex-channel" and [d["name"] for d in s["devices"]] == ["0"] and
          s["devices"][0]["containerEdits"]["deviceNodes"] == [{"path": CHANNEL}], "imex spec %r" % s)

    # turned off: the spec the earlier run wrote is removed, and said
    restart(h, "--device-list-strategy=envvar,cdi-cri")
    h.wait_log(r"level=info.*Removed a stale CDI spec.*class=imex-channel.*imex off", timeout=10)
    check(spec(h, "imex-channel") is None, "imex spec left after IMEX was turned off")


def test_gated_specs(h):
    g = [x["uuid"] for x in h.fixture_data()["gpus"]]
    h.start_standin()
    feats = ("--gdrcopy-enabled", "--gds-enabled", "--mofed-enabled", "--device-list-strategy=cdi-cri")

    # none of the nodes exist: warned, not named, no spec
    restart(h, *feats)
    for f in ("gdrcopy", "gds", "mofed"):
        h.wait_log(r"level=warn.*none of its device nodes exist.*feature=%s" % f, timeout=10)
        check(spec(h, f) is None, "%s spec without nodes" % f)
    got = one(h, "nvidia.com/gpu", g[1])
    check(got["cdi"] == ["%s/gpu=%s" % (VENDOR, g[1])], "names %r" % got["cdi"])
    check(got["envs"] == {"NVIDIA_GDRCOPY": "enabled", "NVIDIA_GDS": "enabled", "NVIDIA_MOFED": "enabled"},
          "envs %r" % got["envs"])

    # the nodes (and GDS's files) exist: one spec each, device "all", named in Allocate
    chardev(h, "/dev/gdrdrv", 1)
    chardev(h, "/dev/nvidia-fs0", 2)
    chardev(h, "/dev/nvidia-fs1", 3)
    chardev(h, "/dev/infiniband/uverbs0", 4)
    chardev(h, "/dev/infiniband/rdma_cm", 5)
    os.makedirs(os.path.join(h.root, "etc"), exist_ok=True)
    open(os.path.join(h.root, "etc/cufile.json"), "w").write("{}\n")
    restart(h, *feats)
    got = one(h, "nvidia.com/gpu", g[1])
    check(got["cdi"] == ["%s/gpu=%s" % (VENDOR, g[1])] + ["%s/%s=all" % (VENDOR, f) for f in ("gdrcopy", "gds", "mofed")],
          "names %r" % got["cdi"])
    want = {"gdrcopy": ["/dev/gdrdrv"], "gds": ["/dev/nvidia-fs0", "/dev/nvidia-fs1"],
            "mofed": ["/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"]}
    for f, nodes in want.items():
        s = spec(h, f)
        check(s and s["kind"] == "%s/%s" % (VENDOR, f) and [d["name"] for d in s["devices"]] == ["all"],
              "%s spec %r" % (f, s))
        edits = s["devices"][0]["containerEdits"]
        check([n["path"] for n in edits["deviceNodes"]] == nodes, "%s nodes %r" % (f, edits))
        if f == "gds":
            check([m["containerPath"] for m in edits.get("mounts", [])] == ["/etc/cufile.json"], "gds mounts %r" % edits)

    # without a CDI strategy no spec of ours is written or removed, the gpu spec as the features' (a
    # switch back to CDI finds them as they were; upstream touches none either)
    restart(h, "--gds-enabled", "--device-list-strategy=envvar")
    for f in ("gpu", "gdrcopy", "gds", "mofed"):
        check(spec(h, f) is not None, "%s spec touched without a CDI strategy" % f)
    check("Removed a stale CDI spec" not in h.log_text()[h.log_start:],
          "a spec was removed without a CDI strategy")

    # turned off: the specs the earlier run wrote are removed, and said; the one still on stays
    restart(h, "--gds-enabled", "--device-list-strategy=cdi-cri")
    for f in ("gdrcopy", "mofed"):
        h.wait_log(r"level=info.*Removed a stale CDI spec.*class=%s.*feature off" % f, timeout=10)
        check(spec(h, f) is None, "%s spec left after the feature was turned off" % f)
    check(spec(h, "gds") is not None, "gds spec removed while GDS is on and present")

    # absent: GDS's nodes are gone, so is its spec
    for n in ("nvidia-fs0", "nvidia-fs1"):
        os.unlink(os.path.join(h.root, "dev", n))
    restart(h, "--gds-enabled", "--device-list-strategy=cdi-cri")
    h.wait_log(r"level=info.*Removed a stale CDI spec.*class=gds.*device nodes absent", timeout=10)
    check(spec(h, "gds") is None, "gds spec left after its nodes went away")

    # not ours: a file with our name that gpulet did not write, and a symlink to a spec of ours
    # elsewhere, are left alone (a symlink is never followed) and said
    cdi_dir = os.path.join(h.root, "var/run/cdi")
    foreign = os.path.join(cdi_dir, "%s-gdrcopy.json" % VENDOR)
    with open(foreign, "w") as f:
        json.dump({"cdiVersion": "0.3.0", "kind": VENDOR + "/gdrcopy",
                   "devices": [{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/gdrdrv"}]}}]}, f)
    target = os.path.join(h.tmp, "elsewhere.json")
    with open(target, "w") as f:
        json.dump({"cdiVersion": "0.3.0", "kind": VENDOR + "/mofed",
                   "devices": [{"name": "all", "containerEdits": {"deviceNodes": [{"path": "/dev/null"}]}}],
                   "containerEdits": {"env": ["GPULET_CDI_SPEC=%s/mofed" % VENDOR]}}, f)
    link = os.path.join(cdi_dir, "%s-mofed.json" % VENDOR)
    os.symlink(target, link)
    restart(h, "--device-list-strategy=cdi-cri")
    for f in ("gdrcopy", "mofed"):
        h.wait_log(r"level=warn.*Leaving a CDI spec of a feature that is off or absent in place.*class=%s" % f,
                   timeout=10)
    check(os.path.isfile(foreign), "a spec gpulet did not write was removed")
    check(os.path.islink(link) and os.path.isfile(target), "a symlink was followed or removed")


def test_cdi_spec_dir(h):
    out = os.path.join(h.tmp, "specs")
    os.makedirs(out)
    chardev(h, "/dev/gdrdrv", 1)
    h.start_standin()
    restart(h, "--device-list-strategy=cdi-cri", "--gdrcopy-enabled", "--cdi-spec-dir", out)
    g = h.fixture_data()["gpus"][0]["uuid"]
    got = one(h, "nvidia.com/gpu", g)
    check(got["cdi"] == ["%s/gpu=%s" % (VENDOR, g), "%s/gdrcopy=all" % VENDOR], "names %r" % got["cdi"])
    check(sorted(os.listdir(out)) == ["%s-gdrcopy.json" % VENDOR, "%s-gpu.json" % VENDOR],
          "specs in --cdi-spec-dir: %s" % os.listdir(out))
    below = os.path.join(h.root, "var/run/cdi")
    left = os.listdir(below) if os.path.isdir(below) else []
    check(not left, "specs below --root: %s" % left)
    print("PASS --cdi-spec-dir: %s there, none below --root" % sorted(os.listdir(out)))


def test_no_gpu_waits(h):
    log = open(os.path.join(h.tmp, "wait.log"), "w+")
    p = subprocess.Popen([GPULET, "plugin", *h.base_args()], stdout=log, stderr=subprocess.STDOUT,
                         env=h.plugin_env())
    try:
        text = ""
        for _ in range(200):
            log.seek(0)
            text = log.read()
            if "No devices found. Waiting indefinitely." in text or p.poll() is not None:
                break
            time.sleep(0.05)
        check(p.poll() is None, "exited on a node without GPUs (default failOnInitError): %s" % text)
        check("No devices found. Waiting indefinitely." in text, "no waiting message: %s" % text)
        p.terminate()
        check(p.wait(10) == 0, "SIGTERM while waiting")
    finally:
        if p.poll() is None:
            p.kill()


test_no_gpu_waits.harness_args = {"fixture": "no-gpu"}


def test_lost_gpu_at_start(h):
    fx = h.fixture_data()
    h.start_standin()
    mark = h.start_plugin(wait_resources=("nvidia.com/gpu",))
    devs = h.wait_list("nvidia.com/gpu", start=mark)["devices"]
    ids = [d["id"] for d in devs]
    check(all(ids), "a device advertised with an empty ID: %r" % devs)
    good = [x["uuid"] for x in fx["gpus"] if not x.get("lost")]
    check(sorted(ids) == sorted(good), "advertised %r, want the GPUs NVML names %r" % (ids, good))
    h.wait_log(r"lost.*(left out|not advertised)", timeout=10)


test_lost_gpu_at_start.harness_args = {"fixture": "degraded"}

if __name__ == "__main__":
    run(test_imex)
    run(test_gated_specs)
    run(test_cdi_spec_dir)
    run(test_no_gpu_waits)
    run(test_lost_gpu_at_start)
