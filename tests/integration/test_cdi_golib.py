#!/usr/bin/python3
"""The CDI Go library 0.5.2 (Debian golang-github-container-orchestrated-devices-container-device-interface-dev,
the code podman 4.3 vendors) as a second, runtime-free consumer of our specs (docs/reference/real-peers.md §H).

A small Go program, built here in GOPATH mode, loads spec dirs with cdi.NewCache, reports per-file
errors, lists devices and injects devices into an OCI spec. Checked:
  * every generated spec of every fixture loads without error, its device list equals
    `gpulet cdi list --json`, and injecting a GPU, a MIG instance and `all` yields the device nodes,
    mounts and env of our spec;
  * a table of >= 30 hand-written specs (cdiVersion 0.2.0 ... 1.0.0, v0.5.0, annotations, intelRdt,
    additionalGids, netDevices, hooks, device node fields, case variants of keys, YAML typing): the Go
    library refuses each file exactly when `gpulet cdi validate --runtime podman-4.3` reports an error
    that stops loading; the rows where gpulet is stricter carry the reason, which
    docs/reference/cdi.md §8 must list;
  * a 1-character class makes the library panic while scanning (why validate insists on >= 2).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from test_cdi_testlib import FIXTURES, check, finish, generate, gpulet, load_fixture, mkroot

GOPATH = "/usr/share/gocode"
CDI_PKG = "github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"

GO_MAIN = r'''
package main

import (
	"encoding/json"
	"flag"
	"os"
	"strings"

	"github.com/container-orchestrated-devices/container-device-interface/pkg/cdi"
	oci "github.com/opencontainers/runtime-spec/specs-go"
)

func main() {
	dirs := flag.String("dirs", "", "comma-separated spec dirs, lowest priority first")
	inject := flag.String("inject", "", "comma-separated qualified device names")
	flag.Parse()
	out := map[string]interface{}{}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(strings.Split(*dirs, ",")...), cdi.WithAutoRefresh(false))
	if err != nil {
		out["cache_error"] = err.Error()
	}
	errs := map[string][]string{}
	if cache != nil {
		for file, list := range cache.GetErrors() {
			for _, e := range list {
				errs[file] = append(errs[file], e.Error())
			}
		}
		out["devices"] = cache.ListDevices()
		if *inject != "" {
			spec := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
			if _, err := cache.InjectDevices(spec, strings.Split(*inject, ",")...); err != nil {
				out["inject_error"] = err.Error()
			}
			out["oci"] = spec
		}
	}
	out["errors"] = errs
	json.NewEncoder(os.Stdout).Encode(out)
}
'''


def build_tool(tmp):
    if not shutil.which("go"):
        print("FAIL: go not found: install golang-go (Go 1.19, GOPATH mode with Debian's Go packages)")
        sys.exit(1)
    if not os.path.isdir(os.path.join(GOPATH, "src", CDI_PKG)):
        print("FAIL: the CDI Go library is missing: install "
              "golang-github-container-orchestrated-devices-container-device-interface-dev")
        sys.exit(1)
    d = os.path.join(tmp, "gosrc")
    os.makedirs(d)
    with open(os.path.join(d, "main.go"), "w") as f:
        f.write(GO_MAIN)
    exe = os.path.join(tmp, "cdi-golib")
    env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="")
    r = subprocess.run(["go", "build", "-o", exe, "main.go"], cwd=d, env=env, capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        print("FAIL: building the Go CDI consumer:", r.stderr)
        sys.exit(1)
    return exe


def golib(exe, dirs, inject=()):
    r = subprocess.run([exe, "-dirs", ",".join(dirs), "-inject", ",".join(inject)], capture_output=True, text=True,
                       timeout=60)
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


def good_specs(exe, tmp):
    n = 0
    for fixture in FIXTURES:
        fx = load_fixture(fixture)
        if not fx.get("gpus"):
            continue
        root = os.path.join(tmp, fixture)
        mkroot(root, fixture, host_view=True)  # driver root = the fake root as the host sees it
        specdir = os.path.join(tmp, fixture + "-cdi")
        for args in (["--format", "yaml", "--output", specdir + "/nvidia.yaml"],
                     ["--vendor", "k8s.device-plugin.nvidia.com", "--device-name-strategy", "uuid", "--format",
                      "json", "--output", specdir + "/"]):
            r = generate(fixture, root, ["--driver-root", root] + args)
            check(r.returncode == 0, f"{fixture}: generate {args}: {r.stderr.strip()}")
        spec = json.load(open(os.path.join(specdir, "k8s.device-plugin.nvidia.com-gpu.json")))
        mig = next((d["name"] for d in spec["devices"] if d["name"].startswith("MIG-")), None)
        gpu = next(d["name"] for d in spec["devices"] if d["name"].startswith("GPU-"))
        inject = ["k8s.device-plugin.nvidia.com/gpu=" + gpu, "nvidia.com/gpu=all"]
        if mig:
            inject.append("k8s.device-plugin.nvidia.com/gpu=" + mig)
        r, out = golib(exe, [specdir], inject)
        check(out is not None, f"{fixture}: Go consumer failed: {r.stderr[-500:]}")
        if out is None:
            continue
        check(out["errors"] == {}, f"{fixture}: Go library errors: {out['errors']}")
        check("inject_error" not in out, f"{fixture}: inject: {out.get('inject_error')}")
        listed = gpulet(["cdi", "list", "--json", "--dir", specdir])
        ours = sorted(e["name"] for e in json.loads(listed.stdout))
        check(sorted(out["devices"]) == ours, f"{fixture}: device lists differ:\n go  {sorted(out['devices'])}\n "
                                              f"us  {ours}")
        oci = out["oci"]
        paths = {d["path"] for d in oci["linux"].get("devices", [])}
        want = {"/dev/nvidia%d" % g["minor"] for g in fx["gpus"] if not g.get("lost")} | {"/dev/nvidiactl", "/dev/nvidia-uvm"}
        for d in spec["devices"]:
            if d["name"] == mig:
                want |= {n["path"] for n in d["containerEdits"]["deviceNodes"]}
        check(want <= paths, f"{fixture}: injected device nodes missing {sorted(want - paths)}")
        check(all(d.get("type") == "c" and d.get("major") for d in oci["linux"]["devices"]),
              f"{fixture}: Go library saw non-char device nodes")
        mounts = {m["destination"] for m in oci.get("mounts", [])}
        check("/usr/lib/x86_64-linux-gnu/libcuda.so.1" in mounts, f"{fixture}: libcuda.so.1 mount injected")
        check("NVIDIA_VISIBLE_DEVICES=void" in oci["process"].get("env", []), f"{fixture}: env injected")
        n += 1
    return n


BASE = {"cdiVersion": "0.5.0", "kind": "example.com/gpu",
        "devices": [{"name": "d0", "containerEdits": {"env": ["A=1"]}}]}


def dev_edits(edits, version="0.5.0"):
    return dict(BASE, cdiVersion=version, devices=[{"name": "d0", "containerEdits": edits}])


def spec_edits(edits, version="0.5.0"):
    return dict(BASE, cdiVersion=version, containerEdits=edits)


NODE = {"path": "/dev/null"}
HOOK = {"hookName": "createContainer", "path": "/bin/true"}
# Deliberate disagreements: gpulet follows the newer CDI libraries or the OCI runtime, where the
# 0.5.2 library (podman 4.3) is looser. Each is listed in docs/reference/cdi.md §8.
NEWER_LIBS = "CDI libraries from 0.5.4 on refuse a cdiVersion lower than the fields need; 0.5.2 does not check"
OCI_ABS = "the OCI runtime refuses a relative path at container creation"
OCI_TIMEOUT = "the OCI runtime spec requires a hook timeout greater than zero"
NO_DEVICES = "CDI libraries from 1.0.0 on refuse a spec without devices (0.5.2 loads it and defines nothing)"

# name -> (spec or raw text, the Go library 0.5.2 refuses it, gpulet validate --runtime podman-4.3 reports
# a blocking error, why they differ or None). Hand-written: cdiVersion 0.3.0 ... 1.0.0, v-prefix,
# annotations, intelRdt, additionalGids, netDevices, hooks, device node fields, mounts, case variants of
# keys (Go's JSON decoding matches keys without regard to case), YAML typing.
CASES = {
    "control.json": (BASE, False, False, None),
    "version-030.json": (dict(BASE, cdiVersion="0.3.0"), False, False, None),
    "version-040-mount-type.json": (spec_edits({"mounts": [{"hostPath": "/a", "containerPath": "/a",
                                                            "type": "bind"}]}, "0.4.0"), False, False, None),
    "version-030-mount-type.json": (spec_edits({"mounts": [{"hostPath": "/a", "containerPath": "/a",
                                                            "type": "bind"}]}, "0.3.0"), False, True, NEWER_LIBS),
    "version-v050.json": (dict(BASE, cdiVersion="v0.5.0"), True, True, None),
    "version-060.json": (dict(BASE, cdiVersion="0.6.0"), True, True, None),
    "version-070.json": (dict(BASE, cdiVersion="0.7.0"), True, True, None),
    "version-080.json": (dict(BASE, cdiVersion="0.8.0"), True, True, None),
    "version-100.json": (dict(BASE, cdiVersion="1.0.0"), True, True, None),
    "version-999.json": (dict(BASE, cdiVersion="9.9.9"), True, True, None),
    "version-020.json": (dict(BASE, cdiVersion="0.2.0"), False, True,
                         "every CDI library refuses a cdiVersion below 0.3.0 from 0.5.4 on; 0.5.2 still loads 0.2.0"),
    "annotations-050.json": (dict(BASE, annotations={"a": "b"}), True, True, None),
    "device-annotations-060.json": (dict(BASE, cdiVersion="0.6.0", devices=[
        {"name": "d0", "annotations": {"a": "b"}, "containerEdits": {"env": ["A=1"]}}]), True, True, None),
    "intelrdt-050.json": (spec_edits({"intelRdt": {"closID": "c1"}}), True, True, None),
    "additionalgids-050.json": (dev_edits({"env": ["A=1"], "additionalGids": [44]}), True, True, None),
    "netdevices-050.json": (dev_edits({"netDevices": [{"hostInterfaceName": "eth0", "name": "e0"}]}), True, True,
                            None),
    "dotted-class-050.json": (dict(BASE, kind="example.com/gpu.x"), True, True, None),
    "bad-name.json": (dict(BASE, devices=[{"name": "b c", "containerEdits": {"env": ["A=1"]}}]), True, True, None),
    "colon-name.json": (dict(BASE, devices=[{"name": "a:b", "containerEdits": {"env": ["A=1"]}}]), False, False,
                        None),
    "bad-kind.json": (dict(BASE, kind="example.com"), True, True, None),
    "unknown-field.json": (dict(BASE, bogus=1), True, True, None),
    "empty-edits.json": (dev_edits({}), True, True, None),
    "null-edits.json": (dict(BASE, devices=[{"name": "d0", "containerEdits": None}]), True, True, None),
    "dup-name.json": (dict(BASE, devices=BASE["devices"] * 2), True, True, None),
    "bad-env.json": (dev_edits({"env": ["=1"]}), True, True, None),
    "env-no-equals.json": (dev_edits({"env": ["A"]}), True, True, None),
    "hook-ok.json": (dev_edits({"hooks": [dict(HOOK, args=["true"], env=["X=1"], timeout=5)]}), False, False,
                     None),
    "bad-hook.json": (dev_edits({"hooks": [{"hookName": "bogus", "path": "/bin/true"}]}), True, True, None),
    "hook-empty-path.json": (dev_edits({"hooks": [dict(HOOK, path="")]}), True, True, None),
    "hook-bad-env.json": (dev_edits({"hooks": [dict(HOOK, env=["X"])]}), True, True, None),
    "hook-timeout-0.json": (dev_edits({"hooks": [dict(HOOK, timeout=0)]}), False, True, OCI_TIMEOUT),
    "relative-hook.json": (dev_edits({"hooks": [{"hookName": "prestart", "path": "bin/true"}]}), False, True,
                           OCI_ABS),
    "node-full.json": (dev_edits({"deviceNodes": [dict(NODE, type="c", major=1, minor=3, fileMode=438,
                                                       permissions="rw", uid=0, gid=0)]}), False, False, None),
    "node-type-x.json": (dev_edits({"deviceNodes": [dict(NODE, type="x")]}), True, True, None),
    "node-permissions-none.json": (dev_edits({"deviceNodes": [dict(NODE, permissions="none")]}), True, True, None),
    "node-filemode-negative.json": (dev_edits({"deviceNodes": [dict(NODE, fileMode=-1)]}), True, True, None),
    "node-uid-string.json": (dev_edits({"deviceNodes": [dict(NODE, uid="0")]}), True, True, None),
    "wrong-type.json": (dev_edits({"deviceNodes": [{"path": "/dev/null", "major": "1"}]}), True, True, None),
    "mount-no-container-path.json": (dev_edits({"mounts": [{"hostPath": "/a"}]}), True, True, None),
    "case-devicenodes.json": (dev_edits({"devicenodes": [NODE]}), False, False, None),
    "case-top-level.json": ({"CDIVersion": "0.5.0", "KIND": "example.com/gpu",
                             "Devices": [{"Name": "d0", "ContainerEdits": {"Env": ["A=1"]}}]}, False, False, None),
    "case-misspelt.json": (dev_edits({"devicenodez": [NODE]}), True, True, None),
    "case-yaml.yaml": ("cdiVersion: 0.5.0\nkind: example.com/yc\ndevices:\n- name: d0\n  containeredits:\n"
                       "    ENV: [B=2]\n    deviceNodes:\n    - PATH: /dev/null\n      hostpath: /dev/null\n",
                       False, False, None),
    "syntax.json": ("{\"cdiVersion\": ", True, True, None),
    "yaml-ok.yaml": ("cdiVersion: 0.5.0\nkind: example.com/yy\ndevices:\n- name: \"0\"\n  containerEdits:\n"
                     "    env: [B=2]\n", False, False, None),
    "yaml-bool-env.yaml": ("cdiVersion: 0.5.0\nkind: example.com/yb\ndevices:\n- name: d0\n  containerEdits:\n"
                           "    env: [yes]\n", True, True, None),
    "no-devices.json": (dict(BASE, devices=[]), False, True, NO_DEVICES),
    "yaml-digit-030.yaml": ("cdiVersion: 0.3.0\nkind: example.com/zz\ndevices:\n- name: \"0\"\n  containerEdits:\n"
                            "    env: [B=2]\n", False, True, NEWER_LIBS),
}


def bad_specs(exe, tmp):
    d = os.path.join(tmp, "cases")
    os.makedirs(d)
    for i, (name, (spec, _, _, _)) in enumerate(CASES.items()):
        if isinstance(spec, dict):  # a distinct kind per file, so files do not collide on device names
            key = next(k for k in spec if k.lower() == "kind")
            spec = dict(spec, **{key: spec[key].replace("example.com", "e%d.example.com" % i)})
        with open(os.path.join(d, name), "w") as f:
            f.write(spec if isinstance(spec, str) else json.dumps(spec))
    r, out = golib(exe, [d])
    check(out is not None, f"cases: Go consumer failed: {r.stderr[-500:]}")
    v = gpulet(["cdi", "validate", "--json", "--no-host-paths", "--runtime", "podman-4.3", "--dir", d])
    problems = json.loads(v.stdout)["problems"]
    blocking = {"spec-invalid", "spec-unreadable", "version-too-new"}
    disagree = 0
    for name, (_, go_refuses, we_refuse, why) in CASES.items():
        path = os.path.join(d, name)
        go_err = out is not None and path in out["errors"]
        ours = [p["code"] for p in problems if p["file"] == path and p["severity"] == "error"
                and p["category"] in blocking]
        check(go_err == go_refuses, f"{name}: Go library {'refused' if go_err else 'accepted'} it "
                                 f"({out['errors'].get(path) if out else '?'})")
        check(bool(ours) == we_refuse, f"{name}: gpulet validate {ours or 'accepted it'}")
        check((go_refuses != we_refuse) == (why is not None), f"{name}: a disagreement has a reason, an agreement none")
        disagree += why is not None
    check(len(CASES) >= 30, f"{len(CASES)} cases (at least 30)")
    doc = open(os.path.join(os.environ["GPULET_SRC"], "docs/reference/cdi.md")).read()
    for why in {c[3] for c in CASES.values() if c[3]}:
        check(why in doc, f"deliberate disagreement listed in docs/reference/cdi.md: {why}")

    # 1-character class: the library panics while scanning the dir (lib 0.5.2 bug)
    d1 = os.path.join(tmp, "one-char-class")
    os.makedirs(d1)
    with open(os.path.join(d1, "x.json"), "w") as f:
        json.dump(dict(BASE, kind="x.com/y"), f)
    r, _ = golib(exe, [d1])
    check(r.returncode != 0 and "panic" in r.stderr, f"1-char class: Go library rc {r.returncode} (expected a panic)")
    v = gpulet(["cdi", "validate", "--json", "--dir", d1])
    check(v.returncode == 1 and any(p["code"] == "class-too-short" for p in json.loads(v.stdout)["problems"]),
          "1-char class: validate reports class-too-short")


def main():
    with tempfile.TemporaryDirectory(prefix="gpulet-cdi-golib.") as tmp:
        exe = build_tool(tmp)
        n = good_specs(exe, tmp)
        bad_specs(exe, tmp)
    return finish(f"{n} fixtures load and inject in the CDI Go library; {len(CASES)} cases agree with validate")


if __name__ == "__main__":
    sys.exit(main())
