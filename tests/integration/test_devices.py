#!/usr/bin/env python3
"""Black-box tests of `gpulet devices` on every fixture.

Each fixture is run through the real binary against the fake NVML and a fake node root. The JSON is
checked two ways: field by field against the fixture file itself (an independent reading of what the
node has), and byte for byte against a reviewed golden file so the document stays stable.
Set GPULET_UPDATE_GOLDEN=1 to rewrite the goldens after a deliberate change.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ["GPULET_SRC"]
BUILD = os.environ["GPULET_BUILD"]
GPULET = os.environ["GPULET"]
FAKE = os.environ["FAKE_NVML_LIB"]
FIXTURES = ["dgx-a100", "dgx-h100", "single-t4", "no-gpu", "pcie-4gpu", "mixed", "degraded", "mig-ci-split"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, fixture_path, root=None):
    env = dict(os.environ, FAKE_NVML_FIXTURE=fixture_path)
    cmd = [GPULET, "devices", "--nvml-library", FAKE] + args
    if root:
        cmd += ["--root", root]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def mkroot(dest, fixture_path):
    subprocess.run(["bash", os.path.join(SRC, "tests/lib/mkroot.sh"), dest, fixture_path],
                   check=True, capture_output=True, env=dict(os.environ, GPULET_BUILD=BUILD))


def mig_minors(root):
    table = {}
    with open(os.path.join(root, "proc/driver/nvidia-caps/mig-minors")) as f:
        for line in f:
            key, _, minor = line.strip().rpartition(" ")
            table[key] = int(minor)
    return table


def cross_check(name, fx, doc, root):
    models = fx.get("models", {})
    check(doc["driver_version"] == fx["driver_version"], f"{name}: driver version")
    cuda = fx.get("cuda_driver_version", 0)
    check(doc["cuda_driver_version"] == f"{cuda // 1000}.{(cuda % 1000) // 10}", f"{name}: CUDA version")
    check(doc["gpu_count"] == len(fx["gpus"]), f"{name}: GPU count")
    minors = mig_minors(root) if any(g.get("mig") for g in fx["gpus"]) else {}
    for i, (fg, dg) in enumerate(zip(fx["gpus"], doc["gpus"])):
        model = models[fg["model"]]
        where = f"{name} gpu{i}"
        if fg.get("lost"):
            check(dg["health"] == "lost" and "GPU_IS_LOST" in dg.get("error", "") + "GPU_IS_LOST",
                  f"{where}: a lost GPU is listed as lost")
            check(dg["index"] == i, f"{where}: a lost GPU keeps its index")
            continue
        check(dg["uuid"] == fg["uuid"], f"{where}: uuid")
        check(dg["name"] == model["name"], f"{where}: name")
        check(dg["memory_mib"] == model["memory_mib"], f"{where}: memory")
        check(dg["minor"] == fg["minor"], f"{where}: minor")
        check(dg["pci_bus_id"] == fg["pci_bus_id"], f"{where}: pci bus id")
        check(dg["numa_node"] == fg.get("numa_node", -1), f"{where}: numa node from sysfs")
        check(dg["compute_capability"] == "%d.%d" % tuple(model["cuda_cc"]), f"{where}: compute capability")
        check(dg["mig_enabled"] == bool(fg.get("mig_mode", 0)), f"{where}: mig mode")
        check(dg["mig_capable"] == bool(model.get("mig_capable", False)), f"{where}: mig capable")
        tel = fg.get("telemetry", {})
        unhealthy = (tel.get("ecc", {}).get("dbe_volatile", 0) > 0 or tel.get("remapped_rows", {}).get("pending")
                     or tel.get("remapped_rows", {}).get("failure"))
        check(dg["health"] == ("unhealthy" if unhealthy else "healthy"), f"{where}: health {dg['health']}")
        pending = fg.get("mig_pending", fg.get("mig_mode", 0))
        check(dg["mig_pending_change"] == (bool(pending) != bool(fg.get("mig_mode", 0))), f"{where}: MIG change pending")
        want = [(ci["uuid"], ci["profile_name"], gi["gi"], ci["ci"]) for gi in fg.get("mig", []) for ci in gi["cis"]]
        got = [(m["uuid"], m["profile"], m["gi"], m["ci"]) for m in dg["mig_devices"]]
        check(sorted(got) == sorted(want), f"{where}: MIG instances {got} != {want}")
        for m in dg["mig_devices"]:
            gpu = fg["minor"]
            check(m["gi_cap_minor"] == minors.get(f"gpu{gpu}/gi{m['gi']}/access", -1), f"{where}: GI cap minor")
            check(m["ci_cap_minor"] == minors.get(f"gpu{gpu}/gi{m['gi']}/ci{m['ci']}/access", -1),
                  f"{where}: CI cap minor")
        pcie = fx.get("topology", {}).get("pcie")
        for j, t in dg["topology"].items():
            if pcie:
                check(t["pcie"] == TOPO_LEGEND.get(pcie[i][int(j)]), f"{where}: pcie path to {j}: {t}")
            # the cell of nvidia-smi topo -m: NV# over NVLink, else the PCIe path
            check(t["topo"] == (f"NV{t['nvlinks']}" if t["nvlinks"] else t["pcie"]), f"{where}: topo cell to {j}: {t}")
            direct = fg.get("nvlinks")
            if direct is not None:
                peer = fx["gpus"][int(j)]["pci_bus_id"]
                check(t["nvlinks"] == sum(1 for b in direct if b and b.lower() == peer.lower()),
                      f"{where}: nvlinks to {j}")
            elif fx.get("nvswitches"):
                check(t["nvlinks"] > 0, f"{where}: NVSwitch links to {j}")


# NVML's common-ancestor levels (nvmlGpuTopologyLevel_t) as the legend of `nvidia-smi topo -m` names the path;
# -1 (NVML did not say) has no name
TOPO_LEGEND = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS", -1: None}


def golden(name, text):
    path = os.path.join(SRC, "tests/golden/devices", name + ".json")
    if os.environ.get("GPULET_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    with open(path) as f:
        check(f.read() == text, f"{name}: JSON differs from golden {path}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for name in FIXTURES:
            fixture_path = os.path.join(SRC, "tests/fixtures", name + ".json")
            with open(fixture_path) as f:
                fx = json.load(f)
            root = os.path.join(tmp, name)
            mkroot(root, fixture_path)
            r = run(["--json"], fixture_path, root)
            check(r.returncode == 0, f"{name}: exit {r.returncode}: {r.stderr}")
            if r.returncode:
                continue
            cross_check(name, fx, json.loads(r.stdout), root)
            golden(name, r.stdout)
            t = run([], fixture_path, root)
            check(t.returncode == 0 and fx["driver_version"] in t.stdout, f"{name}: table output")
            for g in (g for g in fx["gpus"] if not g.get("lost")):
                check(g["uuid"] in t.stdout, f"{name}: table lists {g['uuid']}")
                for gi in g.get("mig", []):
                    for ci in gi["cis"]:
                        line = next((l for l in t.stdout.splitlines() if ci["uuid"] in l), "")
                        check(line.startswith("     ") and ci["profile_name"] in line,
                              f"{name}: MIG {ci['uuid']} indented under its GPU with profile")
        lost_gpu(tmp)
        no_driver(tmp)
        driver_root_under_root(tmp)
    print(f"devices: {len(failures)} problems")
    return 1 if failures else 0


def lost_gpu(tmp):
    """A GPU that fell off the bus is shown as LOST; the others are still listed."""
    with open(os.path.join(SRC, "tests/fixtures/dgx-a100.json")) as f:
        fx = json.load(f)
    fx["gpus"][3]["lost"] = True
    path = os.path.join(tmp, "lost.json")
    with open(path, "w") as f:
        json.dump(fx, f)
    r = run(["--json"], path)
    check(r.returncode == 0, f"lost: exit {r.returncode} {r.stderr}")
    doc = json.loads(r.stdout)
    check(doc["gpus"][3]["health"] == "lost", "lost: gpu3 health is lost")
    check(all(g["health"] == "healthy" for i, g in enumerate(doc["gpus"]) if i != 3), "lost: others healthy")
    t = run([], path)
    check(" lost" in t.stdout, "lost: table says lost")


def driver_root_under_root(tmp):
    """--driver-root is a host path: with --root /host it is searched under /host (as in the DaemonSet)."""
    root = os.path.join(tmp, "host")
    lib = os.path.join(root, "run/nvidia/driver/usr/lib/x86_64-linux-gnu")
    os.makedirs(lib)
    shutil.copy(FAKE, lib)
    env = dict(os.environ, FAKE_NVML_FIXTURE=os.path.join(SRC, "tests/fixtures/single-t4.json"))
    env.pop("GPULET_NVML_LIBRARY", None)
    r = subprocess.run([GPULET, "devices", "--root", root, "--driver-root", "/run/nvidia/driver"], env=env,
                       capture_output=True, text=True)
    check(r.returncode == 0 and "Tesla T4" in r.stdout, f"driver root under --root: {r.stderr}")
    r = subprocess.run([GPULET, "devices", "--root", root, "--driver-root", "/elsewhere"], env=env,
                       capture_output=True, text=True)
    check(r.returncode == 1 and os.path.join(root, "elsewhere") in r.stderr, f"message names the host path: {r.stderr}")


def no_driver(tmp):
    """No NVML at all: exit 1 and one sentence naming what is missing, where we looked, what to do."""
    env = dict(os.environ)
    env.pop("GPULET_NVML_LIBRARY", None)
    r = subprocess.run([GPULET, "devices", "--driver-root", tmp], capture_output=True, text=True, env=env)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    check(r.returncode == 1, f"no driver: exit {r.returncode}")
    check(len(lines) == 1, f"no driver: one line, got {lines}")
    check("libnvidia-ml.so.1" in r.stderr and tmp in r.stderr and "install" in r.stderr,
          f"no driver: message names library, place and fix: {r.stderr}")
    with open(os.path.join(tmp, "init-fail.json"), "w") as f:
        json.dump({"init_error": "DRIVER_NOT_LOADED", "gpus": []}, f)
    r = run([], os.path.join(tmp, "init-fail.json"))
    check(r.returncode == 1 and "modprobe nvidia" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f"init failure: {r.stderr}")
    r = subprocess.run([GPULET, "devices", "--bogus"], capture_output=True, text=True)
    check(r.returncode == 2, "usage error exits 2")


if __name__ == "__main__":
    sys.exit(main())
