#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Doctor scenarios: each tests/scenarios/<name>/ is a node (built from a fake-NVML fixture with
tests/lib/mkroot.sh, then the "healthy" base below, then the scenario's setup.sh), and expect.json
says which finding ids `gpulet doctor --root ... --json` must report as fail / warn, which must
not appear at all, and words a finding's evidence must hold; "no_other_fail" / "no_warn" forbid any
other fail / any other warn (a healthy node); "skip_reason" maps a finding id to words the reason
its check was skipped must hold; scenario.json's "kubelet_root" and
"device_plugin_dir" move the healthy kubelet's root dir and device-plugins dir; "no_nvml_library"
leaves --nvml-library out, so the doctor finds libnvidia-ml.so.1 on the node itself (mkroot
--with-fakenvml installs the fake NVML there).
"fix" / "fix_lacks" map an id to words its fix must / must not hold.
Every finding that carries its fix as a command ("run" for the node, "run_here" for the node under
--root) gets it executed on the scenario's node (its own temp copy), and the doctor, run again, must no
longer report that finding; expect.json's "runs" lists ids whose finding must carry such a command.
Usage: run.py [--keep] [NAME...]; env GPULET, FAKE_NVML_LIB, GPULET_SRC."""
import json, os, shlex, shutil, socket, stat, subprocess, sys, tempfile, time

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPULET = os.environ.get("GPULET") or os.path.join(SRC, "build", "gpulet")
FAKE = os.environ.get("FAKE_NVML_LIB") or os.path.join(SRC, "build", "fakenvml", "libnvidia-ml.so.1")
HERE = os.path.join(SRC, "tests", "scenarios")

CRI = 'plugins."io.containerd.grpc.v1.cri"'
CONTAINERD_V2 = f"""version = 2
[{CRI}]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
[{CRI}.containerd]
  default_runtime_name = "runc"
  [{CRI}.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [{CRI}.containerd.runtimes.runc.options]
      SystemdCgroup = true
  [{CRI}.containerd.runtimes.nvidia]
    runtime_type = "io.containerd.runc.v2"
    [{CRI}.containerd.runtimes.nvidia.options]
      BinaryName = "/usr/bin/nvidia-container-runtime"
      SystemdCgroup = true
"""
DPKG = """Package: containerd
Status: install ok installed
Version: 1.7.24~ds1-1

Package: nvidia-container-toolkit
Status: install ok installed
Version: {toolkit}-1

"""
POD_UID = "0b5e3c1e-6f1a-4d7e-9a55-7c0d9f1e2a01"


def put(root, rel, text, mode=0o644):
    p = os.path.join(root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)


def bind_socket(root, rel):
    p = os.path.join(root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(os.path.dirname(p))  # sun_path is short: bind by relative name
    try:
        s.bind(os.path.basename(p))
    finally:
        os.chdir(cwd)
        s.close()  # the socket file stays: a kubelet/plugin "was here"


def mig_instances(gpu):
    for gi in gpu.get("mig", []):
        for ci in gi.get("cis", []):
            yield ci["uuid"], ci["profile_name"]


def cdi_spec(fixture):
    """What a CDI generator writes for the node: one device per GPU / MIG instance, by index."""
    devices = []
    for i, g in enumerate(fixture["gpus"]):
        node = {"path": f"/dev/nvidia{g['minor']}"}
        if g.get("mig_mode"):
            for m, (uuid, _) in enumerate(mig_instances(g)):
                devices.append({"name": f"{i}:{m}", "containerEdits": {"deviceNodes": [node]}})
        else:
            devices.append({"name": str(i), "containerEdits": {"deviceNodes": [node]}})
    return {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": devices,
            "containerEdits": {"deviceNodes": [{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}]}}


def checkpoint(fixture, entries):
    reg = {}
    for g in fixture["gpus"]:
        if g.get("mig_mode"):
            for uuid, prof in mig_instances(g):
                reg.setdefault(f"nvidia.com/mig-{prof}", []).append(uuid)
        else:
            reg.setdefault("nvidia.com/gpu", []).append(g["uuid"])
    return {"Data": {"PodDeviceEntries": entries, "RegisteredDevices": reg}, "Checksum": 1234567890}


def healthy(root, fixture, kdir="/var/lib/kubelet", dpdir="/var/lib/kubelet/device-plugins"):
    """A working node: containerd with the nvidia runtime and CDI, a CDI spec, kubelet and the plugin
    registered, one running pod holding GPU 0, toolkit new enough, a kernel log with an app XID.
    kdir: kubelet's --root-dir (pod-resources/ and pods/ go there); dpdir: where kubelet serves device
    plugins (kubelet.sock, plugin sockets, checkpoint): released kubelets use the fixed
    /var/lib/kubelet/device-plugins whatever --root-dir says (docs/reference/kubelet-root-dir.md)."""
    dev_char_links(root)
    put(root, "/etc/containerd/config.toml", CONTAINERD_V2)
    put(root, "/usr/bin/nvidia-container-runtime", "#!/bin/sh\nexec runc \"$@\"\n", 0o755)
    put(root, "/etc/cdi/nvidia.json", json.dumps(cdi_spec(fixture), indent=1))
    put(root, "/var/lib/dpkg/status", DPKG.format(toolkit="1.14.6"))
    put(root, "/var/lib/kubelet/config.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n")
    for s in (f"{dpdir}/kubelet.sock", f"{kdir}/pod-resources/kubelet.sock", f"{dpdir}/nvidia-gpu.sock"):
        bind_socket(root, s)
    profiles = {p for g in fixture["gpus"] for _, p in mig_instances(g)}
    for p in sorted(profiles):
        bind_socket(root, f"{dpdir}/nvidia-mig-{p}.sock")
    g0 = fixture["gpus"][0]
    entries = [{"PodUID": POD_UID, "ContainerName": "train", "ResourceName": "nvidia.com/gpu",
                "DeviceIDs": {"0": [g0["uuid"]]}, "AllocResp": "CgA="}]
    put(root, f"{dpdir}/kubelet_internal_checkpoint",
        json.dumps(checkpoint(fixture, entries)))
    os.makedirs(os.path.join(root, kdir.lstrip("/"), f"pods/{POD_UID}/containers/train"), exist_ok=True)
    put(root, "/var/log/kern.log",
        "Dec  2 10:00:00 node kernel: [   12.3] nvidia-nvlink: Nvlink Core is being initialized\n"
        "Dec  2 10:05:00 node kernel: [  300.1] NVRM: Xid (PCI:0000:07:00): 13, pid=4242, name=python, "
        "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n")


def dev_char_links(root):
    """/dev/char/<major>:<minor> links to the NVIDIA device nodes, as nvidia-ctk system
    create-dev-char-symlinks makes them (a node on the systemd cgroup driver needs them:
    docs/reference/doctor-classes.md §6)."""
    for sub in ("dev", "dev/nvidia-caps"):
        d = os.path.join(root, sub)
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            st = os.lstat(os.path.join(d, name))
            if not name.startswith("nvidia") or not stat.S_ISCHR(st.st_mode):
                continue
            link = os.path.join(root, "dev/char", f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}")
            os.makedirs(os.path.dirname(link), exist_ok=True)
            if not os.path.lexists(link):
                os.symlink(os.path.join("..", sub[4:], name) if sub != "dev" else os.path.join("..", name), link)


def patch(doc, path, value):
    """path like "gpus.1.telemetry.ecc.dbe_volatile": create dicts on the way."""
    keys = path.split(".")
    cur = doc
    for k in keys[:-1]:
        k = int(k) if isinstance(cur, list) else k
        if not isinstance(cur, list) and k not in cur:
            cur[k] = {}
        cur = cur[k]
    last = keys[-1]
    cur[int(last) if isinstance(cur, list) else last] = value


def build_node(name, tmp):
    """Scenario name's node under tmp: (root, fixture file, kubelet root dir), or raise RuntimeError."""
    d = os.path.join(HERE, name)
    spec = json.load(open(os.path.join(d, "scenario.json")))
    root = os.path.join(tmp, "root")
    fx_name = spec.get("fixture", "dgx-a100")
    fixture = json.load(open(os.path.join(SRC, "tests", "fixtures", f"{fx_name}.json")))
    for k, v in spec.get("nvml_patch", {}).items():
        patch(fixture, k, v)
    nvml = os.path.join(tmp, "nvml.json")
    json.dump(fixture, open(nvml, "w"))
    mk = subprocess.run([os.path.join(SRC, "tests", "lib", "mkroot.sh"), root, nvml, *spec.get("mkroot", [])],
                        capture_output=True, text=True)
    if mk.returncode != 0:
        raise RuntimeError(f"mkroot failed: {mk.stderr.strip()[-400:]}")
    kdir = spec.get("kubelet_root", "/var/lib/kubelet")
    if spec.get("base", "healthy") == "healthy":
        healthy(root, fixture, kdir, spec.get("device_plugin_dir", "/var/lib/kubelet/device-plugins"))
    env = dict(os.environ, ROOT=root, SCEN=d, FIXTURE=nvml, GPULET=GPULET, POD_UID=POD_UID, FAKE_NVML_LIB=FAKE,
               NODE_LIB=os.path.join(HERE, "node-lib.sh"))
    if os.path.exists(os.path.join(d, "setup.sh")):
        st = subprocess.run(["sh", "-e", os.path.join(d, "setup.sh")], env=env, capture_output=True, text=True)
        if st.returncode != 0:
            raise RuntimeError(f"setup.sh failed: {st.stderr.strip()[-400:]}")
    return root, nvml, kdir


# options whose value is a path written into a file for the node, not a file the command touches here
NODE_VALUE_OPTS = ("--nvidia-cdi-hook-path", "--driver-root")


def fix_outside_root(cmd, root):
    """The absolute paths a fix command would touch outside the node's root (it must touch none)."""
    words = shlex.split(cmd)
    bad = []
    for k, w in enumerate(words):
        prev = words[k - 1] if k else ""
        if not w.startswith("/") or prev in NODE_VALUE_OPTS or w in (FAKE, GPULET):
            continue
        if w != root and not w.startswith(root + "/"):
            bad.append(w)
    return bad


def check_fixes(doc, root, args, env, tmp):
    """Run each finding's fix command on the node, then the doctor again: the finding must be gone."""
    errs = []
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    if not os.path.exists(os.path.join(bindir, "gpulet")):
        os.symlink(GPULET, os.path.join(bindir, "gpulet"))
    for f in doc["findings"]:
        cmd = f.get("run_here") or f.get("run")
        if not cmd:
            continue
        if f.get("run_here"):  # the node's form: the same command with the node's paths and no --root
            here, stripped = shlex.split(f["run_here"]), []
            for k, w in enumerate(here):
                if w in ("--root", "--nvml-library") or (k and here[k - 1] in ("--root", "--nvml-library")):
                    continue
                stripped.append(w[len(root):] if w.startswith(root + "/") else w)
            if stripped != shlex.split(f.get("run", "")):
                errs.append(f"{f['id']}: run and run_here differ beyond the root: {f.get('run')!r} vs {cmd!r}")
        bad = fix_outside_root(cmd, root)
        if bad:
            errs.append(f"{f['id']}: fix command touches {bad} outside the node's root: {cmd}")
            continue
        p = subprocess.run(["sh", "-c", cmd], env=dict(env, PATH=bindir + ":" + os.environ.get("PATH", "")),
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            errs.append(f"{f['id']}: fix command failed (rc {p.returncode}): {cmd}: {p.stderr.strip()[-400:]}")
            continue
        again = subprocess.run(args, env=env, capture_output=True, text=True)
        try:
            after = {x["id"] for x in json.loads(again.stdout)["findings"]}
        except ValueError:
            errs.append(f"{f['id']}: doctor after the fix printed no JSON: {again.stdout[:200]}")
            continue
        if f["id"] in after:
            errs.append(f"{f['id']}: still reported after running its fix: {cmd}")
    return errs


def run(name, keep):
    d = os.path.join(HERE, name)
    spec = json.load(open(os.path.join(d, "scenario.json")))
    expect = json.load(open(os.path.join(d, "expect.json")))
    tmp = tempfile.mkdtemp(prefix="scen-")
    try:
        try:
            root, nvml, kdir = build_node(name, tmp)
        except RuntimeError as e:
            return [str(e)]
        env = dict(os.environ, ROOT=root, SCEN=d, FIXTURE=nvml, GPULET=GPULET, POD_UID=POD_UID)
        standin = None
        if "podres" in spec:  # a live kubelet PodResources server (python3-grpcio) on the node's socket
            ready = os.path.join(tmp, "podres.ready")
            standin = subprocess.Popen(["/usr/bin/python3", os.path.join(SRC, "tests", "integration", "podres_standin.py"),
                                        os.path.join(root, kdir.lstrip("/"), "pod-resources/kubelet.sock"),
                                        os.path.join(d, spec["podres"]), "--ready", ready],
                                       stderr=subprocess.DEVNULL)
            for _ in range(200):
                if os.path.exists(ready):
                    break
                time.sleep(0.05)
            else:
                standin.kill()
                return ["podres stand-in did not start"]
        args = [GPULET, "doctor", "--root", root, "--json"] + ([] if spec.get("no_nvml_library") else
                                                               ["--nvml-library", FAKE])
        for opt in ("pods", "node", "kernel-log", "events"):
            if opt in spec:
                args += [f"--{opt}", os.path.join(d, spec[opt])]
        args += spec.get("args", [])
        p = subprocess.run(args, env=dict(env, FAKE_NVML_FIXTURE=nvml), capture_output=True, text=True)
        if standin:
            standin.terminate()
            standin.wait()
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            return [f"not JSON (rc {p.returncode}): {p.stdout[:300]} {p.stderr[:300]}"]
        got = {f["id"]: f["severity"] for f in doc["findings"]}
        errs = []
        for sev in ("fail", "warn"):
            for i in expect.get(sev, []):
                if got.get(i) != sev:
                    errs.append(f"expected {i} as {sev}, got {got.get(i, 'nothing')}")
        for i in expect.get("absent", []):
            if i in got:
                errs.append(f"{i} must not be reported, got {got[i]}")
        for i in expect.get("skipped", []):
            if not any(i in s["ids"].split() for s in doc.get("skipped", [])):
                errs.append(f"expected the check reporting {i} to be skipped (explained by an earlier failure)")
        for i, words in expect.get("skip_reason", {}).items():
            if not any(i in s["ids"].split() and words in s.get("reason", "") for s in doc.get("skipped", [])):
                errs.append(f"expected the check reporting {i} to be skipped with the reason {words!r}")
        for i, wants in expect.get("fix", {}).items():  # words the finding's fix (or its command) must hold
            fx = " | ".join(f["fix"] + " " + (f.get("run") or "") for f in doc["findings"] if f["id"] == i)
            errs += [f"{i}: fix lacks {w!r}: {fx[:600]}" for w in wants if w not in fx]
        for i, wants in expect.get("fix_lacks", {}).items():  # words wrong for this node
            fx = " | ".join(f["fix"] + " " + (f.get("run") or "") for f in doc["findings"] if f["id"] == i)
            errs += [f"{i}: fix must not say {w!r}: {fx[:600]}" for w in wants if w in fx]
        for i, wants in expect.get("evidence", {}).items():  # words the finding's evidence must hold
            ev = " | ".join(e for f in doc["findings"] if f["id"] == i for e in f["evidence"])
            errs += [f"{i}: evidence lacks {w!r}: {ev[:600]}" for w in wants if w not in ev]
        if expect.get("no_other_fail"):
            extra = [i for i, s in got.items() if s == "fail" and i not in expect.get("fail", [])]
            if extra:
                errs.append(f"unexpected fail findings {extra}")
        if expect.get("no_warn"):  # a healthy node: no warning either, beyond any listed in "warn"
            extra = [i for i, s in got.items() if s == "warn" and i not in expect.get("warn", [])]
            if extra:
                errs.append(f"unexpected warn findings {extra}")
        want_rc = expect.get("exit", 1 if expect.get("fail") else 0)
        if p.returncode != want_rc:
            errs.append(f"exit {p.returncode}, expected {want_rc}")
        for f in doc["findings"]:
            if f["severity"] != "ok" and (not f["summary"] or not f["fix"] or not f["evidence"]):
                errs.append(f"{f['id']}: a problem needs summary, evidence and fix")
        for i in expect.get("runs", []):
            if not any(f["id"] == i and (f.get("run") or f.get("run_here")) for f in doc["findings"]):
                errs.append(f"{i}: expected its fix as a command (run/run_here)")
        if "text" in expect:  # the readable report names the root cause first
            t = subprocess.run([a for a in args if a != "--json"], env=dict(env, FAKE_NVML_FIXTURE=nvml),
                               capture_output=True, text=True).stdout
            for want in expect["text"]:
                if want not in t:
                    errs.append(f"text report lacks {want!r}:\n{t[-600:]}")
        if doc.get("skipped"):  # the checks not done: their id count, the ids themselves under --verbose
            plain = [a for a in args if a != "--json"]
            for extra in ([], ["--verbose"]):
                t = subprocess.run(plain + extra, env=dict(env, FAKE_NVML_FIXTURE=nvml), capture_output=True,
                                   text=True).stdout
                for sk in doc["skipped"]:
                    ids = sk["ids"].split()
                    line = next((l for l in t.splitlines() if l.startswith("    ") and l.split()[:1] == [sk["check"]]), "")
                    shown = f"({sk['ids']})" if extra else f"({len(ids)} ids)"
                    if shown not in line or (not extra and len(ids) > 1 and any(i in line for i in ids)):
                        errs.append(f"text report{' --verbose' if extra else ''}: {sk['check']} not as {shown}: {line!r}")
        if not errs and not standin:  # last: the fixes change the node
            errs += check_fixes(doc, root, args, dict(env, FAKE_NVML_FIXTURE=nvml), tmp)
        if errs:
            errs.append("findings: " + json.dumps({i: s for i, s in got.items() if s != "ok"}))
        return errs
    finally:
        if keep:
            print(f"  kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    argv = sys.argv[1:]
    keep = "--keep" in argv
    names = [a for a in argv if a != "--keep"] or sorted(
        n for n in os.listdir(HERE) if os.path.exists(os.path.join(HERE, n, "expect.json")))
    failed = 0
    for n in names:
        errs = run(n, keep)
        print(f"{'FAIL' if errs else 'ok  '} {n}")
        for e in errs:
            print(f"     {e}")
        failed += bool(errs)
    if not argv:
        # every finding id a check may report is expected by at least one scenario
        listed = subprocess.run([GPULET, "doctor", "--list"], capture_output=True, text=True).stdout
        ids = {i for line in listed.splitlines() if line.strip().startswith("ids:") for i in line.split()[1:]}
        covered = set()
        for n in names:
            e = json.load(open(os.path.join(HERE, n, "expect.json")))
            covered |= set(e.get("fail", [])) | set(e.get("warn", []))
        missing = sorted(ids - covered)
        if not ids or missing:
            print(f"FAIL finding ids without a scenario: {missing or 'none listed by gpulet doctor --list'}")
            failed += 1
    print(f"{len(names) - failed}/{len(names)} scenarios pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
