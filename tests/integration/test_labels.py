#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Black-box tests of `gpulet labels`: golden files per fixture x MIG strategy x sharing mode
(tests/golden/labels; regenerate with --update), each also checked key by key against an independent
model of GFD v0.20's label rules (docs/reference/gfd-labels.md); the plugin's config file and GFD's
flags and env vars with their precedence; the NFD feature file written atomically under --root,
relabeling, SIGHUP reload and removal on SIGTERM."""
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exporter_lib import FAKE, FIXTURES, GPULET, SRC, fixture  # noqa: E402

GOLDEN = os.path.join(SRC, "tests", "golden", "labels")
UPDATE = "--update" in sys.argv
FEATURE = "etc/kubernetes/node-feature-discovery/features.d/gfd"
EXTRA = os.path.join(FIXTURES, "extra")
NV = "nvidia.com/"
MACHINE = "  NVIDIA DGX A100 920-23687-2530-000 (rev 1)\n"  # DMI product_name, as read: trimmed, sanitised
# every fixture the fake NVML knows: tests/fixtures/*.json and the special-purpose extra/*.json
ALL = sorted([f[:-5] for f in os.listdir(FIXTURES) if f.endswith(".json")] +
             [f[:-5] for f in os.listdir(EXTRA) if f.endswith(".json")])
# sharing mode -> the plugin's v1 config file (None: no file); replicas name a MIG resource too,
# so the mixed strategy shows that only the resources the config names are replicated
SHARING = {
    "none": None,
    "timeslicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4},
                                  {"name": "nvidia.com/mig-1g.5gb", "replicas": 2}]},
    "timeslicing-rename": {"renameByDefault": True,
                           "resources": [{"name": "nvidia.com/gpu", "replicas": 4},
                                         {"name": "nvidia.com/mig-1g.10gb.me", "replicas": 3}]},
    "mps": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
}


def fixture_path(name):
    p = fixture(name)
    return p if os.path.exists(p) else os.path.join(EXTRA, name + ".json")


def read(path):
    with open(path) as f:
        return f.read()


def load(name):
    return json.loads(read(fixture_path(name)))


def read_until(stream, text, seconds):
    """What a process wrote to stream (read unbuffered from its fd) until text shows (fails after `seconds`)."""
    got, deadline = b"", time.time() + seconds
    while text.encode() not in got:
        left = deadline - time.time()
        if left <= 0 or not select.select([stream.fileno()], [], [], left)[0]:
            raise AssertionError("no %r within %ss in:\n%s" % (text, seconds, got.decode()))
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            raise AssertionError("the stream ended before %r:\n%s" % (text, got.decode()))
        got += chunk
    return got.decode()


def wait_until(pred, seconds):
    """Poll pred every 50 ms for up to `seconds`; the caller asserts what it waited for."""
    deadline = time.time() + seconds
    while time.time() < deadline and not pred():
        time.sleep(0.05)


def run(args, fixture_name, root, env=None, **kw):
    path = fixture_name if fixture_name.startswith("/") else fixture_path(fixture_name)
    e = {k: v for k, v in os.environ.items() if k not in ENV_CLEAR}
    e.update(FAKE_NVML_FIXTURE=path)
    e.update(env or {})
    return subprocess.run([GPULET, "labels", "--nvml-library", FAKE, "--root", root] + args, env=e,
                          capture_output=True, text=True, **kw)


# GFD's env vars: none may leak in from the environment the suite runs in
ENV_CLEAR = {"CONFIG_FILE", "GFD_CONFIG_FILE", "MIG_STRATEGY", "GFD_MIG_STRATEGY", "KUBECONFIG", "NODE_NAME",
             "KUBERNETES_SERVICE_HOST", "NAMESPACE", "POD_NAME",
             "USE_NODE_FEATURE_API", "GFD_USE_NODE_FEATURE_API", "GFD_OUTPUT_FILE", "GFD_ONESHOT",
             "GFD_NO_TIMESTAMP", "GFD_SLEEP_INTERVAL", "FAIL_ON_INIT_ERROR", "GFD_FAIL_ON_INIT_ERROR",
             "DEVICE_DISCOVERY_STRATEGY", "GFD_MACHINE_TYPE_FILE"}


def gpus_of(doc):
    """The fixture's GPUs with their model's facts merged in (what the fake NVML answers)."""
    out = []
    for g in doc.get("gpus", []):
        m = dict(doc.get("models", {}).get(g.get("model"), {}))
        m.update(g)
        out.append(m)
    return out


def sysfs_id(bus):
    return bus[4:].lower() if len(bus) == 16 else bus.lower()


def pci_config(vgpu):
    """256 bytes of config space; with vgpu, NVIDIA's vendor capability ("VF", record 0 = host driver)."""
    b = bytearray(256)
    b[0:2] = b"\xde\x10"
    b[0x06] = 0x10          # status: capability list
    b[0x34] = 0x40          # first capability: power management, then 0x60
    b[0x40:0x43] = bytes([0x01, 0x60, 0x08])
    if vgpu:
        rec = bytes([0, 22]) + vgpu["version"].encode().ljust(10, b"\0") + vgpu["branch"].encode().ljust(10, b"\0")
        cap = bytes([0x09, 0x00, 5 + len(rec)]) + b"VF" + rec
    else:
        cap = bytes([0x09, 0x00, 0x08, 0x01, 0x02, 0, 0, 0])  # a vendor capability that is not vGPU
    b[0x60:0x60 + len(cap)] = cap
    return bytes(b)


def make_root(doc, root):
    """The host facts GFD reads besides NVML: DMI product name, each GPU's PCI vendor/class/config."""
    def put(rel, data, mode="w"):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(data)
    put("sys/class/dmi/id/product_name", MACHINE)
    os.makedirs(os.path.join(root, "sys/bus/pci/devices"), exist_ok=True)
    for g in gpus_of(doc):
        d = "sys/bus/pci/devices/%s/" % sysfs_id(g["pci_bus_id"])
        sysfs = g.get("sysfs", {})
        put(d + "vendor", "0x10de\n")
        put(d + "class", sysfs.get("class", "0x030200") + "\n")
        put(d + "config", pci_config(sysfs.get("vgpu_host_driver")), "wb")


def config_file(root, strategy, sharing):
    """The plugin's v1 file with flags.migStrategy and the sharing section (JSON is YAML)."""
    doc = {"version": "v1", "flags": {"migStrategy": strategy}}
    if sharing != "none":
        doc["sharing"] = {"mps" if sharing == "mps" else "timeSlicing": SHARING[sharing]}
    path = os.path.join(root, "config-%s-%s.yaml" % (strategy, sharing))
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


# ---- an independent model of GFD v0.20's label rules (internal/lm), written from its source ----

def sanitise(s):
    s = re.sub(r"[^A-Za-z0-9-_. ]", "", s)
    return "-".join(s.split())


def family(major, minor):
    table = {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper", 10: "blackwell",
             12: "blackwell", 13: "rubin"}
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return table.get(major, "undefined")


def mig_devices(g):
    """(GFD name, attributes) of each MIG device of a GPU in MIG mode, in MIG index order."""
    profiles = {p["profile"]: p for p in g.get("gi_profiles", [])}
    out = []
    for gi in g.get("mig", []) if g.get("mig_mode") == 1 else []:
        p = profiles[gi["gi_profile"]]
        for ci in gi["cis"]:
            cs = ci.get("ci_slices", p["slices"])
            out.append((ci["profile_name"].replace("+", "."), {
                "memory": p["memory_mb"], "multiprocessors": p.get("sms", 0) * cs // p["slices"],
                "slices.gi": p["slices"], "slices.ci": cs, "engines.copy": p.get("ce", 0),
                "engines.decoder": p.get("dec", 0), "engines.encoder": p.get("enc", 0),
                "engines.jpeg": p.get("jpeg", 0), "engines.ofa": p.get("ofa", 0)}))
    return out


class Sharing:
    """The config's sharing: mode (a SHARING key, or "flags" for gpulet's --sharing-strategy time-slicing)."""
    def __init__(self, mode, rules=None, rename=False):
        section = SHARING.get(mode) or {}
        self.mode = mode
        self.rules = rules if rules is not None else {r["name"]: r["replicas"] for r in section.get("resources", [])}
        self.rename = rename or bool(section.get("renameByDefault"))
        self.strategy = "mps" if mode == "mps" else "time-slicing" if self.rules else "none"


def resource(res, sharing, count, parts):
    """resourceLabeler.baseLabeler; sharing None = the labeler GFD builds without sharing (MIG-enabled GPUs)."""
    replicas = 0 if sharing is None else sharing.rules.get(res, 1)
    product = "-".join(sanitise(p) for p in parts if p and sanitise(p))
    if replicas > 1 and not sharing.rename:
        product += "-SHARED"
    return {res + ".product": product, res + ".count": str(count), res + ".replicas": str(replicas),
            res + ".sharing-strategy": sharing.strategy if replicas > 1 else "none"}


def gfd_model(doc, strategy, sharing):
    """The labels GFD writes for this node, or None where it refuses (MPS with a MIG-enabled GPU)."""
    # deliberate difference (docs/reference/gfd-labels.md): a lost GPU is left out; GFD fails outright
    gpus = [g for g in gpus_of(doc) if not g.get("lost")]
    labels = {}
    if gpus:
        if sharing.mode == "mps" and any(g.get("mig_mode") == 1 for g in gpus):
            return None
        labels[NV + "gpu.machine"] = sanitise(MACHINE.strip())
        drv = doc["driver_version"].split(".")
        cuda = doc.get("cuda_driver_version", 12040)
        cmaj, cmin = str(cuda // 1000), str(cuda % 1000 // 10)
        rev = drv[2] if len(drv) > 2 else ""
        for k, v in (("driver-version.full", doc["driver_version"]), ("driver-version.major", drv[0]),
                     ("driver-version.minor", drv[1]), ("driver-version.revision", rev), ("driver.major", drv[0]),
                     ("driver.minor", drv[1]), ("driver.rev", rev), ("runtime-version.full", cmaj + "." + cmin),
                     ("runtime-version.major", cmaj), ("runtime-version.minor", cmin), ("runtime.major", cmaj),
                     ("runtime.minor", cmin)):
            labels[NV + "cuda." + k] = v
        labels[NV + "mig.capable"] = str(any(g.get("mig_capable") for g in gpus)).lower()
        labels[NV + "mps.capable"] = str(sharing.mode == "mps").lower()
        counts = {}
        for g in gpus:
            counts[g["name"]] = counts.get(g["name"], 0) + 1
        # per model: MIG-enabled GPUs (no sharing) then the others; GFD's order within a group is Go's map
        # order, ours (and so this model's) is from the highest first index down: the first GPU's model wins
        for enabled in (True, False):
            group = [g for g in gpus if (g.get("mig_mode") == 1) == enabled]
            names = []
            for g in group:
                if g["name"] not in names:
                    names.append(g["name"])
            for name in reversed(names):
                dev = [g for g in group if g["name"] == name][-1]  # GFD keeps the last one of each name
                labels.update(resource(NV + "gpu", None if enabled else sharing, counts[name], [name]))
                if dev["memory_mib"]:
                    labels[NV + "gpu.memory"] = str(dev["memory_mib"])
                if dev["cuda_cc"][0]:
                    labels[NV + "gpu.family"] = family(*dev["cuda_cc"])
                    labels[NV + "gpu.compute.major"] = str(dev["cuda_cc"][0])
                    labels[NV + "gpu.compute.minor"] = str(dev["cuda_cc"][1])
        if strategy != "none":
            labels[NV + "mig.strategy"] = strategy
            labels.update(mig_model(gpus, strategy, sharing))
        classes = {g.get("sysfs", {}).get("class", "0x030200") for g in gpus}
        labels[NV + "gpu.mode"] = {"0x030000": "graphics", "0x030200": "compute"}.get(
            classes.pop(), "unknown") if len(classes) == 1 else "unknown"
        fab = [g["fabric"] for g in gpus if g.get("fabric", {}).get("state", 3) == 3 and "fabric" in g and
               g["fabric"].get("status", "SUCCESS") == "SUCCESS"]
        if fab and len({f["cluster_uuid"] for f in fab}) == 1 and len({f["clique_id"] for f in fab}) == 1:
            labels[NV + "gpu.clique"] = "%s.%d" % (fab[0]["cluster_uuid"], fab[0]["clique_id"])
    every = sorted(gpus_of(doc), key=lambda g: sysfs_id(g["pci_bus_id"]))
    vgpus = [g["sysfs"]["vgpu_host_driver"] for g in every if g.get("sysfs", {}).get("vgpu_host_driver")]
    labels[NV + "vgpu.present"] = str(bool(vgpus)).lower()
    if vgpus:
        labels[NV + "vgpu.host-driver-version"] = vgpus[-1]["version"]
        labels[NV + "vgpu.host-driver-branch"] = vgpus[-1]["branch"]
    return labels


def mig_block(res, sharing, parent, name, attrs, count):
    out = resource(res, sharing, count, [parent["name"], "MIG", name])
    out.update({res + "." + k: str(v) for k, v in attrs.items()})
    return out


def mig_model(gpus, strategy, sharing):
    devs = [(g, n, a) for g in gpus for n, a in mig_devices(g)]
    if strategy == "mixed":
        out = {}
        for name in dict.fromkeys(n for _, n, _ in devs):
            first = next(d for d in devs if d[1] == name)
            out.update(mig_block(NV + "mig-" + name, sharing, first[0], name, first[2],
                                 sum(1 for d in devs if d[1] == name)))
        return out
    enabled = [g for g in gpus if g.get("mig_mode") == 1]
    if not enabled:
        return {}
    if any(not mig_devices(g) for g in enabled) or len(enabled) != len(gpus) or len({n for _, n, _ in devs}) != 1:
        model = sanitise(enabled[0]["name"])
        return {NV + "gpu.product": (model + "-" if model else "") + "MIG-INVALID", NV + "gpu.count": "0",
                NV + "gpu.replicas": "0", NV + "gpu.sharing-strategy": "", NV + "gpu.memory": "0"}
    g, name, attrs = devs[0]
    return mig_block(NV + "gpu", sharing, g, name, attrs, len(devs))


def parse_labels(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        k, _, v = line.partition("=")
        out[k] = v
    return out


def diff(want, got):
    keys = sorted(set(want) | set(got))
    return "\n".join("  %s: GFD %r, gpulet %r" % (k, want.get(k), got.get(k)) for k in keys
                     if want.get(k) != got.get(k))


def uniform_mig_fixture(dest):
    """mixed.json without its T4: one A100 with 7x 1g.5gb, the layout MIG "single" accepts."""
    doc = load("mixed")
    doc["gpus"] = doc["gpus"][1:]
    doc["topology"] = {"pcie": [[0]]}
    with open(dest, "w") as f:
        json.dump(doc, f)
    return dest


# fixture, golden name, extra args, sharing for the model (gpulet's own flags; the file cases are in ALL)
FLAG_CASES = [
    ("dgx-h100", "time-slicing", ["--sharing-strategy", "time-slicing", "--replicas", "4"],
     ("flags", {"nvidia.com/gpu": 4}, False)),
    ("dgx-h100", "time-slicing-renamed", ["--sharing-strategy", "time-slicing", "--replicas", "4",
                                          "--rename-by-default"], ("flags", {"nvidia.com/gpu": 4}, True)),
    ("dgx-a100", "custom", ["--mig-strategy", "mixed", "--gpu-type", "auto", "--gpu-mig-label"],
     ("none", None, False)),
]


class Golden(unittest.TestCase):
    """Every fixture x MIG strategy x sharing mode: byte for byte against tests/golden/labels, and
    key by key against the model of GFD's rules above (an independent reading of its source)."""

    def check(self, fx, doc, root, name, args, strategy, sharing):
        p = run(["--oneshot", "--no-timestamp", "--output-file", "-"] + args, fx, root)
        want = gfd_model(doc, strategy, sharing)
        fx = os.path.basename(fx)[:-5] if fx.startswith("/") else fx
        path = os.path.join(GOLDEN, "%s.%s.txt" % (fx, name))
        if want is None:  # GFD refuses: no labels, an error
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertEqual(p.stdout, "")
            self.assertIn("MPS sharing is not supported with MIG", p.stderr)
            self.assertFalse(os.path.exists(path), "stale golden " + path)
            return 0
        self.assertEqual(p.returncode, 0, p.stderr)
        got = parse_labels(p.stdout)
        for k in ("gpu-type", "gpu-mig"):
            got.pop(k, None)
        self.assertEqual(want, got, "labels of %s %s differ from GFD's rules:\n%s" % (fx, name, diff(want, got)))
        if UPDATE:
            with open(path, "w") as f:
                f.write(p.stdout)
        self.assertEqual(p.stdout, read(path), "labels of %s %s changed (see %s)" % (fx, name, path))
        return 1

    def test_golden(self):
        root = tempfile.mkdtemp()
        uniform = uniform_mig_fixture(os.path.join(root, "a100-mig-uniform.json"))
        n = 0
        try:
            for fx in ALL + ["a100-mig-uniform"]:
                doc = json.loads(read(uniform)) if fx == "a100-mig-uniform" else load(fx)
                froot = os.path.join(root, fx)
                make_root(doc, froot)
                for strategy in ("none", "single", "mixed"):
                    for sharing in SHARING:
                        name = strategy if sharing == "none" else "%s.%s" % (strategy, sharing)
                        args = ["--mig-strategy", strategy] if sharing == "none" else \
                            ["--config-file", config_file(root, strategy, sharing)]
                        with self.subTest(fixture=fx, case=name):
                            n += self.check(uniform if fx == "a100-mig-uniform" else fx, doc, froot, name, args,
                                            strategy, Sharing(sharing))
            for fx, name, args, (mode, rules, rename) in FLAG_CASES:
                with self.subTest(fixture=fx, case=name):
                    strategy = args[args.index("--mig-strategy") + 1] if "--mig-strategy" in args else "none"
                    n += self.check(fx, load(fx), os.path.join(root, fx), name, args, strategy,
                                    Sharing(mode, rules, rename))
        finally:
            shutil.rmtree(root)
        print("labels_golden: %d goldens checked against GFD's rules" % n, file=sys.stderr)
        self.assertGreater(n, 100)


class FeatureFile(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.out = os.path.join(self.root, FEATURE)
        os.makedirs(os.path.dirname(self.out))
        os.makedirs(os.path.join(self.root, "sys/class/dmi/id"))
        with open(os.path.join(self.root, "sys/class/dmi/id/product_name"), "w") as f:
            f.write("DGX A100\n")

    def tearDown(self):
        shutil.rmtree(self.root)

    def test_oneshot_writes_default_path(self):
        p = run(["--oneshot"], "single-t4", self.root)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = os.stat(self.out)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o644)
        text = read(self.out)
        self.assertIn("nvidia.com/gpu.product=Tesla-T4\n", text)
        self.assertIn("nvidia.com/gpu.machine=DGX-A100\n", text)
        self.assertRegex(text, r"\nnvidia.com/gfd.timestamp=\d{10}\n")
        self.assertEqual(os.listdir(os.path.dirname(self.out)), ["gfd"])  # no temp file left
        for line in text.splitlines():  # NFD format: comments or <ns>/<name>=<value>
            self.assertRegex(line, r"^(#.*|[a-z0-9.-]+/[A-Za-z0-9._-]+=[A-Za-z0-9._-]*)$")
        self.assertLess(len(text), 65536)  # NFD ignores larger files

    def test_gfd_env_vars(self):
        out = os.path.join(self.root, "custom")
        p = run([], "dgx-a100", self.root, env={"GFD_ONESHOT": "true", "GFD_NO_TIMESTAMP": "true",
                                                 "GFD_OUTPUT_FILE": "/custom", "MIG_STRATEGY": "mixed"})
        self.assertEqual(p.returncode, 0, p.stderr)
        text = read(out)
        self.assertIn("nvidia.com/mig.strategy=mixed\n", text)
        self.assertNotIn("gfd.timestamp", text)
        self.assertFalse(os.path.exists(self.out))

    def test_refuses_symlink(self):
        os.symlink("/etc/passwd", self.out)
        p = run(["--oneshot"], "single-t4", self.root)
        self.assertEqual(p.returncode, 1)
        self.assertTrue(os.path.islink(self.out))

    def test_usage_errors(self):
        for args in (["--mig-strategy", "bogus"], ["--sleep-interval", "soon"], ["--sharing-strategy", "mps"]):
            p = run(args, "single-t4", self.root)
            self.assertEqual(p.returncode, 2, args)

    def test_nvml_failure(self):
        p = subprocess.run([GPULET, "labels", "--oneshot", "--nvml-library", "/nonexistent.so", "--root", self.root],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertFalse(os.path.exists(self.out))
        # --fail-on-init-error=false: label what can be labelled and carry on
        p = subprocess.run([GPULET, "labels", "--oneshot", "--fail-on-init-error=false", "--nvml-library",
                            "/nonexistent.so", "--root", self.root], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("gfd.timestamp", read(self.out))

    def test_daemon_labels_once_the_driver_appears(self):
        """--fail-on-init-error=false without NVML: says no GPU labels are written and looks again at each
        relabelling, so the GPU labels appear once the driver does (here: the library path comes to exist)."""
        lib = os.path.join(self.root, "late", "libnvidia-ml.so.1")
        e = dict(os.environ, FAKE_NVML_FIXTURE=fixture("single-t4"))
        proc = subprocess.Popen([GPULET, "labels", "--sleep-interval", "200ms", "--fail-on-init-error=false",
                                 "--nvml-library", lib, "--root", self.root], env=e, stderr=subprocess.PIPE,
                                text=True)
        try:
            wait_until(lambda: os.path.exists(self.out), 5)
            self.assertIn("gfd.timestamp", read(self.out))
            self.assertNotIn("gpu.count", read(self.out))
            os.makedirs(os.path.dirname(lib))
            os.symlink(FAKE, lib)
            wait_until(lambda: "gpu.count=1\n" in read(self.out), 10)
            self.assertIn("nvidia.com/gpu.count=1\n", read(self.out))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        log = proc.stderr.read()
        self.assertIn("no GPU labels are written (only the timestamp); trying again", log)
        self.assertIn("NVML loaded, labelling the GPUs", log)

    def test_daemon_relabels_and_keeps_on_stop(self):
        tmpfx = os.path.join(self.root, "fx.json")
        shutil.copy(fixture("dgx-h100"), tmpfx)
        e = dict(os.environ, FAKE_NVML_FIXTURE=tmpfx)
        proc = subprocess.Popen([GPULET, "labels", "--sleep-interval", "200ms", "--no-timestamp", "--nvml-library",
                                 FAKE, "--root", self.root], env=e, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: os.path.exists(self.out), 5)
            self.assertIn("nvidia.com/gpu.count=8\n", read(self.out))
            doc = json.loads(read(tmpfx))
            del doc["gpus"][7]
            with open(tmpfx + ".new", "w") as f:
                json.dump(doc, f)
            os.replace(tmpfx + ".new", tmpfx)
            wait_until(lambda: "gpu.count=7\n" in read(self.out), 10)
            self.assertIn("nvidia.com/gpu.count=7\n", read(self.out))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        self.assertEqual(proc.returncode, 0, proc.stderr.read())
        # issue 23 §8: the last labels survive a restart (a rollout never blanks the node's labels)
        self.assertIn("nvidia.com/gpu.count=7\n", read(self.out))
        # and a restarted labeller replaces them at its first successful pass, --no-timestamp as before
        proc = subprocess.Popen([GPULET, "labels", "--oneshot", "--no-timestamp", "--nvml-library", FAKE,
                                 "--root", self.root], env=e, stderr=subprocess.PIPE, text=True)
        proc.wait(10)
        proc.stderr.close()
        text = read(self.out)
        self.assertIn("nvidia.com/gpu.count=7\n", text)
        self.assertNotIn("gfd.timestamp", text)
        # every line is key=value: NFD before v0.14 reads a '#' line as a label
        self.assertTrue(all("=" in ln and not ln.startswith("#") for ln in text.splitlines()), text)


class VgpuUnprivileged(unittest.TestCase):
    """Issue 35 item 7: without CAP_SYS_ADMIN Linux gives 64 bytes of PCI config space (the header: every
    capability lies past it), which GFD takes as an error (no vgpu labels at all, under the chart's
    defaults). gpulet asks NVML's virtualization mode instead: vgpu.present is right on every node, the host
    driver's version and branch need the full space and are left out, with one warning saying how."""

    def setUp(self):
        self.root = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.root)

    def labels(self, doc, fx=None):
        make_root(doc, self.root)
        for dev in os.listdir(os.path.join(self.root, "sys/bus/pci/devices")):
            cfg = os.path.join(self.root, "sys/bus/pci/devices", dev, "config")
            with open(cfg, "rb") as f:
                head = f.read(64)
            with open(cfg, "wb") as f:  # what an unprivileged read of sysfs gives
                f.write(head)
        # the GPU's HDMI audio function: NVIDIA's vendor id, not a display class, never a vGPU
        audio = os.path.join(self.root, "sys/bus/pci/devices/0000:41:00.1")
        os.makedirs(audio)
        for name, data in (("vendor", b"0x10de\n"), ("class", b"0x040300\n"), ("config", bytes(64))):
            with open(os.path.join(audio, name), "wb") as f:
                f.write(data)
        path = fx or os.path.join(self.root, "fx.json")
        if not fx:
            with open(path, "w") as f:
                json.dump(doc, f)
        p = run(["--oneshot", "--no-timestamp", "--output-file", "-"], path, self.root)
        self.assertEqual(p.returncode, 0, p.stderr)
        return parse_labels(p.stdout), p.stderr

    def test_vgpu_guest_from_nvml(self):
        got, err = self.labels(load("vgpu-guest"))
        self.assertEqual(got[NV + "vgpu.present"], "true")
        self.assertNotIn(NV + "vgpu.host-driver-version", got)
        self.assertNotIn(NV + "vgpu.host-driver-branch", got)
        self.assertEqual(err.count("vGPU labels incomplete"), 1, err)
        self.assertIn("CAP_SYS_ADMIN", err)
        self.assertIn("gfd.vgpuConfigSpace", err)

    def test_bare_metal_from_nvml(self):
        got, err = self.labels(load("dgx-a100"))
        self.assertEqual(got[NV + "vgpu.present"], "false")
        self.assertNotIn("vGPU labels incomplete", err)

    def test_passthrough_from_nvml(self):
        doc = load("vgpu-guest")
        for g in doc["gpus"]:
            g["virtualization_mode"] = 1  # PASSTHROUGH: a whole GPU, no vGPU capability
        got, _ = self.labels(doc)
        self.assertEqual(got[NV + "vgpu.present"], "false")

    def test_undecidable_writes_no_vgpu_labels(self):
        doc = load("vgpu-guest")
        for g in doc["gpus"]:
            g["fail"] = {"nvmlDeviceGetVirtualizationMode": "NOT_SUPPORTED"}
        got, err = self.labels(doc)
        self.assertFalse([k for k in got if "vgpu" in k], got)
        self.assertIn("vGPU labels incomplete", err)
        self.assertIn("0000:41:00.0", err)
        self.assertEqual(got[NV + "gpu.count"], "2")  # the other labels are not held back


class ConfigAndFlags(unittest.TestCase):
    """The plugin's config file and GFD's flags: flag > env var > file > default, as GFD (urfave/cli)."""

    def setUp(self):
        self.root = tempfile.mkdtemp()
        make_root(load("dgx-a100"), self.root)

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, name, doc):
        path = os.path.join(self.root, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def labels(self, args, env=None, fx="dgx-a100", out="/out"):
        p = run(args, fx, self.root, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        return parse_labels(read(os.path.join(self.root, out.lstrip("/")))), p.stderr

    def test_file_sets_gfd_flags(self):
        with open(os.path.join(self.root, "machine"), "w") as f:
            f.write("Custom Box\n")
        cfg = self.write("c.yaml", "version: v1\nflags:\n  migStrategy: mixed\n  gfd:\n    oneshot: true\n"
                                   "    noTimestamp: true\n    outputFile: /from-file\n    machineTypeFile: /machine\n")
        got, _ = self.labels(["--config-file", cfg], out="/from-file")
        self.assertEqual(got[NV + "mig.strategy"], "mixed")
        self.assertEqual(got[NV + "gpu.machine"], "Custom-Box")
        self.assertNotIn(NV + "gfd.timestamp", got)

    def test_precedence(self):
        cfg = self.write("c.yaml", {"version": "v1", "flags": {"migStrategy": "mixed", "gfd": {"noTimestamp": True}}})
        base = ["--oneshot", "-o", "/out", "--config-file", cfg]
        got, _ = self.labels(base)
        self.assertEqual(got[NV + "mig.strategy"], "mixed")                   # file > default
        got, _ = self.labels(base, env={"MIG_STRATEGY": "single"})
        self.assertEqual(got[NV + "mig.strategy"], "single")                  # env > file
        got, _ = self.labels(base + ["--mig-strategy", "none"], env={"MIG_STRATEGY": "single"})
        self.assertNotIn(NV + "mig.strategy", got)                             # flag > env
        self.assertNotIn(NV + "gfd.timestamp", got)
        got, _ = self.labels(base + ["--no-timestamp=false"])
        self.assertIn(NV + "gfd.timestamp", got)                               # a switch set false beats the file
        # both env vars of --config-file: GFD_CONFIG_FILE first, then CONFIG_FILE
        other = self.write("o.yaml", {"version": "v1", "flags": {"migStrategy": "single"}})
        got, _ = self.labels(["--oneshot", "-o", "/out"], env={"GFD_CONFIG_FILE": other, "CONFIG_FILE": cfg})
        self.assertEqual(got[NV + "mig.strategy"], "single")
        got, _ = self.labels(["--oneshot", "-o", "/out"], env={"CONFIG_FILE": cfg})
        self.assertEqual(got[NV + "mig.strategy"], "mixed")

    def test_sharing_from_file(self):
        cfg = self.write("ts.yaml", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                    "    - name: nvidia.com/gpu\n      replicas: 5\n")
        got, _ = self.labels(["--oneshot", "-o", "/out", "--config-file", cfg], fx="single-t4")
        self.assertEqual(got[NV + "gpu.replicas"], "5")
        self.assertEqual(got[NV + "gpu.product"], "Tesla-T4-SHARED")
        self.assertEqual(got[NV + "gpu.sharing-strategy"], "time-slicing")
        cfg = self.write("mps.yaml", "version: v1\nsharing:\n  mps:\n    resources:\n"
                                     "    - name: nvidia.com/gpu\n      replicas: 3\n")
        got, _ = self.labels(["--oneshot", "-o", "/out", "--config-file", cfg], fx="single-t4")
        self.assertEqual(got[NV + "mps.capable"], "true")   # what the MPS control daemon's nodeSelector needs
        self.assertEqual(got[NV + "gpu.sharing-strategy"], "mps")

    def test_bad_config_file(self):
        for text, want in (("version: v1\nflags: [\n", "c.yaml:"), ("version: v2\n", "unknown version"),
                           ("version: v1\nflags:\n  gfd:\n    noTimestamp: maybe\n", "flags.gfd.noTimestamp"),
                           ("version: v1\nflags:\n  gfd:\n    sleepInterval: soon\n", "flags.gfd.sleepInterval"),
                           # the YAML type upstream's JSON decoding takes: a *bool a boolean, a *string a string
                           ("version: v1\nflags:\n  gfd:\n    oneshot: \"true\"\n",
                            "c.yaml:4:14: flags.gfd.oneshot: must be true or false, unquoted, got a string"),
                           ("version: v1\nflags:\n  gfd:\n    outputFile: 5\n", "flags.gfd.outputFile: must be a string"),
                           ("version: v1\nflags:\n  gfd:\n    sleepInterval: true\n",
                            "flags.gfd.sleepInterval: must be a duration")):
            cfg = self.write("c.yaml", text)
            p = run(["--oneshot", "-o", "/out", "--config-file", cfg], "dgx-a100", self.root)
            self.assertEqual(p.returncode, 1, text)
            self.assertIn(want, p.stderr, text)
            self.assertFalse(os.path.exists(os.path.join(self.root, "out")))
        p = run(["--oneshot", "-o", "/out", "--config-file", "/nonexistent.yaml"], "dgx-a100", self.root)
        self.assertEqual(p.returncode, 1)
        self.assertIn("/nonexistent.yaml", p.stderr)

    def test_gfd_flags_accepted(self):
        """GFD's client flags are taken; without an API server (not in a pod, no kubeconfig) the NodeFeature
        API, on by default as GFD's, writes the feature file and says so once; a kubeconfig that is not
        there is refused, not passed over (the NodeFeature object itself: tests/k8s/test_k8s_nodefeature.py)."""
        env = {}
        args = ["--oneshot", "-o", "/out", "--use-node-feature-api", "--device-discovery-strategy", "nvml",
                "--driver-root-ctr-path", "/driver-root", "--kube-api-qps", "2.5",
                "--kube-api-burst", "10", "--namespace", "gpu-operator", "--node-name", "n1", "--pod-name", "gfd-x"]
        got, err = self.labels(args, env=env)
        self.assertEqual(got[NV + "gpu.count"], "8")
        self.assertEqual(err.count("No Kubernetes API server"), 1, err)  # one clear line
        for e in ({"USE_NODE_FEATURE_API": "true"}, {"GFD_USE_NODE_FEATURE_API": "1"}, {}):
            _, err = self.labels(["--oneshot", "-o", "/out"], env=dict(env, **e))
            self.assertEqual(err.count("No Kubernetes API server"), 1, err)
        cfg = self.write("nfd.yaml", "version: v1\nflags:\n  useNodeFeatureAPI: true\n")
        _, err = self.labels(["--oneshot", "-o", "/out", "--config-file", cfg], env=env)
        self.assertEqual(err.count("No Kubernetes API server"), 1, err)
        _, err = self.labels(["--oneshot", "-o", "/out", "--use-node-feature-api=false", "--config-file", cfg],
                             env=env)
        self.assertNotIn("No Kubernetes API server", err)
        p = run(args + ["--kubeconfig", "/k"], "dgx-a100", self.root, env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot use the NodeFeature API", p.stderr)
        self.assertIn("/k", p.stderr)
        for bad in ("fast", "", "nan"):
            p = run(["--oneshot", "-o", "/out", "--kube-api-qps", bad], "dgx-a100", self.root, env=env)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertIn("--kube-api-qps", p.stderr)
        p = run(["--oneshot", "-o", "/out", "--device-discovery-strategy", "bogus"], "dgx-a100", self.root)
        self.assertEqual(p.returncode, 2)

    def test_tegra_and_vfio_refused(self):
        """Issue 35 item 6: GFD's tegra (CSV files) and vfio (vfio-pci GPUs) find GPUs NVML does not see; gpulet
        has only NVML, so each is refused naming the strategy (before: a warning, then NVML's labels), from
        every source, and no feature file is written."""
        cfg = self.write("vfio.yaml", "version: v1\nflags:\n  deviceDiscoveryStrategy: vfio\n")
        for args, env, name in ((["--device-discovery-strategy", "tegra"], None, "tegra"),
                                ([], {"DEVICE_DISCOVERY_STRATEGY": "tegra"}, "tegra"),
                                (["--config-file", cfg], None, "vfio")):
            p = run(["--oneshot", "-o", "/out"] + args, "dgx-a100", self.root, env=env)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("device_discovery_strategy=" + name, p.stderr)
            self.assertIn("NVML only", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.root, "out")))
        for name in ("auto", "nvml"):
            got, _ = self.labels(["--oneshot", "-o", "/out", "--device-discovery-strategy", name])
            self.assertEqual(got[NV + "gpu.count"], "8")

    def test_container_driver_root_not_used(self):
        """GFD v0.20 parses --driver-root-ctr-path (flag, env, flags.plugin.containerDriverRoot) and reads it
        nowhere (docs/reference/gfd-labels.md): every spelling is taken as GFD takes it and the labels do
        not change."""
        want = run(["--oneshot", "-o", "-", "--no-timestamp"], "dgx-a100", self.root)
        self.assertEqual(want.returncode, 0, want.stderr)
        cfg = self.write("ctr.yaml", "version: v1\nflags:\n  plugin:\n    containerDriverRoot: /x/../y\n")
        for args, env in ((["--driver-root-ctr-path", "/a/../etc"], None), (["--container-driver-root", "rel"], None),
                          ([], {"DRIVER_ROOT_CTR_PATH": "/nonexistent"}), (["--config-file", cfg], None)):
            p = run(["--oneshot", "-o", "-", "--no-timestamp"] + args, "dgx-a100", self.root, env=env)
            self.assertEqual((p.returncode, p.stdout), (0, want.stdout), (args, env, p.stderr))
        p = run(["--help"], "dgx-a100", self.root)
        self.assertRegex(p.stdout, r"--driver-root-ctr-path DIR[^\n]*\n +GFD's container driver root: accepted, not used")

    def test_shared_rows(self):
        """The rows labels shares with the plugin have the plugin's rule (plugin/config.h CONFIG_OPT_*)."""
        # a relative --config-file is taken from the working directory, as the plugin's
        self.write("rel.yaml", "version: v1\nflags:\n  migStrategy: single\n")
        p = run(["--oneshot", "-o", "-", "--config-file", "rel.yaml"], "dgx-a100", self.root,
                cwd=os.path.dirname(self.write("x.yaml", "")))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(NV + "mig.strategy=single", p.stdout)

    def test_machine_file_missing(self):
        os.remove(os.path.join(self.root, "sys/class/dmi/id/product_name"))
        got, _ = self.labels(["--oneshot", "-o", "/out"])
        self.assertEqual(got[NV + "gpu.machine"], "unknown")

    def test_go_values(self):
        """Issue 23 §6: values as GFD's urfave/cli v2 and Go read them (docs/reference/go-parsing.md)."""
        base = ["--oneshot", "-o", "/out"]
        # an env var set to "" counts as set: a switch is false (beats the file), a string is ""
        cfg = self.write("c.yaml", {"version": "v1", "flags": {"gfd": {"noTimestamp": True}}})
        got, _ = self.labels(base + ["--config-file", cfg], env={"GFD_NO_TIMESTAMP": ""})
        self.assertIn(NV + "gfd.timestamp", got)
        p = run(base, "dgx-a100", self.root, env={"GFD_MIG_STRATEGY": "", "MIG_STRATEGY": "mixed"})
        self.assertEqual(p.returncode, 2, p.stderr)  # GFD_MIG_STRATEGY="" wins and is no strategy
        # a duration env var set to "" is skipped (urfave's GenericFlag): the file's value stays
        cfg = self.write("s.yaml", "version: v1\nflags:\n  gfd:\n    sleepInterval: soon\n")
        p = run(base + ["--config-file", cfg], "dgx-a100", self.root, env={"GFD_SLEEP_INTERVAL": ""})
        self.assertEqual(p.returncode, 1, p.stderr)
        # Go's time.ParseDuration: compound durations are taken, a bare non-zero number is not
        for good in ("1m30s", "2h0m0s", "1.5h", "500ms", "infinite"):
            p = run(base + ["--sleep-interval", good], "dgx-a100", self.root)
            self.assertEqual(p.returncode, 0, good + p.stderr)
        for bad in ("60", "1d", "50ms", "169h"):
            p = run(base + ["--sleep-interval", bad], "dgx-a100", self.root)
            self.assertEqual(p.returncode, 2, bad)
            p = run(base, "dgx-a100", self.root, env={"GFD_SLEEP_INTERVAL": bad})
            self.assertEqual(p.returncode, 2, bad)
        # the file's bare number is nanoseconds, as upstream's Duration.UnmarshalJSON; the message keeps where the
        # value is and why it is refused (it was once formatted into itself: "gpulet labels: ; a bare number ...")
        for text, where in (("sleepInterval: 60", "n.yaml:4:20"),
                            ('{"version": "v1", "flags": {"gfd": {"sleepInterval": 60}}}', "n.yaml:1:54")):
            doc = text if text.startswith("{") else "version: v1\nflags:\n  gfd:\n    " + text + "\n"
            p = run(base + ["--config-file", self.write("n.yaml", doc)], "dgx-a100", self.root)
            self.assertEqual(p.returncode, 1, text)
            self.assertIn(where + ": flags.gfd.sleepInterval '60ns' is not valid: want 100ms to 168h0m0s, or "
                          "infinite; a bare number is nanoseconds here, as upstream; write 60s", p.stderr)
        cfg = self.write("ns.yaml", "version: v1\nflags:\n  gfd:\n    sleepInterval: 60000000000\n")
        self.labels(base + ["--config-file", cfg])  # 60e9 ns = 60s
        cfg = self.write("q.yaml", "version: v1\nflags:\n  gfd:\n    sleepInterval: \"60\"\n")
        p = run(base + ["--config-file", cfg], "dgx-a100", self.root)
        self.assertEqual(p.returncode, 1, p.stderr)  # a string goes through time.ParseDuration: no unit
        # -v is --version (urfave/cli's VersionFlag alias)
        p = run(["-v"], "dgx-a100", self.root)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("gpulet labels replaces gpu-feature-discovery", p.stdout)

    def daemon(self, args, fx="dgx-a100"):
        e = {k: v for k, v in os.environ.items() if k not in ENV_CLEAR}
        e.update(FAKE_NVML_FIXTURE=fixture_path(fx))
        return subprocess.Popen([GPULET, "labels", "--nvml-library", FAKE, "--root", self.root, "-o", "/out",
                                 "--no-timestamp"] + args, env=e, stderr=subprocess.PIPE, text=True)

    def test_sighup_reads_the_config_again(self):
        cfg = self.write("c.yaml", {"version": "v1", "flags": {"migStrategy": "none"}})
        out = os.path.join(self.root, "out")
        proc = self.daemon(["--config-file", cfg, "--sleep-interval", "1h"])
        try:
            wait_until(lambda: os.path.exists(out), 5)
            self.assertNotIn(NV + "mig.strategy", parse_labels(read(out)))
            self.write("c.yaml", {"version": "v1", "flags": {"migStrategy": "mixed"}})
            proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "mig.strategy=mixed" in read(out), 5)
            self.assertIn("mig.strategy=mixed", read(out))
            self.assertIsNone(proc.poll())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        self.assertEqual(proc.returncode, 0, proc.stderr.read())
        self.assertIn("mig.strategy=mixed", read(out))  # kept on stop (issue 23 §8)

    def test_sighup_bad_config_keeps_the_running_one(self):
        """SIGHUP's one path (util/loop.h): a config file that no longer loads is refused in one log line,
        the daemon keeps labelling under the config in use, and a fixed file is taken at the next SIGHUP
        (it used to exit 1)."""
        cfg = self.write("c.yaml", {"version": "v1", "flags": {"migStrategy": "mixed"}})
        out = os.path.join(self.root, "out")
        proc = self.daemon(["--config-file", cfg, "--sleep-interval", "1h"])
        err = ""
        try:
            wait_until(lambda: os.path.exists(out) and "mig.strategy=mixed" in read(out), 5)
            self.assertIn("mig.strategy=mixed", read(out))
            self.write("c.yaml", "version: v1\nflags:\n  migStrategy: bogus\n")
            proc.send_signal(signal.SIGHUP)
            err = read_until(proc.stderr, "Config reload failed", 10)  # the file is fixed only after it was read
            self.assertIsNone(proc.poll(), "exited on a config that does not load:\n" + err)
            self.write("c.yaml", {"version": "v1", "flags": {"migStrategy": "single"}})
            proc.send_signal(signal.SIGHUP)
            wait_until(lambda: "mig.strategy=single" in read(out), 5)
            self.assertIn("mig.strategy=single", read(out))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        err += proc.stderr.read()
        self.assertEqual(proc.returncode, 0, err)
        refused = [ln for ln in err.splitlines() if "Config reload failed, keeping the running config" in ln]
        self.assertEqual(len(refused), 1, err)
        self.assertIn("flags.migStrategy", refused[0])

    def test_infinite_sleep_keeps_the_file(self):
        out = os.path.join(self.root, "out")
        proc = self.daemon(["--sleep-interval", "infinite"])
        try:
            wait_until(lambda: os.path.exists(out), 5)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        proc.stderr.close()
        self.assertEqual(proc.returncode, 0)
        self.assertTrue(os.path.exists(out))  # GFD leaves it: nothing would write it again

    def test_mps_with_mig_labels_nothing(self):
        out = os.path.join(self.root, "out")
        with open(out, "w") as f:
            f.write("nvidia.com/gpu.count=8\n")  # a previous run's labels
        cfg = self.write("mps.yaml", {"version": "v1", "sharing": {"mps": {"resources": [
            {"name": "nvidia.com/gpu", "replicas": 2}]}}})
        proc = self.daemon(["--config-file", cfg, "--sleep-interval", "200ms"])
        proc.wait(10)
        err = proc.stderr.read()
        proc.stderr.close()
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("MPS sharing is not supported with MIG", err)
        # the last successful labels stay until a labelling succeeds (issue 23 §8)
        self.assertEqual(read(out), "nvidia.com/gpu.count=8\n")


if __name__ == "__main__":
    if UPDATE:
        sys.argv.remove("--update")
    unittest.main(verbosity=2)
