#!/usr/bin/python3
"""gpulet labels against NVIDIA's gpu-feature-discovery (k8s-device-plugin oraclelib.KDP, v0.19.3, built
from its Go module by tests/lib/gopeers.py), on every fixture's fake node for each MIG strategy and sharing
config: both run --oneshot --no-timestamp with the same config file and DMI product name, GFD with
the fake NVML on its library path and the root's PCI sysfs bound over /sys/bus/pci/devices in a
private mount namespace (it reads vendor, class and BARs there; docs/reference/oracles.md §3).

Labels are compared key by key; every difference must match an entry of ALLOWED, whose id is argued
in docs/reference/oracles.md; an entry that matches nothing fails too.
"""
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oraclelib  # noqa: E402
from test_cdi_testlib import BUILD, FAKE, FIXTURES, GPULET, check, finish, fixture_path, mkroot  # noqa: E402

STRATEGIES = ("none", "single", "mixed")
# sharing config (the plugin's v1 config file both read) -> its content; None: no file
SHARING = {
    "none": None,
    "timeslicing": {"version": "v1", "sharing": {"timeSlicing": {"resources": [
        {"name": "nvidia.com/gpu", "replicas": 4}, {"name": "nvidia.com/mig-1g.5gb", "replicas": 2}]}}},
    "timeslicing-rename": {"version": "v1", "sharing": {"timeSlicing": {"renameByDefault": True, "resources": [
        {"name": "nvidia.com/gpu", "replicas": 4}, {"name": "nvidia.com/mig-1g.10gb", "replicas": 3}]}}},
    "mps": {"version": "v1", "sharing": {"mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}},
}
MACHINE = "NVIDIA DGX A100 920-23687-2530-000\n"
DMI = "sys/class/dmi/id/product_name"
ALLOWED = [
    (r"outcome:gfd-fails:degraded/(none|single|mixed)", "G2"),
]
# GFD environment variables that must not leak in from the suite's environment
ENV_CLEAR = {"CONFIG_FILE", "GFD_CONFIG_FILE", "MIG_STRATEGY", "GFD_MIG_STRATEGY", "NODE_NAME", "KUBECONFIG",
             "GFD_OUTPUT_FILE", "GFD_ONESHOT", "GFD_NO_TIMESTAMP", "GFD_SLEEP_INTERVAL", "FAIL_ON_INIT_ERROR",
             "GFD_FAIL_ON_INIT_ERROR", "DEVICE_DISCOVERY_STRATEGY", "GFD_MACHINE_TYPE_FILE",
             "USE_NODE_FEATURE_API", "GFD_USE_NODE_FEATURE_API"}


def pci_resources(root):
    """Each GPU's sysfs `resource` (BAR table) that go-nvlib's nvpci requires; the values do not
    reach a label."""
    devs = os.path.join(root, "sys/bus/pci/devices")
    os.makedirs(devs, exist_ok=True)  # no-gpu has none: the mount point must exist
    for d in os.listdir(devs):
        with open(os.path.join(devs, d, "resource"), "w") as f:
            f.write("0x00000000c0000000 0x00000000c0ffffff 0x0000000000040200\n" +
                    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n" * 12)


def parse(text):
    """label -> value; a comment line (NFD's feature file reader skips lines starting with #) as
    the key '#' so it is compared too."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            out["#"] = line
        elif line.strip():
            k, _, v = line.partition("=")
            out[k] = v
    return out


def run_pair(bins, fx, root, strategy, config, tmp):
    env = {k: v for k, v in os.environ.items() if k not in ENV_CLEAR}
    env["FAKE_NVML_FIXTURE"] = fixture_path(fx)
    common = ["--oneshot", "--no-timestamp", "--mig-strategy", strategy]
    if config:
        common += ["--config-file", config]
    gfd_out = os.path.join(tmp, "gfd-labels")
    if os.path.exists(gfd_out):
        os.unlink(gfd_out)
    gfd = subprocess.run(
        ["unshare", "-m", "sh", "-c", 'mount --bind "$0/sys/bus/pci/devices" /sys/bus/pci/devices && '
         'mount --bind "$0/dev" /dev && shift && exec "$@"', root, "--", bins["gpu-feature-discovery"]] + common +
        # the NodeFeature API is GFD's default from v0.19 on: the feature file is what gpulet writes
        ["--use-node-feature-api=false", "--output-file", gfd_out, "--machine-type-file", os.path.join(root, DMI)],
        env=dict(env, LD_LIBRARY_PATH=os.path.dirname(FAKE)), capture_output=True, text=True, timeout=120)
    ours = subprocess.run([GPULET, "labels", "--nvml-library", FAKE, "--root", root, "--output-file", "-"] + common,
                          env=env, capture_output=True, text=True, timeout=60)
    theirs = parse(open(gfd_out).read()) if gfd.returncode == 0 and os.path.exists(gfd_out) else None
    err = (gfd.stderr.strip().splitlines() or [""])[-1]
    return theirs, (parse(ours.stdout) if ours.returncode == 0 else None), err, ours.stderr.strip()


def main():
    t0 = time.monotonic()
    bins = oraclelib.build_kdp()
    print("gpu-feature-discovery %s ready in %.1f s" % (oraclelib.KDP[2], time.monotonic() - t0))
    allow = oraclelib.AllowList(ALLOWED)
    per_arg = collections.Counter()
    with tempfile.TemporaryDirectory(prefix="labels-oracle.") as tmp:
        for fx in FIXTURES:
            root = os.path.join(tmp, fx)
            mkroot(root, fx)
            pci_resources(root)
            os.makedirs(os.path.dirname(os.path.join(root, DMI)), exist_ok=True)
            with open(os.path.join(root, DMI), "w") as f:
                f.write(MACHINE)
            for sharing, cfg in SHARING.items():
                config = None
                if cfg:
                    config = os.path.join(tmp, sharing + ".json")
                    with open(config, "w") as f:
                        json.dump(cfg, f)
                for strategy in STRATEGIES:
                    case = "%s/%s/%s" % (fx, strategy, sharing)
                    theirs, ours, their_err, our_err = run_pair(bins, fx, root, strategy, config, tmp)
                    items = []
                    if theirs is None or ours is None:
                        if (theirs is None) != (ours is None):
                            items.append(("outcome:%s-fails:%s/%s" % ("gfd" if theirs is None else "gpulet", fx,
                                                                      strategy), their_err or our_err))
                    else:
                        for k in sorted(set(theirs) | set(ours)):
                            if theirs.get(k) != ours.get(k):
                                kind = "missing" if k not in ours else "extra" if k not in theirs else "value"
                                items.append(("%s:%s" % (kind, k), "GFD %r, gpulet %r" % (theirs.get(k),
                                                                                         ours.get(k))))
                    for key, detail in items:
                        arg = allow.argument(key)
                        if arg is None:
                            check(False, "%s: %s -- %s" % (case, key, detail))
                        else:
                            per_arg[arg] += 1
                    print("%-34s GFD: %-5s gpulet: %-5s differences: %d" % (
                        case, len(theirs) if theirs is not None else "fail", len(ours) if ours is not None else "fail",
                        len(items)))
    for p in allow.problems():
        check(False, p)
    print("allowed differences by argument (docs/reference/oracles.md):",
          ", ".join("%s %d" % kv for kv in sorted(per_arg.items())))
    return finish("gpulet's labels match GFD %s on %d fixtures x %d strategies x %d configs but for the argued "
                  "differences" % (oraclelib.KDP[2], len(FIXTURES), len(STRATEGIES), len(SHARING)))


if __name__ == "__main__":
    sys.exit(main())
