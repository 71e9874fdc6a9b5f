#!/usr/bin/python3
"""`gpulet cdi generate` with nvidia-ctk 1.20's command line (cmd/nvidia-ctk/cdi/generate/generate.go,
v1.20.2; docs/reference/cdi.md §7.1.1): its env vars, aliases and spellings, --device-id, the type-index
names, --mode, --feature-flag, --disable-hook/--enable-hook, the options refused with their reason; and
what nvidia-ctk 1.20 puts in a spec that gpulet now does too: the "void" mount, ucodes firmware, the
apply-cuda-memory-limits (createRuntime, per full GPU), update-application-profile and, when enabled,
chmod hooks.
"""
import json
import os
import subprocess
import sys
import tempfile

from test_cdi_testlib import FAKE, GPULET, check, finish, fixture_path, generate, load_fixture, mkroot

VOID = {"hostPath": "/dev/null", "containerPath": "/var/run/nvidia-container-devices/void",
        "options": ["ro", "nosuid", "nodev", "bind"]}


def spec_of(r, what):
    """The JSON spec a run printed, or None (a failure named what)."""
    check(r.returncode == 0, f"{what}: rc {r.returncode}: {r.stderr.strip()}")
    try:
        return json.loads(r.stdout) if r.returncode == 0 else None
    except ValueError:
        check(False, f"{what}: not JSON: {r.stdout[:200]}")
        return None


def run(fixture, root, args, env=None):
    """generate, its hooks by nvidia-cdi-hook's name (args[1:] is the action and its options)."""
    return generate(fixture, root, ["--format", "json", "--nvidia-cdi-hook-path", "/usr/bin/nvidia-cdi-hook"] + args,
                    env=env)


def names(spec):
    return [d["name"] for d in spec["devices"]] if spec else []


def hooks_of(edits):
    return [(h["hookName"], h["args"][1:]) for h in edits.get("hooks", [])]


def device(spec, name):
    return next((d for d in spec["devices"] if d["name"] == name), None)


def test_device_ids(root):
    fx = load_fixture("mixed")
    t4, a100 = fx["gpus"][0]["uuid"], fx["gpus"][1]["uuid"]
    mig0 = fx["gpus"][1]["mig"][0]["cis"][0]["uuid"]
    s = spec_of(run("mixed", root, ["--device-id", "0"]), "--device-id 0")
    check(names(s) == ["0", t4, "all"], f"--device-id 0: {names(s)}")
    s = spec_of(run("mixed", root, ["--device-ids", "1:2"]), "--device-ids 1:2")
    check(len(names(s)) == 3 and names(s)[0] == "1:2" and names(s)[1].startswith("MIG-") and names(s)[2] == "all",
          f"--device-ids 1:2: {names(s)}")
    # a MIG-enabled GPU asked for by id is generated whole (lib-nvml.go), with its memory hook
    s = spec_of(run("mixed", root, ["--device-id", a100]), "--device-id <A100 uuid>")
    check(names(s) == ["1", a100, "all"], f"--device-id {a100}: {names(s)}")
    check(s and any(h[1][0] == "apply-cuda-memory-limits" for h in hooks_of(device(s, "1")["containerEdits"])),
          "the whole MIG-enabled GPU gets its memory hook")
    # urfave/cli's string slices split on commas, from the flag and from the env var
    for args, env in (([], {"NVIDIA_CTK_CDI_GENERATE_DEVICE_IDS": "0,1:0"}), (["--device-id", "0,1:0"], {})):
        s = spec_of(run("mixed", root, args, env=dict(os.environ, **env)), f"ids {args} {env}")
        check(names(s)[:2] == ["0", t4] and "1:0" in names(s) and "1:1" not in names(s), f"ids {args}: {names(s)}")
    if mig0:
        s = spec_of(run("mixed", root, ["--device-id", mig0]), "--device-id <MIG uuid>")
        check(mig0 in names(s) and "0" not in names(s), f"--device-id MIG uuid: {names(s)}")
    # the first "none" or "all" decides for the list, as upstream's loop
    for ids, want in ((["0", "none"], ["none"]), (["all", "0"], None), (["none", "all"], ["none"])):
        args = sum((["--device-id", i] for i in ids), [])
        s = spec_of(run("mixed", root, args), f"--device-id {ids}")
        if want:
            check(names(s) == want and device(s, "none")["containerEdits"] == {"env": ["NVCT_EMPTY_DEVICE="]},
                  f"{ids}: {s and s['devices']}")
        else:
            check("all" in names(s) and "0" in names(s) and "1:6" in names(s), f"{ids}: {names(s)}")
    r = run("mixed", root, ["--device-id", "7"])
    check(r.returncode == 1 and "--device-id 7 names no GPU or MIG device" in r.stderr and not r.stdout,
          f"unknown id: {r.returncode} {r.stderr.strip()}")


def test_names(root):
    s = spec_of(run("mixed", root, ["--device-name-strategy", "type-index"]), "type-index")
    check(names(s)[:2] == ["gpu0", "mig1:0"] and names(s)[-1] == "all" and "0" not in names(s),
          f"type-index names: {names(s)}")
    env = dict(os.environ, NVIDIA_CTK_CDI_GENERATE_DEVICE_NAME_STRATEGIES="type-index,uuid")
    s = spec_of(run("mixed", root, [], env=env), "env DEVICE_NAME_STRATEGIES")
    check("gpu0" in names(s) and any(n.startswith("GPU-") for n in names(s)) and "0" not in names(s),
          f"env strategies: {names(s)}")
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(json.dumps(s).encode())
        f.flush()
        v = subprocess.run([GPULET, "cdi", "validate", "--no-host-paths", f.name], capture_output=True, text=True)
        check(v.returncode == 0, f"type-index spec validates: {v.stdout}")


def test_env_and_aliases(root, tmp):
    out = os.path.join(tmp, "env-spec.json")
    env = dict(os.environ, NVIDIA_CTK_CDI_GENERATE_VENDOR="example.com", NVIDIA_CTK_CDI_GENERATE_CLASS="dev",
               NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=out, NVIDIA_CTK_CDI_GENERATE_NO_ALL_DEVICE="true",
               NVIDIA_CTK_CDI_HOOK_PATH="/usr/bin/nvidia-cdi-hook")
    r = subprocess.run([GPULET, "cdi", "generate", "--root", root, "--nvml-library", FAKE], capture_output=True, text=True,
                       env=dict(env, FAKE_NVML_FIXTURE=fixture_path("single-t4")))
    s = json.load(open(out)) if r.returncode == 0 and os.path.exists(out) else None
    check(s and s["kind"] == "example.com/dev" and "all" not in names(s)
          and all(h["path"] == "/usr/bin/nvidia-cdi-hook" for h in s["containerEdits"]["hooks"]),
          f"NVIDIA_CTK_CDI_* env: {r.stderr.strip()} {s and s['kind']}")
    r = generate("single-t4", root, ["--format", "json", "--cdi-vendor", "example.org", "--cdi-class", "acc",
                                     "--output", ""])
    s = spec_of(r, "--cdi-vendor/--cdi-class, --output ''")
    check(s and s["kind"] == "example.org/acc", "aliases --cdi-vendor and --cdi-class")
    env = dict(os.environ, NVIDIA_CTK_CDI_GENERATE_OUTPUT_FORMAT="YAML")
    r = generate("single-t4", root, [], env=env)
    check(r.returncode == 0 and r.stdout.startswith("---\n"), f"env OUTPUT_FORMAT=YAML: {r.stderr.strip()}")
    for args in (["--mode", "NVML"], ["--discovery-mode", "auto"]):
        check(run("single-t4", root, args).returncode == 0, f"{args} accepted")


def test_refused(root):
    for args, env, what in ((["--library-search-path", "/usr/lib64"], {}, "--library-search-path is not supported"),
                            (["--config-search-path", "/etc"], {}, "--config-search-path is not supported"),
                            ([], {"NVIDIA_CTK_CDI_GENERATE_LIBRARY_SEARCH_PATHS": "/x"},
                             "env NVIDIA_CTK_CDI_GENERATE_LIBRARY_SEARCH_PATHS is not supported"),
                            (["--csv.file", "/etc/x.csv"], {}, "only CSV (Tegra) mode"),
                            (["--mode", "csv"], {}, "--mode csv is not supported: Tegra"),
                            (["--mode", "management"], {}, "management is not supported"),
                            ([], {"NVIDIA_CTK_CDI_GENERATE_MODE": "wsl"}, "wsl is not supported"),
                            (["--mode", "bogus"], {}, "--mode"),
                            (["--enable-hook", "all"], {}, "--enable-hook")):
        r = run("single-t4", root, args, env=dict(os.environ, **env))
        check(r.returncode == 2 and what in r.stderr and not r.stdout, f"{args} {env}: {r.returncode} {r.stderr!r}")
    r = run("single-t4", root, ["--feature-flags", "enable-coherent-annotations"])
    check(r.returncode == 1 and "enable-coherent-annotations is not supported" in r.stderr, f"feature: {r.stderr}")


def test_hooks(root, drm_root):
    s = spec_of(run("single-t4", root, []), "default hooks")
    if not s:
        return
    spec_hooks = hooks_of(s["containerEdits"])
    check(spec_hooks[-1] == ("createContainer", ["update-application-profile"]),
          f"update-application-profile last at spec level: {spec_hooks}")
    uuid = load_fixture("single-t4")["gpus"][0]["uuid"]
    for name in ("0", uuid, "all"):
        check(hooks_of(device(s, name)["containerEdits"]) ==
              [("createRuntime", ["apply-cuda-memory-limits", "--driver-root", "/", "--gpu-id", uuid])],
              f"{name}: {device(s, name)['containerEdits'].get('hooks')}")
    check(s["containerEdits"]["mounts"][-1] == VOID, f"void mount: {s['containerEdits']['mounts'][-1]}")
    # spellings and env of the hook switches
    for args, env, gone in ((["--disable-hook", "update-application-profile"], {}, "update-application-profile"),
                            (["--disable-hooks", "apply-cuda-memory-limits"], {}, "apply-cuda-memory-limits"),
                            ([], {"NVIDIA_CTK_CDI_GENERATE_DISABLED_HOOKS": "update-ldcache"}, "update-ldcache")):
        t = spec_of(run("single-t4", root, args, env=dict(os.environ, **env)), f"{args} {env}")
        every = [h for d in (t or {}).get("devices", []) for h in hooks_of(d["containerEdits"])]
        every += hooks_of((t or {}).get("containerEdits", {}))
        check(t and every and not any(h[1][0] == gone for h in every), f"{args} {env}: {every}")
    t = spec_of(run("single-t4", root, ["--disable-hook", "all"]), "--disable-hook all")
    check(t and "hooks" not in t["containerEdits"] and all("hooks" not in d["containerEdits"] for d in t["devices"]),
          "--disable-hook all: no hook anywhere")
    # chmod: off by default, on with --enable-hook (or its env), for a full GPU's /dev/dri (not the MIG devices')
    t = spec_of(run("pcie-4gpu", drm_root, []), "drm root")
    check(t and not any(h[1][0] == "chmod" for d in t["devices"] for h in hooks_of(d["containerEdits"])),
          "chmod is off by default")
    for args, env in ((["--enable-hook", "chmod"], {}), ([], {"NVIDIA_CTK_CDI_GENERATE_ENABLED_HOOKS": "chmod"})):
        t = spec_of(run("pcie-4gpu", drm_root, args, env=dict(os.environ, **env)), f"chmod {args} {env}")
        h0 = hooks_of(device(t, "0")["containerEdits"]) if t else []
        check([h[1][0] for h in h0] == ["create-symlinks", "chmod", "apply-cuda-memory-limits"]
              and h0[1] == ("createContainer", ["chmod", "--mode", "755", "--path", "/dev/dri"]),
              f"chmod on GPU 0 {args} {env}: {h0}")
        all_chmod = [h for h in hooks_of(device(t, "all")["containerEdits"]) if h[1][0] == "chmod"] if t else []
        mem = [h for h in hooks_of(device(t, "all")["containerEdits"]) if h[1][0] == "apply-cuda-memory-limits"]
        check(len(all_chmod) == 1 and len(mem) == 4, f"all: one chmod, four memory hooks: {all_chmod} {mem}")


def test_ucodes_and_features(root):
    ver = load_fixture("single-t4")["driver_version"]
    fw = os.path.join(root, "lib/firmware/nvidia", ver, "ucodes_gb20x.bin")
    with open(fw, "w") as f:
        f.write("fake ucode\n")
    s = spec_of(run("single-t4", root, []), "ucodes")
    paths = [m["containerPath"] for m in (s or {}).get("containerEdits", {}).get("mounts", [])]
    check("/lib/firmware/nvidia/%s/ucodes_gb20x.bin" % ver in paths, f"ucodes*.bin mounted beside gsp*.bin: {paths}")
    os.unlink(fw)
    ipc = [p for p in paths if p.startswith("/run/")]
    env = dict(os.environ, NVIDIA_CTK_CDI_GENERATE_FEATURE_FLAGS="disable-ipc-discoverer")
    for args, e in ((["--feature-flag", "disable-ipc-discoverer"], None), ([], env)):
        t = spec_of(run("single-t4", root, args, env=e), f"feature flag {args}")
        left = [m["containerPath"] for m in (t or {}).get("containerEdits", {}).get("mounts", [])
                if m["containerPath"] in ipc]
        check(ipc and t and not left, f"disable-ipc-discoverer {args}: IPC mounts {ipc} left {left}")


def main():
    with tempfile.TemporaryDirectory(prefix="gpulet-cdi-ctk.") as tmp:
        roots = {}
        for fx, opts in (("mixed", []), ("single-t4", []), ("pcie-4gpu", ["--drm"])):
            roots[fx] = os.path.join(tmp, fx)
            mkroot(roots[fx], fx, options=opts)
        test_device_ids(roots["mixed"])
        test_names(roots["mixed"])
        test_env_and_aliases(roots["single-t4"], tmp)
        test_refused(roots["single-t4"])
        test_hooks(roots["single-t4"], roots["pcie-4gpu"])
        test_ucodes_and_features(roots["single-t4"])
    return finish("cdi generate takes nvidia-ctk 1.20's options")


if __name__ == "__main__":
    sys.exit(main())
