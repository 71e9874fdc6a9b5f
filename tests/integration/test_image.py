#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The OCI image (`make image`, deploy/image/build.sh) run with podman + runc against a fake node
root (tests/lib/mkroot.sh) and the fake NVML, both mounted, the way the Helm chart runs it: no
network (loopback only), read-only root filesystem, no capabilities, no new privileges.

  * the image holds gpulet, its command-name links and the libraries ldd lists, nothing else:
    no shell, every library resolved by the image's own loader;
  * `plugin` registers with the kubelet stand-in (tests/integration/kubelet_standin.py, on this
    machine) through the bind-mounted device-plugin dir and answers Allocate with the CDI device
    names; its CDI spec lands in the mounted /var/run/cdi;
  * `cdi generate`, `doctor --root /host` and `labels --oneshot` give inside the image what the
    built binary gives outside it on the same root;
  * `exporter` serves /metrics on the container's loopback (read from its network namespace);
  * the image started as NVIDIA's manifests start it (docs/reference/operator.md): no command gives
    gpulet's usage; the GPU Operator's dcgm-exporter container (no command, DCGM_EXPORTER_* env) and
    NVIDIA's dcgm-exporter chart (`-f FILE` only) serve /metrics and /health with the collectors files
    the image carries; the Operator's device-plugin container (`/bin/sh -c /bin/entrypoint.sh`, its
    script mounted there, our words for its statements) waits for the validator's driver-ready file,
    exports it, and registers as nvidia-device-plugin (argv[0], which config-manager signals) with
    its CDI spec in /var/run/cdi, not below the read-only /host; /bin/sh refuses every other use,
    config-manager is gpulet's (without NODE_NAME it exits 1 naming it);
  * scanners can read it: /var/lib/dpkg/status lists exactly the Debian packages shipped (with each
    one's copyright file), /etc/os-release says Debian 12, the OCI labels name source, revision,
    created and licenses; no build-host leftovers (apt/dpkg state, /etc/hostname, resolv.conf, lock
    files, ldconfig's aux-cache, gcc's helper scripts);
  * it is reproducible: a second build from the same inputs gives the same manifest, config and
    index digests, every file's mtime is SOURCE_DATE_EPOCH;
  * the layout BUILD/image/oci is an image index of an amd64 and an arm64 (v8) image; the arm64 one
    holds the same Debian packages for arm64 and AArch64 gpulet files (the hook static), and its gpulet
    runs from its own root under qemu-aarch64-static;
  * `make image` installs only deploy/image/build-packages.txt, not the test toolchain.

Builds the image first (cached Debian root: seconds). Exit 77 (CTest skip) only when podman cannot
run containers here or the Debian archive cannot be reached for the first build."""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plugin_lib import BUILD, FAKE_NVML_LIB, GPULET, SRC, Harness, check, fail  # noqa: E402

SKIP = 77
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
# as the chart runs gpulet (deploy/helm/gpulet): no network, read-only root, no capabilities;
# ulimits below this machine's hard limits (docs/reference/real-peers.md, podman + runc)
RUN = ["run", "--rm", "--network", "none", "--read-only", "--cap-drop", "all",
       "--security-opt", "no-new-privileges", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"]
NVML_IN = "/fakenvml/libnvidia-ml.so.1"


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def check_make_image():
    """`make image` installs the build and image tools only: no Prometheus service on :9090, no
    clang, golang, valgrind, containerd (the test toolchain of .ci/packages.txt)."""
    p = sh(["make", "-n", "--no-print-directory", "-C", SRC, "image"])
    check(p.returncode == 0, "make -n image: %s" % p.stderr)
    recipe = p.stdout
    words = set(recipe.replace(";", " ").split())
    check({"mmdebstrap", "podman", "cmake"} <= words, "make image does not install the image tools: %s" % recipe[:300])
    extra = words & {"prometheus", "clang", "golang-go", "valgrind", "containerd", "npm", "runc", "strace"}
    check(not extra, "make image installs the test toolchain: %s" % sorted(extra))
    print("PASS make image installs deploy/image/build-packages.txt only")


def build_digest(env=None):
    r = sh(["sh", os.path.join(SRC, "deploy", "image", "build.sh"), BUILD], timeout=900,
           env=dict(os.environ, **(env or {})))
    check(r.returncode == 0, "deploy/image/build.sh: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    with open(os.path.join(BUILD, "image", "digest")) as f:
        return f.read().split()


def check_reproducible(image, first):
    """Same inputs, same digest: build again (the Debian base from the cache) with the same
    SOURCE_DATE_EPOCH and compare; every mtime in the image is that time."""
    info = json.loads(sh(PODMAN + ["image", "inspect", image]).stdout)[0]
    labels = info.get("Labels") or info["Config"].get("Labels") or {}
    created = labels.get("org.opencontainers.image.created", "")
    sde = int(sh(["date", "-u", "-d", created, "+%s"]).stdout.strip() or -1)
    second = build_digest({"SOURCE_DATE_EPOCH": str(sde)})
    check(first == second, "two builds from the same inputs: %s, then %s" % (first, second))
    check("sha256:" + info["Id"] == first[1],
          "podman's image ID %s is not the config digest %s" % (info["Id"], first[1]))
    for key in ("source", "revision", "created", "licenses", "version"):
        check(labels.get("org.opencontainers.image." + key),
              "no OCI label org.opencontainers.image.%s: %r" % (key, labels))
    cid = sh(PODMAN + ["create", image]).stdout.strip()
    try:
        tar = sh(["sh", "-c", "podman export %s | tar -tv --full-time --utc" % cid]).stdout
    finally:
        sh(PODMAN + ["rm", cid])
    want = sh(["date", "-u", "-d", "@%d" % sde, "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
    stamps = {" ".join(line.split()[3:5]) for line in tar.splitlines() if len(line.split()) >= 6}
    check(stamps == {want}, "file times in the image: %s, not only SOURCE_DATE_EPOCH %s" % (sorted(stamps)[:5], want))
    print("PASS reproducible: manifest %s twice, every mtime %s" % (first[0], want))


def blob(layout, digest):
    with open(os.path.join(layout, "blobs", "sha256", digest.split(":", 1)[1]), "rb") as f:
        return f.read()


def packages(status):
    return {m.group(1): m.group(2) for m in re.finditer(r"^Package: (\S+)\n(?:.+\n)*?Architecture: (\S+)$", status,
                                                       re.M)}


def check_index(first):
    """BUILD/image/oci: the index of both images; the arm64 image's files run under qemu."""
    layout = os.path.join(BUILD, "image", "oci")
    with open(os.path.join(layout, "index.json")) as f:
        top = json.load(f)["manifests"]
    check(len(top) == 1 and top[0]["mediaType"] == "application/vnd.oci.image.index.v1+json" and
          top[0]["digest"] == first[2], "index.json names the image index %s: %s" % (first[2:], top))
    index = json.loads(blob(layout, top[0]["digest"]))
    plats = {m["platform"]["architecture"]: m for m in index["manifests"]}
    check(sorted(plats) == ["amd64", "arm64"] and plats["arm64"]["platform"].get("variant") == "v8" and
          plats["amd64"]["digest"] == first[0], "the index's manifests: %s" % index["manifests"])
    man = json.loads(blob(layout, plats["arm64"]["digest"]))
    check(json.loads(blob(layout, man["config"]["digest"]))["architecture"] == "arm64", "the arm64 config")
    root = os.path.join(BUILD, "image", "arm64-check")
    sh(["rm", "-rf", root])
    os.makedirs(root)
    try:
        layer = os.path.join(layout, "blobs", "sha256", man["layers"][0]["digest"].split(":", 1)[1])
        check(sh(["tar", "-C", root, "-xf", layer]).returncode == 0, "the arm64 layer unpacks")
        for f in ("gpulet", "gpulet-probe", "gpulet-cdi-hook"):
            h = sh(["readelf", "-h", "-l", "-W", os.path.join(root, "usr/bin", f)]).stdout
            check("AArch64" in h and ("INTERP" in h) == (f != "gpulet-cdi-hook"),
                  "arm64 image: /usr/bin/%s is AArch64%s" % (f, " and static" if f == "gpulet-cdi-hook" else ""))
        r = sh(["qemu-aarch64-static", "-L", root, os.path.join(root, "usr/bin/gpulet"), "exporter", "--help"])
        check(r.returncode == 0 and "--web-config-file" in r.stdout,
              "arm64 image: gpulet exporter --help under qemu from the image's own root: %s" % r.stderr)
        with open(os.path.join(root, "var/lib/dpkg/status")) as f:
            arm = packages(f.read())
        amd_man = json.loads(blob(layout, plats["amd64"]["digest"]))
        with tarfile.open(os.path.join(layout, "blobs", "sha256", amd_man["layers"][0]["digest"].split(":", 1)[1])) as t:
            amd = packages(t.extractfile("./var/lib/dpkg/status").read().decode())
        check(arm and sorted(arm) == sorted(amd) and all(a in ("arm64", "all") for a in arm.values()),
              "arm64 image: the amd64 image's packages for arm64: %s vs %s" % (arm, amd))
    finally:
        sh(["rm", "-rf", root])
    print("PASS the index: amd64 %s, arm64 %s (gpulet runs under qemu)" % (plats["amd64"]["digest"],
                                                                         plats["arm64"]["digest"]))


def check_scannable(image):
    """What Trivy and Grype read: the dpkg status of exactly the packages shipped, the OS release."""
    cid = sh(PODMAN + ["create", image]).stdout.strip()
    try:
        names = set(sh(["sh", "-c", "podman export %s | tar -t" % cid]).stdout.split())
        status = sh(["sh", "-c", "podman export %s | tar -xO var/lib/dpkg/status" % cid]).stdout
        osrel = sh(["sh", "-c", "podman export %s | tar -xO usr/lib/os-release" % cid]).stdout
    finally:
        sh(PODMAN + ["rm", cid])
    names = {n.rstrip("/") for n in names}
    bins = [os.path.join(BUILD, b) for b in ("gpulet", "gpulet-grpc.so", "gpulet-http.so")]
    runtime = sh([os.path.join(SRC, "deploy", "image", "runtime-packages.sh")] + bins).stdout.split()
    shipped = set(runtime) | {"base-files"}
    entries = [e for e in status.split("\n\n") if e.strip()]
    listed = [re.search(r"^Package: (\S+)$", e, re.M).group(1) for e in entries]
    check(len(listed) == len(set(listed)) and set(listed) == shipped,
          "dpkg status lists %s; shipped: %s" % (sorted(listed), sorted(shipped)))
    for e in entries:
        pkg = re.search(r"^Package: (\S+)$", e, re.M).group(1)
        check(re.search(r"^Status: install ok installed$", e, re.M) and re.search(r"^Version: \S+$", e, re.M)
              and re.search(r"^Architecture: (amd64|all)$", e, re.M), "dpkg status entry of %s: %r" % (pkg, e[:300]))
        doc = "usr/share/doc/" + pkg
        check(doc + "/copyright" in names or doc in names, "no copyright of %s in the image" % pkg)
    check('ID=debian' in osrel and 'VERSION_ID="12"' in osrel, "/usr/lib/os-release: %r" % osrel[:300])
    check("etc/os-release" in names and "etc/debian_version" in names, "no /etc/os-release or /etc/debian_version")
    leftovers = [n for n in names if n in ("etc/hostname", "etc/resolv.conf", "etc/fstab", "etc/apt", "etc/dpkg",
                                           "var/cache", "var/lib/apt", "var/log", "usr/share/gcc", "usr/share/gdb",
                                           "var/cache/ldconfig/aux-cache", "var/lib/dpkg/info")
                 or n.endswith("/lock") or n.endswith("lock-frontend")]
    check(not leftovers, "build-host leftovers in the image: %s" % sorted(leftovers))
    print("PASS scannable: dpkg status of the %d packages shipped, Debian 12 os-release, no leftovers" % len(listed))


def build_image():
    check_make_image()
    if sh(["sh", "-c", "command -v podman && command -v runc"]).returncode != 0:
        print("SKIP: podman or runc is not installed (make deps)")
        raise SystemExit(SKIP)
    r = sh(["sh", os.path.join(SRC, "deploy", "image", "build.sh"), BUILD], timeout=900)
    if r.returncode == 3:
        print("SKIP: the Debian archive cannot be reached for the image's first build:\n" + r.stderr)
        raise SystemExit(SKIP)
    check(r.returncode == 0, "deploy/image/build.sh: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    print(r.stdout.strip())
    with open(os.path.join(BUILD, "image", "tag")) as f:
        image = f.read().strip()
    p = sh(PODMAN + RUN + [image, "--help"])
    if p.returncode != 0 and "gpulet" not in p.stdout:
        print("SKIP: podman cannot run a container here: %s" % p.stderr.strip())
        raise SystemExit(SKIP)
    return image


class Node(Harness):
    """The plugin harness's fake node; gpulet runs in the image with the node mounted."""

    def mounts(self, cdi_rw=False):
        m = ["-v", "%s:/host:ro" % self.root,
             "-v", "%s:/fakenvml:ro" % os.path.dirname(FAKE_NVML_LIB),
             "-v", "%s:/fixture.json:ro" % self.fixture,
             "-v", "%s:/nvml-events:ro" % self.events_file,
             "-e", "FAKE_NVML_FIXTURE=/fixture.json", "-e", "FAKE_NVML_EVENTS=/nvml-events",
             "-e", "GPULET_NVML_LIBRARY=" + NVML_IN]
        if cdi_rw:
            os.makedirs(os.path.join(self.root, "var/run/cdi"), exist_ok=True)
            m += ["-v", "%s:/host/var/run/cdi" % os.path.join(self.root, "var/run/cdi")]
        return m


def check_contents(image):
    cid = sh(PODMAN + ["create", image]).stdout.strip()
    try:
        tar = sh(["sh", "-c", "podman export %s | tar -tv" % cid]).stdout
    finally:
        sh(PODMAN + ["rm", cid])
    names = {line.split()[5].lstrip("./"): line for line in tar.splitlines() if len(line.split()) >= 6}
    check("usr/bin/gpulet" in names, "no /usr/bin/gpulet in the image")
    for link, to in (("usr/bin/nvidia-device-plugin", "gpulet"), ("usr/bin/gpu-feature-discovery", "gpulet"),
                     ("usr/bin/mps-control-daemon", "gpulet"), ("usr/bin/nvidia-cdi-hook", "gpulet-cdi-hook"),
                     ("usr/bin/dcgm-exporter", "gpulet"), ("usr/bin/config-manager", "gpulet"),
                     ("bin/sh", "../usr/bin/gpulet"), ("bin/bash", "../usr/bin/gpulet")):
        line = names.get(link, "")
        check(line.startswith("l") and line.endswith("-> " + to), "%s is not a link to %s: %r" % (link, to, line))
    # the GPU Operator mounts its script at /bin/entrypoint.sh: the runtime would follow a link there
    check(not [n for n in names if n.startswith("bin/") and n not in ("bin/sh", "bin/bash") and not names[n].startswith("d")],
          "more than sh and bash in /bin: %s" % sorted(n for n in names if n.startswith("bin/")))
    for f in ("etc/dcgm-exporter/default-counters.csv", "etc/dcgm-exporter/dcp-metrics-included.csv"):
        check(f in names and names[f].startswith("-"), "no /%s in the image" % f)
    # the serving modules gpulet loads on demand (docs/HACKING.md "Lean start-up"), the glibc-only probe
    # and the static CDI hook (docs/reference/cdi-hook.md §5)
    for f in ("usr/lib/gpulet/gpulet-grpc.so", "usr/lib/gpulet/gpulet-http.so", "usr/bin/gpulet-probe",
              "usr/bin/gpulet-cdi-hook"):
        check(f in names, "no /%s in the image" % f)
    programs = [n for n in names if not names[n].startswith("d") and n not in ("bin/sh", "bin/bash") and
                (n.startswith(("bin/", "sbin/", "usr/sbin/")) or
                 (n.startswith("usr/bin/") and not names[n].startswith("l") and
                  n not in ("usr/bin/gpulet", "usr/bin/gpulet-probe", "usr/bin/gpulet-cdi-hook")))]
    check(not programs, "programs besides gpulet in the image: %s" % programs[:10])
    # every library gpulet and its modules need resolves inside the image, with the image's loader
    for binary, needs in (("/usr/bin/gpulet", "libjansson.so"), ("/usr/lib/gpulet/gpulet-grpc.so", "libgrpc.so"),
                          ("/usr/lib/gpulet/gpulet-http.so", "libmicrohttpd.so")):
        p = sh(PODMAN + RUN + ["--entrypoint", "/lib64/ld-linux-x86-64.so.2", image, "--list", binary])
        check(p.returncode == 0 and "not found" not in p.stdout and needs in p.stdout,
              "ld.so --list %s in the image: rc %d %s %s" % (binary, p.returncode, p.stdout[-800:], p.stderr))
    size = int(sh(PODMAN + ["image", "inspect", "--format", "{{.Size}}", image]).stdout.strip())
    print("PASS image contents: gpulet, 6 command-name links, /bin/sh and /bin/bash as gpulet, %d libraries resolved; %.1f MiB"
          % (p.stdout.count("=>"), size / 1048576))


def test_plugin(image, h):
    h.start_standin()
    mark = h.events.mark()
    name = "gpulet-image-test-plugin-%d" % os.getpid()
    h.log = open(h.log_path, "a")
    h.plugin = subprocess.Popen(
        PODMAN + RUN + ["--name", name, "-v", "%s:/var/lib/kubelet/device-plugins" % h.dp] + h.mounts(cdi_rw=True) +
        ["-e", "DEVICE_LIST_STRATEGY=cdi-cri", "-e", "GRPC_VERBOSITY=error", "--entrypoint", "/usr/bin/gpulet",
         image, "plugin", "--root=/host"], stdout=h.log, stderr=subprocess.STDOUT)
    try:
        reg = h.events.wait(lambda e: e["event"] == "register", start=mark, timeout=60, what="Register from the image")
        check(reg.get("resource") == "nvidia.com/gpu" and reg.get("endpoint") == "nvidia-gpu.sock",
              "registered %r" % reg)
        lst = h.wait_list("nvidia.com/gpu", start=mark, timeout=30)
        ids = [d["id"] for d in lst["devices"]]
        check(len(ids) == len(h.fixture_data()["gpus"]), "devices %r" % ids)
        resp = h.allocate("nvidia.com/gpu", ids[:1])
        (cr,) = resp.container_responses
        cdi = [d.name for d in cr.cdi_devices]
        specs = os.listdir(os.path.join(h.root, "var/run/cdi"))
        check(len(specs) == 1, "the plugin in the image wrote %r into the mounted /var/run/cdi" % specs)
        with open(os.path.join(h.root, "var/run/cdi", specs[0])) as f:
            spec = json.load(f)
        names = {"%s=%s" % (spec["kind"], d["name"]) for d in spec["devices"]}
        check(len(cdi) == 1 and cdi[0] in names and ids[0] in cdi[0],
              "Allocate of %s from the image: cdi_devices %r, not a device of the spec it wrote (%s)"
              % (ids[0], cdi, sorted(names)[:4]))
        print("PASS plugin in the image: registered, %d devices listed, Allocate -> %s, spec %s"
              % (len(ids), cdi, specs))
    finally:
        sh(PODMAN + ["stop", "-t", "5", name])
        h.plugin.wait(timeout=30)
        h.plugin = None
    check("Registered device plugin" in h.log_text(), "plugin log: %s" % h.log_text()[-2000:])


def in_image(image, h, *args):
    return sh(PODMAN + RUN + h.mounts() + ["--entrypoint", "/usr/bin/gpulet", image, *args], timeout=120)


def on_host(h, *args):
    env = dict(os.environ, FAKE_NVML_FIXTURE=h.fixture, FAKE_NVML_EVENTS=h.events_file,
               GPULET_NVML_LIBRARY=FAKE_NVML_LIB)
    return sh([GPULET, *args], env=env, timeout=120)


def jload(p, what):
    try:
        return json.loads(p.stdout)
    except ValueError:
        fail("%s: rc %d, not JSON: %s %s" % (what, p.returncode, p.stdout[:400], p.stderr[-1500:]))


def test_cli(image, h):
    # cdi generate: the same spec from inside the image as from the built binary on the same root
    # the hooks' binary defaults to the running gpulet, whose path differs: name one
    hook = "--nvidia-cdi-hook-path=/usr/bin/gpulet"
    a = in_image(image, h, "cdi", "generate", "--root", "/host", "--format", "json", hook)
    b = on_host(h, "cdi", "generate", "--root", h.root, "--format", "json", hook)
    check(a.returncode == 0, "cdi generate in the image: %s" % a.stderr)
    spec = jload(a, "cdi generate in the image")
    check(spec == jload(b, "cdi generate outside") and spec["devices"], "cdi generate differs in the image:\n%s\n%s"
          % (a.stdout[:800], b.stdout[:800]))
    # doctor: the same findings
    a = in_image(image, h, "doctor", "--root", "/host", "--json")
    b = on_host(h, "doctor", "--root", h.root, "--json")
    check(a.returncode in (0, 1) and a.returncode == b.returncode, "doctor rc %d in the image, %d outside: %s"
          % (a.returncode, b.returncode, a.stderr))
    ids = lambda p, w: sorted((f["id"], f["severity"]) for f in jload(p, w)["findings"])  # noqa: E731
    da, db = ids(a, "doctor in the image"), ids(b, "doctor outside")
    check(da == db, "doctor findings differ in the image:\n%s\n%s" % (da, db))
    # labels --oneshot: the same labels
    a = in_image(image, h, "labels", "--oneshot", "--no-timestamp", "--output-file", "-")
    b = on_host(h, "labels", "--oneshot", "--no-timestamp", "--output-file", "-")
    check(a.returncode == 0 and a.stdout == b.stdout and "nvidia.com/gpu.count=" in a.stdout,
          "labels differ in the image: %s\n%s\n%s" % (a.stderr, a.stdout[:500], b.stdout[:500]))
    print("PASS cdi generate (%d devices), doctor (%d findings, rc %d), labels (%d) in the image = outside"
          % (len(spec["devices"]), len(db), b.returncode,
             a.stdout.count("\n")))


def get_in(pid, path):
    """GET http://127.0.0.1:9400PATH from inside the network namespace of pid (the container has only a loopback)."""
    getter = ("import sys,urllib.request;sys.stdout.write(urllib.request.urlopen("
              "'http://127.0.0.1:9400%s',timeout=5).read().decode())" % path)
    return sh(["nsenter", "-t", pid, "-n", "/usr/bin/python3", "-c", getter]).stdout


def metrics_of(h, name, what):
    """Wait for the exporter in container name to serve every GPU; the /metrics body."""
    pid = sh(PODMAN + ["inspect", "--format", "{{.State.Pid}}", name]).stdout.strip()
    body, deadline = "", time.time() + 30
    while time.time() < deadline:
        body = get_in(pid, "/metrics")
        if "\ngpulet_exporter_ready 1\n" in body and "DCGM_FI_DEV_GPU_UTIL{" in body:
            break
        time.sleep(0.5)
    uuids = {g["uuid"] for g in h.fixture_data()["gpus"]}
    seen = {u for u in uuids if 'UUID="%s"' % u in body}
    check(seen == uuids, "%s: /metrics has GPUs %s of %s:\n%s\n%s" % (what, sorted(seen), sorted(uuids), body[:1500],
                                                                     sh(PODMAN + ["logs", name]).stderr[-2000:]))
    return pid, body, seen


def test_exporter(image, h):
    name = "gpulet-image-test-exporter-%d" % os.getpid()
    r = sh(PODMAN + RUN + ["-d", "--name", name] + h.mounts() +
           ["--entrypoint", "/usr/bin/gpulet", image, "exporter", "--address", "127.0.0.1:9400",
            "--kubernetes=false", "--collect-interval", "500"])
    check(r.returncode == 0, "exporter in the image: %s" % r.stderr)
    try:
        _, body, seen = metrics_of(h, name, "exporter in the image")
        # and nothing answers from outside: --network none
        try:
            urllib.request.urlopen("http://127.0.0.1:9400/metrics", timeout=1)
            outside = True
        except OSError:
            outside = False
        check(not outside, "the exporter in a --network none container answered on this machine's :9400")
        print("PASS exporter in the image: /metrics on the container's loopback, %d GPUs" % len(seen))
    finally:
        sh(PODMAN + ["rm", "-f", "-t", "2", name])


# The containers of NVIDIA's manifests, reproduced (command, args and env; facts in docs/reference/operator.md
# §2): the GPU Operator's nvidia-dcgm-exporter (gpu-operator assets/state-dcgm-exporter/0800_daemonset.yaml:
# no command, no args) and NVIDIA's dcgm-exporter chart (deployment/templates/daemonset.yaml, values.yaml
# `arguments`). Port 9400 on the container's own loopback.
UPSTREAM_EXPORTERS = (
    ("GPU Operator", ["-e", "DCGM_EXPORTER_LISTEN=:9400", "-e", "DCGM_EXPORTER_KUBERNETES=true",
                      "-e", "DCGM_EXPORTER_COLLECTORS=/etc/dcgm-exporter/dcp-metrics-included.csv"], []),
    ("dcgm-exporter chart", ["-e", "DCGM_EXPORTER_KUBERNETES=true", "-e", "DCGM_EXPORTER_LISTEN=:9400"],
     ["-f", "/etc/dcgm-exporter/default-counters.csv"]),
)


def test_upstream_exporters(image, h):
    with open(os.path.join(SRC, "deploy", "image", "dcgm-exporter.csv")) as f:
        fields = {ln.split(",")[0].strip() for ln in f if ln.strip() and not ln.startswith("#")}
    for what, env, args in UPSTREAM_EXPORTERS:
        name = "gpulet-image-test-upstream-exporter-%d" % os.getpid()
        r = sh(PODMAN + RUN + ["-d", "--name", name] + h.mounts() + env + [image] + args)
        check(r.returncode == 0, "%s's exporter container: %s" % (what, r.stderr))
        try:
            pid, body, seen = metrics_of(h, name, "%s's exporter container" % what)
            # the collectors file it named was read: only its fields (the built-in set has more)
            served = set(re.findall(r"^(DCGM_FI_[A-Z0-9_]+)\{", body, re.M))
            check(served and served <= fields and "DCGM_FI_DEV_FB_TOTAL" not in served,
                  "%s: series outside the collectors file: %s" % (what, sorted(served - fields)))
            check(get_in(pid, "/health") == "OK", "%s: /health (the Operator's probes) answered %r"
                  % (what, get_in(pid, "/health")))
            log = sh(PODMAN + ["logs", name]).stderr
            check("running dcgm-exporter" in log, "%s: the entrypoint did not say what it runs: %s" % (what, log[-800:]))
            print("PASS %s's exporter container on gpulet's image: %d GPUs, %d fields of its collectors file, /health OK"
                  % (what, len(seen), len(served)))
        finally:
            sh(PODMAN + ["rm", "-f", "-t", "2", name])


def test_no_shell(image):
    """/bin/sh and /bin/bash are gpulet: only the Operator's form; config-manager is gpulet's config-manager."""
    for argv in (["/bin/sh"], ["/bin/sh", "-c", "id"], ["/bin/bash", "-c", "cat /etc/os-release"],
                 ["/bin/sh", "-c", "/bin/entrypoint.sh", "x"]):
        p = sh(PODMAN + RUN + ["--entrypoint", argv[0], image] + argv[1:])
        check(p.returncode == 2 and "gpulet's image has no shell" in p.stderr and "uid=" not in p.stdout,
              "%s in the image: rc %d %s %s" % (argv, p.returncode, p.stdout, p.stderr))
    # config-manager is gpulet's (docs/reference/config-manager.md): without the pod's NODE_NAME it says so
    p = sh(PODMAN + RUN + ["--entrypoint", "config-manager", image])
    check(p.returncode == 1 and "gpulet config-manager: invalid <node-name>" in p.stderr,
          "config-manager: rc %d %s" % (p.returncode, p.stderr))
    p = sh(PODMAN + RUN + [image])
    check(p.returncode == 0 and "Usage: gpulet COMMAND" in p.stdout, "no command: rc %d %s" % (p.returncode, p.stdout))
    print("PASS /bin/sh, /bin/bash refuse what is not the Operator's form; config-manager is gpulet's (no NODE_NAME: "
          "exit 1 naming it); "
          "no command prints the usage")


# The GPU Operator's device-plugin container (gpu-operator assets/state-device-plugin/0500_daemonset.yaml and
# controllers/object_controls.go TransformDevicePlugin with cdi.enabled, mig.strategy mixed,
# toolkit.installDir /usr/local/nvidia): its command, args and env.
OPERATOR_PLUGIN_ENV = {
    "PASS_DEVICE_SPECS": "true", "FAIL_ON_INIT_ERROR": "true", "DEVICE_LIST_STRATEGY": "cdi-annotations,cdi-cri",
    "DEVICE_ID_STRATEGY": "uuid", "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "all",
    "MPS_ROOT": "/run/nvidia/mps", "CDI_ENABLED": "true", "CDI_ANNOTATION_PREFIX": "cdi.k8s.io/",
    "NVIDIA_CDI_HOOK_PATH": "/usr/local/nvidia/toolkit/nvidia-cdi-hook", "MIG_STRATEGY": "mixed",
    "NVIDIA_MIG_MONITOR_DEVICES": "all"}


def test_operator_plugin(image, h):
    val = os.path.join(h.tmp, "validations")
    cdi = os.path.join(h.tmp, "operator-cdi")
    os.makedirs(val)
    os.makedirs(cdi)
    below_host = os.path.join(h.root, "var/run/cdi")
    shutil.rmtree(below_host, ignore_errors=True)  # test_plugin's spec
    script = os.path.join(SRC, "tests", "fixtures", "operator", "entrypoint-modules.sh")
    env = [a for k, v in OPERATOR_PLUGIN_ENV.items() for a in ("-e", "%s=%s" % (k, v))]
    name = "gpulet-image-test-operator-plugin-%d" % os.getpid()
    mark = h.events.mark()
    log_path = os.path.join(h.tmp, "operator-plugin.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            PODMAN + RUN + ["--name", name, "-v", "%s:/var/lib/kubelet/device-plugins" % h.dp,
                            "-v", "%s:/bin/entrypoint.sh:ro" % script, "-v", "%s:/run/nvidia/validations" % val,
                            "-v", "%s:/var/run/cdi" % cdi, "-e", "GRPC_VERBOSITY=error"] + h.mounts() + env +
            ["--entrypoint", "/bin/sh", image, "-c", "/bin/entrypoint.sh"], stdout=log, stderr=subprocess.STDOUT)
    text = lambda: open(log_path).read()  # noqa: E731
    try:
        # no driver-ready yet: it waits, as the script's until loop, and registers nothing
        deadline = time.time() + 30
        while "driver validations" not in text() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        check("waiting for the driver validations to be ready" in text(), "no wait for driver-ready: %s" % text())
        time.sleep(1)
        check(not [e for e in h.events.items[mark:] if e["event"] == "register"], "registered before driver-ready")
        # the validator's file for a driver on the host (cmd/nvidia-validator getDriverInfo)
        with open(os.path.join(val, "driver-ready.tmp"), "w") as f:
            f.write("IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\n"
                    "NVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n")
        os.rename(os.path.join(val, "driver-ready.tmp"), os.path.join(val, "driver-ready"))
        deadline = time.time() + 60
        while "Registered device plugin" not in text() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        h.events.wait(lambda e: e["event"] == "register" and e.get("resource") == "nvidia.com/gpu", start=mark,
                      timeout=1, what="nvidia.com/gpu registered from the Operator's device-plugin container\n" + text())
        lst = h.wait_list("nvidia.com/gpu", start=mark, timeout=30)
        ids = [d["id"] for d in lst["devices"]]
        (cr,) = h.allocate("nvidia.com/gpu", ids[:1]).container_responses
        specs = os.listdir(cdi)
        check(len(specs) == 1 and not os.path.exists(below_host),
              "the spec went to %r in /var/run/cdi (and not below the read-only /host)" % specs)
        with open(os.path.join(cdi, specs[0])) as f:
            spec = json.load(f)
        hooks = {hk["path"] for e in [spec.get("containerEdits", {})] + [d["containerEdits"] for d in spec["devices"]]
                 for hk in e.get("hooks", [])}
        check(hooks == {OPERATOR_PLUGIN_ENV["NVIDIA_CDI_HOOK_PATH"]}, "hooks of the spec: %s" % hooks)
        # both strategies CDI: PASS_DEVICE_SPECS adds nothing, as upstream (internal/plugin/server.go AllCDIEnabled)
        check([d.name for d in cr.cdi_devices] and cr.annotations and not cr.devices,
              "Allocate: cdi %s, annotations %s, device specs %d"
              % (list(cr.cdi_devices), dict(cr.annotations), len(cr.devices)))
        pid = sh(PODMAN + ["inspect", "--format", "{{.State.Pid}}", name]).stdout.strip()
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
        # config-manager finds the process to signal by cmdline[0] (k8s-device-plugin cmd/config-manager)
        check(argv[0] == b"nvidia-device-plugin", "the plugin runs as %r" % argv)
        # ... and the kernel's name of it (comm, cut at 15), which gpulet's config-manager checks too: the
        # entrypoint execs the image's link of that name
        with open("/proc/%s/comm" % pid) as f:
            comm = f.read().strip()
        check(comm == "nvidia-device-plugin"[:15], "the plugin's comm is %r" % comm)
        check("IS_HOST_DRIVER=true" in text() and "Starting nvidia-device-plugin" in text(), "log: %s" % text()[-1500:])
        print("PASS the GPU Operator's device-plugin container on gpulet's image: waited for driver-ready, registered "
              "as nvidia-device-plugin, %d devices, spec %s in /var/run/cdi with hook %s" % (len(ids), specs[0],
                                                                                             sorted(hooks)[0]))
    finally:
        sh(PODMAN + ["stop", "-t", "5", name])
        proc.wait(timeout=30)


def main():
    t0 = time.time()
    image = build_image()
    with open(os.path.join(BUILD, "image", "digest")) as f:
        first = f.read().split()
    check_contents(image)
    check_scannable(image)
    check_reproducible(image, first)
    check_index(first)
    h = Node()
    try:
        test_plugin(image, h)
        test_cli(image, h)
        test_exporter(image, h)
        test_upstream_exporters(image, h)
        test_no_shell(image)
        test_operator_plugin(image, h)
    except AssertionError as e:
        print("FAIL: %s" % e)
        if os.path.exists(h.log_path):
            print("--- plugin log (tail) ---\n" + h.log_text()[-3000:])
        raise SystemExit(1)
    finally:
        h.close()
    print("PASS image (%.1fs)" % (time.time() - t0))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("FAIL: %s" % e)
        raise SystemExit(1)
