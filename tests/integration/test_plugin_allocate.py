#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Allocate, field by field, for every --device-list-strategy (alone and all at once), both
--device-id-strategy values, --pass-device-specs (control nodes present under the dev root,
/dev/nvidia<minor>, MIG caps from mig-minors, --dev-root prefix), replica-ID stripping and
de-duplication, MPS/GDRCopy/GDS/MOFED/IMEX extras. The expected values are computed here from
the fixture and the node root, not taken from gpulet. Facts: docs/reference/device-plugin.md §3.4."""
import os
import re

from plugin_lib import check, run

KIND = "k8s.device-plugin.nvidia.com/gpu"
ROOT = "/var/run/nvidia-container-devices"


def restart(h, *args, wait=("nvidia.com/gpu",)):
    if h.plugin:
        check(h.stop_plugin() == 0, "plugin did not stop cleanly")
    h.start_plugin(*args, wait_resources=wait)


def fields(cr):
    return {"envs": dict(cr.envs), "mounts": [(m.container_path, m.host_path, m.read_only) for m in cr.mounts],
            "devices": [(d.container_path, d.host_path, d.permissions) for d in cr.devices],
            "annotations": dict(cr.annotations), "cdi": [c.name for c in cr.cdi_devices]}


def one(h, resource, *ids):
    r = h.allocate(resource, list(ids))
    check(len(r.container_responses) == 1, "%d container responses" % len(r.container_responses))
    return fields(r.container_responses[0])


def expect(got, **want):
    full = {"envs": {}, "mounts": [], "devices": [], "annotations": {}, "cdi": []}
    full.update(want)
    check(got == full, "Allocate response\n  got  %r\n  want %r" % (got, full))


def test_allocate_strategies(h):
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"]]
    h.start_standin()

    # envvar (default) + uuid: IDs de-duplicated in request order; two containers, two responses
    restart(h)
    expect(one(h, "nvidia.com/gpu", g[1], g[0], g[1]), envs={"NVIDIA_VISIBLE_DEVICES": "%s,%s" % (g[1], g[0])})
    r = h.allocate("nvidia.com/gpu", [g[0]], [g[2], g[3]])
    check([dict(c.envs)["NVIDIA_VISIBLE_DEVICES"] for c in r.container_responses] == [g[0], "%s,%s" % (g[2], g[3])],
          "two containers: %r" % r)

    # envvar + index
    restart(h, "--device-id-strategy=index")
    expect(one(h, "nvidia.com/gpu", g[2], g[0]), envs={"NVIDIA_VISIBLE_DEVICES": "2,0"})

    # volume-mounts
    restart(h, "--device-list-strategy=volume-mounts")
    expect(one(h, "nvidia.com/gpu", g[0], g[3]), envs={"NVIDIA_VISIBLE_DEVICES": ROOT},
           mounts=[(ROOT + "/" + g[0], "/dev/null", False), (ROOT + "/" + g[3], "/dev/null", False)])

    # cdi-annotations: key <prefix>nvidia-device-plugin_<uuid>, comma-joined qualified names, nothing else
    restart(h, "--device-list-strategy=cdi-annotations")
    got = one(h, "nvidia.com/gpu", g[0], g[1])
    check(len(got["annotations"]) == 1, "annotations %r" % got["annotations"])
    key, val = next(iter(got["annotations"].items()))
    check(re.fullmatch(r"cdi\.k8s\.io/nvidia-device-plugin_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                       r"[0-9a-f]{12}", key), "annotation key %r" % key)
    expect(got, annotations={key: "%s=%s,%s=%s" % (KIND, g[0], KIND, g[1])})
    key2 = next(iter(one(h, "nvidia.com/gpu", g[0])["annotations"]))
    check(key2 != key, "annotation key must be unique per response")

    # custom prefix (env, like the helm chart sets it) + index IDs
    restart(h, "--device-list-strategy=cdi-annotations", "--device-id-strategy=index")
    h.stop_plugin()
    h.start_plugin("--device-list-strategy=cdi-annotations", "--device-id-strategy=index",
                   env={"CDI_ANNOTATION_PREFIX": "cdi.example.com/"})
    got = one(h, "nvidia.com/gpu", g[4])
    key = next(iter(got["annotations"]))
    check(key.startswith("cdi.example.com/nvidia-device-plugin_"), "prefixed key %r" % key)
    expect(got, annotations={key: KIND + "=4"})

    # cdi-cri: CDIDevice names (field 5)
    restart(h, "--device-list-strategy=cdi-cri")
    expect(one(h, "nvidia.com/gpu", g[5], g[2]), cdi=["%s=%s" % (KIND, g[5]), "%s=%s" % (KIND, g[2])])

    # all four at once: CDI fields plus env/mounts; volume-mounts replaces the envvar list (as upstream)
    restart(h, "--device-list-strategy=envvar,volume-mounts,cdi-annotations,cdi-cri")
    got = one(h, "nvidia.com/gpu", g[0])
    key = next(iter(got["annotations"]))
    expect(got, envs={"NVIDIA_VISIBLE_DEVICES": ROOT}, mounts=[(ROOT + "/" + g[0], "/dev/null", False)],
           annotations={key: KIND + "=" + g[0]}, cdi=[KIND + "=" + g[0]])
    # the same, as a repeated flag
    restart(h, "--device-list-strategy=envvar", "--device-list-strategy=cdi-cri")
    expect(one(h, "nvidia.com/gpu", g[1]), envs={"NVIDIA_VISIBLE_DEVICES": g[1]}, cdi=[KIND + "=" + g[1]])

    # extras: GDRCopy/GDS/MOFED envs, IMEX channel 0 in every strategy (its node exists: upstream
    # hands out only channels it finds, test_plugin_extras.py)
    chan = os.path.join(h.root, "dev/nvidia-caps-imex-channels/channel0")
    os.makedirs(os.path.dirname(chan), exist_ok=True)
    os.mknod(chan, 0o20666, os.makedev(511, 0))
    restart(h, "--gdrcopy-enabled", "--gds-enabled=true", "--mofed-enabled", "--imex-channel-ids=0",
            "--device-list-strategy=envvar,cdi-cri", "--pass-device-specs")
    got = one(h, "nvidia.com/gpu", g[0])
    check(got["envs"] == {"NVIDIA_GDRCOPY": "enabled", "NVIDIA_GDS": "enabled", "NVIDIA_MOFED": "enabled",
                          "NVIDIA_VISIBLE_DEVICES": g[0], "NVIDIA_IMEX_CHANNELS": "0"}, "envs %r" % got["envs"])
    check(got["cdi"] == [KIND + "=" + g[0], "k8s.device-plugin.nvidia.com/imex-channel=0"], "cdi %r" % got["cdi"])
    check(("/dev/nvidia-caps-imex-channels/channel0", "/dev/nvidia-caps-imex-channels/channel0", "rw")
          in got["devices"], "imex device spec missing: %r" % got["devices"])


def test_allocate_device_specs(h):
    fx = h.fixture_data()
    gpus = fx["gpus"]
    h.start_standin()
    os.unlink(os.path.join(h.root, "dev/nvidia-modeset"))  # absent nodes are not handed out
    ctl = [p for p in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
           if os.path.exists(h.root + p)]
    check(ctl == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"], "root has %r" % ctl)

    restart(h, "--pass-device-specs", "--mig-strategy=mixed",
            wait=("nvidia.com/gpu", "nvidia.com/mig-1g.5gb"))
    got = one(h, "nvidia.com/gpu", gpus[1]["uuid"], gpus[3]["uuid"])
    want = [(p, p, "rw") for p in ctl + ["/dev/nvidia%d" % gpus[1]["minor"], "/dev/nvidia%d" % gpus[3]["minor"]]]
    expect(got, envs={"NVIDIA_VISIBLE_DEVICES": "%s,%s" % (gpus[1]["uuid"], gpus[3]["uuid"])}, devices=want)

    # MIG: the parent's /dev/nvidia<minor> plus the GI and CI access caps from mig-minors
    migs = [(gi_idx, gp, gi, ci) for gi_idx, gp in enumerate(gpus) if gp.get("mig_mode")
            for gi in gp["mig"] for ci in gi["cis"] if ci["profile_name"] == "1g.5gb"]
    check(len(migs) >= 2, "fixture has %d 1g.5gb instances" % len(migs))
    (i1, p1, gi1, ci1), (i2, p2, gi2, ci2) = migs[0], migs[1]
    got = one(h, "nvidia.com/mig-1g.5gb", ci1["uuid"], ci2["uuid"])
    caps = []
    for p, gi, ci in ((p1, gi1, ci1), (p2, gi2, ci2)):
        for path in ("/dev/nvidia%d" % p["minor"],
                     "/dev/nvidia-caps/nvidia-cap%d" % h.mig_minor(p["minor"], gi["gi"]),
                     "/dev/nvidia-caps/nvidia-cap%d" % h.mig_minor(p["minor"], gi["gi"], ci["ci"])):
            if path not in caps:
                caps.append(path)
    expect(got, envs={"NVIDIA_VISIBLE_DEVICES": "%s,%s" % (ci1["uuid"], ci2["uuid"])},
           devices=[(p, p, "rw") for p in ctl + caps])

    # MIG index IDs: "<gpu index>:<mig index>"
    restart(h, "--mig-strategy=mixed", "--device-id-strategy=index", wait=("nvidia.com/mig-1g.5gb",))
    order = [c["uuid"] for gi in p1["mig"] for c in gi["cis"]]
    got = one(h, "nvidia.com/mig-1g.5gb", ci1["uuid"])
    check(got["envs"] == {"NVIDIA_VISIBLE_DEVICES": "%d:%d" % (i1, order.index(ci1["uuid"]))}, "MIG index %r" % got)

    # --dev-root: host paths are prefixed, existence is checked below it
    os.makedirs(os.path.join(h.root, "hostdev"))
    os.symlink("../dev", os.path.join(h.root, "hostdev/dev"))
    restart(h, "--pass-device-specs", "--dev-root=/hostdev")
    got = one(h, "nvidia.com/gpu", gpus[0]["uuid"])
    check(got["devices"] == [(p, "/hostdev" + p, "rw") for p in ctl + ["/dev/nvidia%d" % gpus[0]["minor"]]],
          "dev-root specs %r" % got["devices"])
    # NVIDIA_DEV_ROOT unset: falls back to the driver root
    restart(h, "--pass-device-specs", "--driver-root=/hostdev")
    got = one(h, "nvidia.com/gpu", gpus[0]["uuid"])
    check(got["devices"][0] == ("/dev/nvidiactl", "/hostdev/dev/nvidiactl", "rw"), "driver-root specs %r" % got)


def test_allocate_replicas(h):
    fx = h.fixture_data()
    g = [x["uuid"] for x in fx["gpus"]]
    cfg = os.path.join(h.tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                "      replicas: 4\n")
    h.start_standin()
    restart(h, "--config-file", cfg)
    devs = h.wait_list("nvidia.com/gpu")["devices"]
    check([d["id"] for d in devs] == ["%s::%d" % (u, k) for u in g for k in range(4)], "replica list %r" % devs[:5])
    # two replicas of one GPU collapse to its UUID; a replica of another GPU adds it
    expect(one(h, "nvidia.com/gpu", g[0] + "::1", g[0] + "::3", g[2] + "::0"),
           envs={"NVIDIA_VISIBLE_DEVICES": "%s,%s" % (g[0], g[2])})
    restart(h, "--config-file", cfg, "--device-id-strategy=index", "--device-list-strategy=envvar,cdi-cri")
    expect(one(h, "nvidia.com/gpu", g[3] + "::0", g[3] + "::2"), envs={"NVIDIA_VISIBLE_DEVICES": "3"},
           cdi=[KIND + "=3"])

    # MPS: pipe dir env and the two mounts below --mps-root. Replicas are served only while the MPS
    # control daemon is ready (issue 15 §4; tested with NVIDIA's real binary in test_plugin_mps.py):
    # here a stand-in answers the plugin's probe and the root has the .ready file.
    with open(cfg, "w") as f:
        f.write("version: v1\nsharing:\n  mps:\n    resources:\n    - name: gpu\n      replicas: 2\n")
    os.makedirs(os.path.join(h.root, "run/nvidia/mps"), exist_ok=True)
    open(os.path.join(h.root, "run/nvidia/mps/.ready"), "w").close()
    ctl = os.path.join(h.root, "usr/bin/nvidia-cuda-mps-control")
    os.makedirs(os.path.dirname(ctl), exist_ok=True)
    with open(ctl, "w") as f:
        f.write("#!/bin/sh\nread cmd\n[ \"$cmd\" = get_default_active_thread_percentage ] && echo 100.0\n")
    os.chmod(ctl, 0o755)
    restart(h, "--config-file", cfg, "--mps-root=/run/nvidia/mps")
    expect(one(h, "nvidia.com/gpu", g[0] + "::1"),
           envs={"CUDA_MPS_PIPE_DIRECTORY": "/mps/nvidia.com/gpu/pipe", "NVIDIA_VISIBLE_DEVICES": g[0]},
           mounts=[("/mps/nvidia.com/gpu/pipe", "/run/nvidia/mps/nvidia.com/gpu/pipe", False),
                   ("/dev/shm", "/run/nvidia/mps/shm", False)])
    # both sides from the one MPS root layout (plugin/mps.h), joined as upstream's filepath.Join: a
    # trailing slash of --mps-root adds none to the paths
    restart(h, "--config-file", cfg, "--mps-root=/run/nvidia/mps/")
    expect(one(h, "nvidia.com/gpu", g[0] + "::1"),
           envs={"CUDA_MPS_PIPE_DIRECTORY": "/mps/nvidia.com/gpu/pipe", "NVIDIA_VISIBLE_DEVICES": g[0]},
           mounts=[("/mps/nvidia.com/gpu/pipe", "/run/nvidia/mps/nvidia.com/gpu/pipe", False),
                   ("/dev/shm", "/run/nvidia/mps/shm", False)])


def test_allocate_cdi_spec(h):
    """Every CDI name Allocate returns resolves in the spec the plugin wrote to /var/run/cdi, and a
    SIGHUP that switches --device-id-strategy rewrites the spec with the new names."""
    import json
    import signal
    import time
    fx = h.fixture_data()
    spec_path = os.path.join(h.root, "var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json")
    cfg = os.path.join(h.tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("version: v1\nflags:\n  migStrategy: mixed\n  plugin:\n    deviceListStrategy: [cdi-annotations, cdi-cri]\n")
    h.start_standin()
    restart(h, "--config-file", cfg, wait=("nvidia.com/gpu", "nvidia.com/mig-1g.5gb"))

    def spec_names():
        with open(spec_path) as f:
            spec = json.load(f)
        check(spec["kind"] == KIND, "spec kind %r" % spec["kind"])
        return {KIND + "=" + d["name"] for d in spec["devices"]}

    names = spec_names()
    gpu = fx["gpus"][0]["uuid"]
    mig = fx["gpus"][6]["mig"][2]["cis"][0]["uuid"]
    for res, ids in (("nvidia.com/gpu", [gpu]), ("nvidia.com/mig-1g.5gb", [mig])):
        got = one(h, res, *ids)
        check(got["cdi"] and set(got["cdi"]) <= names, "names %r not all in the spec %r" % (got["cdi"], sorted(names)))
        check(set(next(iter(got["annotations"].values())).split(",")) == set(got["cdi"]), "annotation %r" % got)

    with open(cfg, "a") as f:
        f.write("    deviceIDStrategy: index\n")
    mark = h.events.mark()
    h.plugin.send_signal(signal.SIGHUP)
    h.wait_list("nvidia.com/mig-1g.5gb", start=mark)
    deadline = time.time() + 5
    while KIND + "=0" not in spec_names() and time.time() < deadline:
        time.sleep(0.05)
    names = spec_names()
    got = one(h, "nvidia.com/mig-1g.5gb", mig)
    check(got["cdi"] == [KIND + "=6:2"] and set(got["cdi"]) <= names, "index names %r vs spec %r" % (got, sorted(names)))


def test_allocate_cdi_mig_none(h):
    """--mig-strategy=none (the default) with cdi-cri advertises a MIG-enabled GPU whole: the spec
    the plugin wrote defines it (its /dev/nvidia<minor>, no MIG caps), so every GPU's name resolves.
    A GPU still advertised but left out of the spec (its node is missing) is refused by Allocate with
    FAILED_PRECONDITION naming the device, never handed out as a name no spec defines."""
    import json
    import grpc
    fx = h.fixture_data()
    spec_path = os.path.join(h.root, "var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json")
    h.start_standin()
    restart(h, "--device-list-strategy=cdi-cri")
    with open(spec_path) as f:
        devices = {d["name"]: d for d in json.load(f)["devices"]}
    migged = [g for g in fx["gpus"] if g.get("mig_mode")]
    check(migged, "the fixture has no MIG-enabled GPU")
    for g in fx["gpus"]:
        got = one(h, "nvidia.com/gpu", g["uuid"])
        check(got["cdi"] == [KIND + "=" + g["uuid"]], "GPU %s: %r" % (g["uuid"], got))
        check(g["uuid"] in devices, "GPU %s (mig_mode %s) advertised but not in the spec %s"
              % (g["uuid"], g.get("mig_mode"), sorted(devices)))
    for g in migged:
        nodes = [n["path"] for n in devices[g["uuid"]]["containerEdits"]["deviceNodes"]]
        check("/dev/nvidia%d" % g["minor"] in nodes and not any("nvidia-caps" in n for n in nodes),
              "MIG-enabled GPU %s as a whole: nodes %r" % (g["uuid"], nodes))

    # a GPU NVML lists but whose node is gone: advertised, left out of the spec, refused by Allocate
    gone = fx["gpus"][5]
    os.unlink(os.path.join(h.root, "dev/nvidia%d" % gone["minor"]))
    restart(h, "--device-list-strategy=cdi-cri")
    h.wait_log(r"The CDI spec leaves this out")
    e = h.allocate_error("nvidia.com/gpu", [gone["uuid"]])
    check(e.code() == grpc.StatusCode.FAILED_PRECONDITION, "status %s (%s)" % (e.code(), e.details()))
    check(KIND + "=" + gone["uuid"] in e.details() and "not defined" in e.details(), "details %r" % e.details())
    h.wait_log(r"request rejected.*method=Allocate.*not defined in the plugin's CDI spec")
    got = one(h, "nvidia.com/gpu", fx["gpus"][0]["uuid"])
    check(got["cdi"] == [KIND + "=" + fx["gpus"][0]["uuid"]], "the other GPUs still allocate: %r" % got)


if __name__ == "__main__":
    run(test_allocate_strategies)
    run(test_allocate_device_specs)
    run(test_allocate_replicas)
    run(test_allocate_cdi_spec)
    run(test_allocate_cdi_mig_none)
