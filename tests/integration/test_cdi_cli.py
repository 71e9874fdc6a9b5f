#!/usr/bin/python3
"""Black-box tests of the `gpulet cdi` command line: help and usage exit codes, --output forms
(stdout, DIR/, FILE.json, FILE.yaml, refusing FILE.yml and a foreign file), `cdi list` text and
JSON against the files written, and `cdi validate` exit codes, --json shape and --runtime-user; a
relative --dir; DIR operands; generate's refusals (missing roots, control nodes, libcuda, libnvidia-ml), partial-spec
warnings and --strict; conflicting specs (same dir, the dir that wins) and --force.
"""
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

import yaml

from test_cdi_testlib import GPULET, check, finish, generate, gpulet, mkroot

FIXTURE = "single-t4"


def static_hook(hook, root):
    """build/gpulet-cdi-hook: no program interpreter (ldd: not dynamic), deaf to LD_PRELOAD, and the
    hook's own refusals (docs/reference/cdi-hook.md §5, §6)."""
    with open(hook, "rb") as f:
        elf = f.read()
    phoff, phentsize, phnum = struct.unpack_from("<Q", elf, 32)[0], *struct.unpack_from("<HH", elf, 54)
    types = [struct.unpack_from("<I", elf, phoff + i * phentsize)[0] for i in range(phnum)]
    # the sanitizer build links it dynamically (ASan cannot be static): the refusals below still apply
    if "libasan" not in subprocess.run(["ldd", GPULET], capture_output=True, text=True).stdout:
        check(elf[:4] == b"\x7fELF" and 3 not in types, "gpulet-cdi-hook has no PT_INTERP: it is static")
        ldd = subprocess.run(["ldd", hook], capture_output=True, text=True)
        check(ldd.returncode != 0 and "not a dynamic executable" in ldd.stdout + ldd.stderr, f"ldd: {ldd.stdout}")
        r = subprocess.run([hook, "--help"], capture_output=True, text=True,
                           env=dict(os.environ, LD_PRELOAD="/nonexistent/evil.so", LD_LIBRARY_PATH="/nonexistent"))
        check(r.returncode == 0 and "update-ldcache" in r.stdout and not r.stderr, f"LD_PRELOAD ignored: {r.stderr}")
    state = json.dumps({"bundle": "/nonexistent", "root": root})
    for args, env, rc, what in ((["--ldconfig-path", "sbin/ldconfig"], {}, 2, "'sbin/ldconfig' is not valid"),
                                ([], {"GPULET_CDI_HOOK_LDCONFIG_TIMEOUT": "31"}, 2, "whole number in 1..30"),
                                ([], {"GPULET_CDI_HOOK_LDCONFIG_TIMEOUT": "5s"}, 2, "whole number in 1..30")):
        r = subprocess.run([hook, "update-ldcache", *args, "--folder", "/usr/lib64"], input=state, text=True,
                           capture_output=True, env=dict(os.environ, **env))
        check(r.returncode == rc and what in r.stderr and r.stderr.count("\n") == 1,
              f"hook {args} {env}: {r.returncode} {r.stderr!r}")
    # nvidia-cdi-hook's own flags come before the action and go through the option engine (as upstream: its
    # debug env vars; an unknown flag is refused); an unknown or missing action stays a warning and exit 0
    for args, env, rc, what in ((["--debug", "noop"], {}, 0, ""), (["-d", "--quiet", "noop"], {}, 0, ""),
                                (["noop"], {"NVIDIA_CTK_DEBUG": "false"}, 0, ""),
                                (["noop"], {"NVIDIA_CTK_DEBUG": "sometimes"}, 2, "env NVIDIA_CTK_DEBUG"),
                                (["--bogus", "noop"], {}, 2, "unrecognized option"),
                                (["--quiet"], {}, 0, "warning: no hook given"),
                                (["--quiet", "future-action", "--x"], {}, 0, "unsupported hook 'future-action'")):
        r = subprocess.run([hook, *args], input=state, text=True, capture_output=True, env=dict(os.environ, **env))
        check(r.returncode == rc and what in r.stderr, f"hook {args} {env}: {r.returncode} {r.stderr!r}")
    for bad in ("/", "/.", "/tmp/..", "/proc/self/root"):
        r = subprocess.run([hook, "create-symlinks", "--link", "a::/b"], input=json.dumps({"root": bad}), text=True,
                           capture_output=True)
        check(r.returncode == 1 and "is the host's \"/\"" in r.stderr, f"rootfs {bad}: {r.stderr!r}")


def no_silent_broken_spec(tmp):
    """generate refuses (exit 1, what/where/fix, no file) when the driver cannot work in a container, and
    names each item a partial spec leaves out (exit 0), an error with --strict."""
    root = os.path.join(tmp, "broken")
    mkroot(root, FIXTURE)
    out = os.path.join(tmp, "broken-out")
    libdir = os.path.join(root, "usr/lib/x86_64-linux-gnu")
    ver = json.load(open(os.path.join(os.environ["GPULET_SRC"], "tests/fixtures", FIXTURE + ".json")))["driver_version"]
    refusals = [
        (["--driver-root", "/nonexistent"], None, ["driver root /nonexistent does not exist", "Fix:"]),
        (["--dev-root", "/nonexistent"], None, ["dev root /nonexistent does not exist", "--dev-root"]),
        ([], "dev/nvidiactl", ["/dev/nvidiactl does not exist", "Fix:"]),
        ([], "dev/nvidia-uvm", ["/dev/nvidia-uvm does not exist", "nvidia-modprobe"]),
        ([], f"usr/lib/x86_64-linux-gnu/libcuda.so.{ver}", [f"libcuda.so.{ver} not found", "CUDA driver API"]),
        ([], f"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{ver}", [f"libnvidia-ml.so.{ver} not found", "Fix:"]),
    ]
    for args, remove, words in refusals:
        saved = None
        if remove:
            saved = os.path.join(tmp, "saved")
            os.rename(os.path.join(root, remove), saved)
        r = generate(FIXTURE, root, args + ["--output", out + "/"])
        check(r.returncode == 1 and all(w in r.stderr for w in words), f"refused {args or remove}: {r.stderr.strip()}")
        check(not os.path.exists(out), f"refused {args or remove}: nothing written")
        if saved:
            os.rename(saved, os.path.join(root, remove))
    # partial: the GPU node gone on a 1-GPU node is no spec at all; a missing expected library and its
    # SONAME link left dangling in ld.so.cache are warnings that name them, and errors with --strict
    os.rename(os.path.join(root, "dev/nvidia0"), os.path.join(tmp, "nv0"))
    r = generate(FIXTURE, root, ["--output", out + "/"])
    check(r.returncode == 1 and "/dev/nvidia0 does not exist" in r.stderr and not os.path.exists(out),
          f"GPU node missing: {r.stderr.strip()}")
    os.rename(os.path.join(tmp, "nv0"), os.path.join(root, "dev/nvidia0"))
    os.unlink(os.path.join(libdir, f"libnvidia-ptxjitcompiler.so.{ver}"))
    r = generate(FIXTURE, root, ["--output", out + "/"])
    check(r.returncode == 0 and "leaves out 2 items" in r.stderr and "PTX JIT" in r.stderr
          and "libnvidia-ptxjitcompiler.so.1: dangling link" in r.stderr, f"partial: {r.stderr}")
    check(os.path.exists(os.path.join(out, "nvidia.com-gpu.yaml")), "partial spec written")
    shutil.rmtree(out)
    r = generate(FIXTURE, root, ["--strict", "--output", out + "/"])
    check(r.returncode == 1 and "(--strict)" in r.stderr and "ptxjitcompiler.so.1: dangling" in r.stderr
          and not os.path.exists(out), f"--strict: {r.stderr}")
    # a lost GPU (degraded fixture) is named
    deg = os.path.join(tmp, "degraded")
    mkroot(deg, "degraded")
    r = generate("degraded", deg, [])
    check(r.returncode == 0 and "GPU 2" in r.stderr and "lost" in r.stderr, f"lost GPU named: {r.stderr}")


# nvidia-ctk's spec for the same kind, as `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` names it
CTK_SPEC = ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n"
            "    - path: /dev/nvidia0\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n"
            "containerEdits:\n  env: [NVIDIA_VISIBLE_DEVICES=void]\n")


def no_conflicts(tmp):
    """generate refuses to write beside a spec of the same devices (same dir, or the dir that wins),
    naming it, as validate and list see the conflict; --force says what it replaces, then moves it aside."""
    root = os.path.join(tmp, "conflicts")
    mkroot(root, FIXTURE)
    etc, run = os.path.join(root, "etc/cdi"), os.path.join(root, "var/run/cdi")
    os.makedirs(etc)
    os.makedirs(run)
    ctk = os.path.join(etc, "nvidia.yaml")
    with open(ctk, "w") as f:
        f.write(CTK_SPEC)
    ours = os.path.join(etc, "nvidia.com-gpu.yaml")
    r = generate(FIXTURE, root, ["--output", etc + "/"])
    check(r.returncode == 1 and ctk + " defines nvidia.com/gpu=0, nvidia.com/gpu=all too, in the same dir" in r.stderr
          and "fix:" in r.stderr and not os.path.exists(ours), f"same-dir conflict refused: {r.stderr}")
    # the shadow case: ours in /etc/cdi, nvidia-ctk's in /var/run/cdi (which wins)
    os.rename(ctk, os.path.join(run, "nvidia.yaml"))
    r = generate(FIXTURE, root, ["--output", etc + "/"])
    check(r.returncode == 1 and os.path.join(run, "nvidia.yaml") + " defines" in r.stderr
          and "in the dir that wins" in r.stderr and not os.path.exists(ours), f"shadowed refused: {r.stderr}")
    # ours in /var/run/cdi over one in /etc/cdi: written, with a note
    os.rename(os.path.join(run, "nvidia.yaml"), ctk)
    r = generate(FIXTURE, root, ["--output", run + "/"])
    check(r.returncode == 0 and "note: " + ctk in r.stderr and "wins over it" in r.stderr, f"shadows: {r.stderr}")
    os.unlink(os.path.join(run, "nvidia.com-gpu.yaml"))
    # --force in the same dir: says what it replaces, moves it aside; validate then finds no conflict
    r = generate(FIXTURE, root, ["--output", etc + "/", "--force"])
    moved = ctk + ".gpulet-replaced"
    check(r.returncode == 0 and "--force: replacing " + ctk in r.stderr and f"moved to {moved}" in r.stderr
          and r.stderr.index("--force: replacing") < r.stderr.index("wrote "), f"--force: {r.stderr}")
    check(os.path.exists(ours) and os.path.exists(moved) and not os.path.exists(ctk), "--force moved it aside")
    v = gpulet(["cdi", "validate", "--no-host-paths", "--root", root])
    check(v.returncode == 0 and "duplicate-device" not in v.stdout, f"validate after --force: {v.stdout}")
    # validate and list see the same conflict generate refused
    os.rename(moved, ctk)
    v = gpulet(["cdi", "validate", "--no-host-paths", "--dir", etc])
    check(v.returncode == 1 and "duplicate-device" in v.stdout and ctk in v.stdout, f"validate sees it: {v.stdout}")
    os.unlink(ctk)
    # a file at the output path with our marker for another kind: the message says which kind
    other = os.path.join(etc, "other.yaml")
    r = generate(FIXTURE, root, ["--output", other, "--vendor", "example.com"])
    check(r.returncode == 0, f"example.com spec: {r.stderr}")
    r = generate(FIXTURE, root, ["--output", other])
    check(r.returncode == 1 and "written by gpulet for kind example.com/gpu, not nvidia.com/gpu" in r.stderr
          and "no GPULET_CDI_SPEC" not in r.stderr, f"marker of another kind: {r.stderr}")
    r = generate(FIXTURE, root, ["--output", other, "--force"])
    check(r.returncode == 0 and "--force: replacing " + other in r.stderr and os.path.exists(other + ".gpulet-replaced"),
          f"--force over another kind's file: {r.stderr}")


def dir_operands(tmp):
    """`cdi validate DIR` reads DIR as a runtime reads a spec dir (its *.json/*.yaml in name order, a device
    defined twice in it dropped, a later dir winning), like --dir; FILE and DIR operands mix; with --root a
    DIR operand names a path under the root. It used to report the directory as an unreadable file."""
    root = os.path.join(tmp, "dirs")
    mkroot(root, FIXTURE)
    spec = os.path.join(root, "var/run/cdi")
    r = generate(FIXTURE, root, ["--output", os.path.join(spec, "nvidia.yaml")])
    check(r.returncode == 0, f"generate for dir operands: {r.stderr.strip()}")
    r = gpulet(["cdi", "validate", "--root", root, spec])
    check(r.returncode == 0 and r.stdout.endswith("1 file checked, 0 errors, 0 warnings\n") and "unreadable" not in r.stdout,
          f"validate DIR: {r.returncode} {r.stdout[-300:]}")
    # a dir as a runtime scans it: the .txt is not read, the same devices in two files are dropped
    other = os.path.join(tmp, "two")
    os.makedirs(other)
    shutil.copy(os.path.join(spec, "nvidia.yaml"), os.path.join(other, "a.yaml"))
    shutil.copy(os.path.join(spec, "nvidia.yaml"), os.path.join(other, "b.yaml"))
    with open(os.path.join(other, "notes.txt"), "w") as f:
        f.write("not a spec")
    r = gpulet(["cdi", "validate", "--json", "--no-host-paths", other])
    doc = json.loads(r.stdout)
    codes = {p["code"] for p in doc["problems"]}
    check(r.returncode == 1 and doc["files"] == 2 and codes == {"duplicate-device"}, f"validate DIR with a twin: {doc}")
    # FILE and DIR together; the later DIR wins over --dir, so the same device there is shadowed, not an error
    single = os.path.join(tmp, "single")
    os.makedirs(single)
    shutil.copy(os.path.join(spec, "nvidia.yaml"), os.path.join(single, "nvidia.yaml"))
    r = gpulet(["cdi", "validate", "--json", "--no-host-paths", "--dir", single, os.path.join(other, "a.yaml"),
                spec + "/"])
    doc = json.loads(r.stdout)
    shadowed = {p["file"] for p in doc["problems"] if p["code"] == "shadowed-device"}
    check(r.returncode == 0 and doc["files"] == 3 and shadowed == {os.path.join(single, "nvidia.yaml")},
          f"validate --dir D1 FILE D2/: {r.returncode} {doc}")
    # with --root, a DIR operand outside the root is refused with what to do (it would be read elsewhere)
    r = gpulet(["cdi", "validate", "--root", root, other])
    check(r.returncode == 2 and "outside --root" in r.stderr and "--dir" in r.stderr, f"DIR outside --root: {r.stderr}")
    r = gpulet(["cdi", "validate", "--help"])
    check("[FILE|DIR...]" in r.stdout, "validate --help names DIR operands")


def main():
    r = gpulet(["cdi", "--help"])
    check(r.returncode == 0 and "Example:" in r.stdout, "cdi --help")
    for verb in ("generate", "list", "validate"):
        r = gpulet(["cdi", verb, "--help"])
        check(r.returncode == 0 and "Example:" in r.stdout and f"gpulet cdi {verb}" in r.stdout, f"{verb} --help")
    for args in (["cdi"], ["cdi", "bogus"], ["cdi", "generate", "--format", "xml"],
                 ["cdi", "generate", "--device-name-strategy", "type-index"], ["cdi", "validate", "--runtime", "nope"],
                 ["cdi", "validate", "--runtime-user", "x"], ["cdi", "list", "extra"]):
        r = gpulet(args)
        check(r.returncode == 2, f"{' '.join(args)}: usage error exit 2, got {r.returncode}")

    with tempfile.TemporaryDirectory(prefix="gpulet-cdi-cli.") as tmp:
        root = os.path.join(tmp, "node")
        mkroot(root, FIXTURE)
        out = os.path.join(root, "var/run/cdi")

        r = generate(FIXTURE, root, [])
        check(r.returncode == 0 and r.stdout.startswith("---\n"), "default output: YAML on stdout")
        check(yaml.safe_load(r.stdout)["kind"] == "nvidia.com/gpu", "default kind nvidia.com/gpu")
        for how in (["--ldconfig-path", "/sbin/ldconfig.real"], []):  # nvidia-ctk's flag and env var
            env = dict(os.environ, NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH="/sbin/ldconfig.real") if not how else None
            r = generate(FIXTURE, root, how, env=env)
            hooks = yaml.safe_load(r.stdout)["containerEdits"]["hooks"]
            ld = [h["args"] for h in hooks if "update-ldcache" in h["args"]]
            at = ld[0].index("update-ldcache") + 1 if len(ld) == 1 else 0
            check(ld and ld[0][at:at + 2] == ["--ldconfig-path", "/sbin/ldconfig.real"], f"{how or 'env'}: {ld}")
        # a relative ldconfig would be the image's (hooks run in the rootfs): refused, flag or env; '@/' kept
        for how, env in ((["--ldconfig-path", "sbin/ldconfig"], None), (["--ldconfig-path", "@sbin/ldconfig"], None),
                         ([], dict(os.environ, NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH="sbin/ldconfig"))):
            r = generate(FIXTURE, root, how, env=env)
            check(r.returncode == 2 and "not an absolute path" in r.stderr and
                  ("--ldconfig-path" in r.stderr if how else "NVIDIA_CTK_CDI_GENERATE_LDCONFIG_PATH" in r.stderr),
                  f"relative ldconfig {how or 'env'}: {r.returncode} {r.stderr.strip()}")
        r = generate(FIXTURE, root, ["--ldconfig-path", "@/sbin/ldconfig"])
        check(r.returncode == 0 and "'@/sbin/ldconfig'" in r.stdout, f"@/sbin/ldconfig: {r.stderr.strip()}")
        # without a hook path (empty: the default) the hooks run the static gpulet-cdi-hook beside this gpulet
        r = generate(FIXTURE, root, ["--nvidia-cdi-hook-path", ""])
        hooks = yaml.safe_load(r.stdout)["containerEdits"]["hooks"] if r.returncode == 0 else []
        static = os.path.join(os.path.dirname(os.path.realpath(GPULET)), "gpulet-cdi-hook")
        check(hooks and all(h["path"] == static and h["args"][0] == "gpulet-cdi-hook" for h in hooks),
              f"default hook binary: {[(h['path'], h['args'][:2]) for h in hooks]} {r.stderr.strip()}")
        static_hook(static, root)

        r = generate(FIXTURE, root, ["--output", out + "/", "--format", "json", "--no-all-device"])
        path = os.path.join(out, "nvidia.com-gpu.json")
        check(r.returncode == 0 and os.path.exists(path), f"--output DIR/: {r.stderr.strip()}")
        check(stat.S_IMODE(os.stat(path).st_mode) == 0o644, "spec mode 0644")
        check("all" not in [d["name"] for d in json.load(open(path))["devices"]], "--no-all-device")

        r = generate(FIXTURE, root, ["--output", os.path.join(out, "other.yaml"), "--vendor", "example.com"])
        check(r.returncode == 0 and open(os.path.join(out, "other.yaml")).read().startswith("---\n"),
              "--output FILE.yaml is YAML")
        r = generate(FIXTURE, root, ["--output", os.path.join(out, "x.yml")])
        check(r.returncode == 1 and ".json or .yaml" in r.stderr, "--output FILE.yml refused")
        foreign = os.path.join(out, "foreign.json")
        with open(foreign, "w") as f:
            f.write('{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","devices":[]}')
        r = generate(FIXTURE, root, ["--output", foreign])
        check(r.returncode == 1 and "not written by gpulet" in r.stderr, "a foreign file is not replaced")
        os.unlink(foreign)

        # list: both files, the later kind sorted, text and JSON agree
        r = gpulet(["cdi", "list", "--dir", out])
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and "example.com/gpu=0\t" + os.path.join(out, "other.yaml") in lines,
              f"list text: {lines}")
        js = json.loads(gpulet(["cdi", "list", "--json", "--dir", out]).stdout)
        check([e["name"] for e in js] == [l.split("\t")[0] for l in lines], "list --json = list text")
        check(all(set(e) >= {"name", "kind", "device", "file", "shadows", "conflict"} for e in js),
              "list --json fields")
        r = gpulet(["cdi", "list", "--root", tmp])
        check(r.returncode == 0 and "no CDI devices" in r.stderr, "list with no spec dirs says so")

        # validate: clean dir exit 0; --root makes /etc/cdi and /var/run/cdi relative to it
        r = gpulet(["cdi", "validate", "--root", root])
        check(r.returncode == 0 and "2 files checked, 0 errors" in r.stdout, f"validate --root: {r.stdout}")
        bad = os.path.join(out, "bad.json")
        with open(bad, "w") as f:
            f.write('{"cdiVersion":"0.6.0","kind":"x.com/y","devices":[{"name":"b c","containerEdits":{}}]}')
        r = gpulet(["cdi", "validate", "--json", "--runtime", "podman-4.3", "--root", root])
        doc = json.loads(r.stdout)
        codes = sorted(p["code"] for p in doc["problems"] if p["file"] == bad)
        check(r.returncode == 1 and codes == ["class-too-short", "empty-edits", "invalid-device-name",
                                             "version-too-new"], f"validate --json codes {codes}")
        check(doc["files"] == 3 and doc["errors"] == 4, f"validate --json counts {doc['files']} {doc['errors']}")
        p = next(p for p in doc["problems"] if p["code"] == "invalid-device-name")
        check(p["path"] == "$.devices[0].name" and p["category"] == "spec-invalid" and p["fix"], "problem fields")
        r = gpulet(["cdi", "validate", "--runtime-cdi-version", "0.6.0", bad])
        check(r.returncode == 1 and "version-too-new" not in r.stdout, "--runtime-cdi-version 0.6.0 accepts 0.6.0")
        os.unlink(bad)
        os.chmod(path, 0o600)
        r = gpulet(["cdi", "validate", "--runtime-user", "1000:1000", "--root", root])
        check(r.returncode == 1 and "error[unreadable]" in r.stdout, f"--runtime-user: {r.stdout}")
        # a relative --dir is read from the working dir (not from /); a missing one is an error for list too
        rel = subprocess.run([GPULET, "cdi", "list", "--dir", "var/run/cdi"], cwd=root, capture_output=True, text=True)
        check(rel.returncode == 0 and "nvidia.com/gpu=0\t" in rel.stdout, f"list relative --dir: {rel.stdout}")
        rel = subprocess.run([GPULET, "cdi", "validate", "--no-host-paths", "--dir", "var/run/cdi"], cwd=root,
                             capture_output=True, text=True)
        check(rel.returncode == 0 and "2 files checked" in rel.stdout, f"validate relative --dir: {rel.stdout}")
        rel = subprocess.run([GPULET, "cdi", "list", "--dir", "no/such"], cwd=root, capture_output=True, text=True)
        check(rel.returncode == 1 and "relative --dir is read from the working dir" in rel.stderr,
              f"list missing relative --dir: {rel.stderr}")
        # a relative --root is read from the working dir, NVML search included (it used to look in /node/...)
        lib = os.path.join(root, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
        os.unlink(lib)
        shutil.copy(os.environ["FAKE_NVML_LIB"], lib)
        fx = os.path.join(os.environ["GPULET_SRC"], "tests/fixtures", FIXTURE + ".json")
        rel = subprocess.run([GPULET, "cdi", "generate", "--root", "node", "--nvidia-cdi-hook-path", "/usr/bin/h"],
                             cwd=tmp, capture_output=True, text=True, env=dict(os.environ, FAKE_NVML_FIXTURE=fx))
        check(rel.returncode == 0 and "kind: nvidia.com/gpu" in rel.stdout, f"relative --root: {rel.stderr}")
        no_silent_broken_spec(tmp)
        no_conflicts(tmp)
        dir_operands(tmp)
    return finish("cdi command line")


if __name__ == "__main__":
    sys.exit(main())
