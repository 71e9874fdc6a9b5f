#!/usr/bin/python3
"""The plugin's CDI upkeep writes the hooks of the same generator as `gpulet cdi generate`, from its
flags of the same names: --nvidia-cdi-hook-path (NVIDIA_CDI_HOOK_PATH; upstream default
/usr/bin/nvidia-ctk, whose hooks run as `nvidia-ctk hook ACTION`) and --cdi-disable-hooks
(CDI_DISABLE_HOOKS). Judged on the spec file in <root>/var/run/cdi, compared hook for hook with
`gpulet cdi generate` given the same options."""
import json
import os
import shutil
import stat
import subprocess

from plugin_lib import FAKE_NVML_LIB, GPULET, check, run

SPEC = "var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json"


def plugin_hooks(h, *args, env=None):
    h.start_plugin("--device-list-strategy", "cdi-cri", *args, env=env)
    with open(os.path.join(h.root, SPEC)) as f:
        spec = json.load(f)
    h.stop_plugin()
    return spec["containerEdits"].get("hooks", [])


def generate_hooks(h, *args):
    p = subprocess.run([GPULET, "cdi", "generate", "--nvml-library", FAKE_NVML_LIB, "--root", h.root, "--vendor",
                        "k8s.device-plugin.nvidia.com", "--device-name-strategy", "uuid", "--format", "json", *args],
                       capture_output=True, text=True, env=h.plugin_env(), timeout=30)
    check(p.returncode == 0, "cdi generate %s: %s" % (args, p.stderr))
    return json.loads(p.stdout)["containerEdits"].get("hooks", [])


def actions(hooks):
    return [x["args"][2] if x["args"][0] == "nvidia-ctk" or x["args"][0] == "gpulet" else x["args"][1] for x in hooks]


def test_plugin_hooks(h):
    h.start_standin()
    hooks = plugin_hooks(h)
    check(hooks and all(x["path"] == "/usr/bin/nvidia-ctk" and x["args"][:2] == ["nvidia-ctk", "hook"] and
                        x["hookName"] == "createContainer" for x in hooks), "default: nvidia-ctk hook: %r" % hooks)
    check(actions(hooks) == ["create-symlinks", "enable-cuda-compat", "update-ldcache",
                             "disable-device-node-modification", "update-application-profile"],
          "default actions %r" % actions(hooks))
    check(hooks == generate_hooks(h, "--nvidia-cdi-hook-path", "/usr/bin/nvidia-ctk"), "same hooks as cdi generate")

    hooks = plugin_hooks(h, "--nvidia-cdi-hook-path", "/opt/gpulet/nvidia-cdi-hook", "--cdi-disable-hooks",
                         "enable-cuda-compat,create-symlinks")
    check(actions(hooks) == ["update-ldcache", "disable-device-node-modification", "update-application-profile"] and
          all(x["args"][0] == "nvidia-cdi-hook" and x["path"] == "/opt/gpulet/nvidia-cdi-hook" for x in hooks),
          "flags: %r" % hooks)
    check(hooks == generate_hooks(h, "--nvidia-cdi-hook-path", "/opt/gpulet/nvidia-cdi-hook", "--cdi-disable-hooks",
                                  "enable-cuda-compat,create-symlinks"), "same hooks as cdi generate with the flags")

    hooks = plugin_hooks(h, env={"CDI_DISABLE_HOOKS": "all", "NVIDIA_CDI_HOOK_PATH": "/usr/local/bin/gpulet"})
    check(hooks == [], "CDI_DISABLE_HOOKS=all: no hooks: %r" % hooks)
    hooks = plugin_hooks(h, env={"NVIDIA_CDI_HOOK_PATH": "/usr/local/bin/gpulet"})
    check(hooks and all(x["args"][:2] == ["gpulet", "cdi-hook"] for x in hooks), "env path: %r" % hooks)

    # a partial spec is written but said: each item it leaves out is a warning in the plugin's log
    os.unlink(os.path.join(h.root, "dev", "nvidia3"))
    plugin_hooks(h)
    check(any("leaves this out" in line and "nvidia3" in line for line in h.log_text().splitlines()),
          "no warning for the missing /dev/nvidia3:\n%s" % h.log_text()[-2000:])

    # a /tmp/nvidia-mps anyone may write is not mounted into every container, and the log says so
    mps = os.path.join(h.root, "tmp", "nvidia-mps")
    os.makedirs(mps, exist_ok=True)
    os.chmod(mps, 0o777)
    plugin_hooks(h)
    os.rmdir(mps)
    with open(os.path.join(h.root, SPEC)) as f:
        mounts = [m["containerPath"] for m in json.load(f)["containerEdits"].get("mounts", [])]
    check("/tmp/nvidia-mps" not in mounts, "the plugin's spec mounts a world-writable /tmp/nvidia-mps")
    check(any("leaves this out" in line and "nvidia-mps" in line and "0777" in line
              for line in h.log_text().splitlines()),
          "no warning for the world-writable /tmp/nvidia-mps:\n%s" % h.log_text()[-2000:])

    # another spec of the same devices beside ours: runtimes drop both, so the log names the file and the fix
    other = os.path.join(h.root, "var/run/cdi/copy-of-ours.json")
    with open(os.path.join(h.root, SPEC)) as src, open(other, "w") as dst:
        dst.write(src.read())
    plugin_hooks(h)
    os.unlink(other)
    bad = [line for line in h.log_text().splitlines() if "Another CDI spec defines" in line]
    check(bad and "copy-of-ours.json" in bad[-1] and "where=same-dir" in bad[-1] and "fix=" in bad[-1],
          "no error for the conflicting spec:\n%s" % h.log_text()[-2000:])

    # a hook name the generator does not know is refused when the options are read, as `cdi generate` refuses it,
    # with a CDI strategy or without one (it was accepted, exit 0, when no spec was written)
    for strategy in (["--device-list-strategy", "cdi-cri"], ["--print-config"]):
        p = subprocess.run([GPULET, "plugin", *h.base_args(), *strategy, "--cdi-disable-hooks", "bogus"],
                           capture_output=True, text=True, env=h.plugin_env(), timeout=20)
        check(p.returncode == 1 and 'unknown hook "bogus"' in p.stderr, "bad --cdi-disable-hooks %s: %d %s" %
              (strategy, p.returncode, p.stderr))
    p = subprocess.run([GPULET, "plugin", *h.base_args(), "--print-config"], capture_output=True, text=True,
                       env=dict(h.plugin_env(), CDI_DISABLE_HOOKS=""), timeout=20)
    check(p.returncode == 0 and '"cdi-disable-hooks":[]' in p.stdout, "CDI_DISABLE_HOOKS='': none: %s" % p.stderr)


def plugin_spec(h, env=None):
    h.start_plugin("--device-list-strategy", "cdi-cri", env=env)
    with open(os.path.join(h.root, SPEC)) as f:
        spec = json.load(f)
    h.stop_plugin()
    return spec


def test_plugin_cdi_feature_flags(h):
    """CDI_FEATURE_FLAGS (the chart's cdi.featureFlags): upstream's flags work as upstream's generator does or
    are refused naming them, never stored and ignored (docs/reference/device-plugin.md §8.1)."""
    h.start_standin()

    def ipc(spec):
        return [m["containerPath"] for m in spec["containerEdits"].get("mounts", []) if "socket" in m["containerPath"]]

    check("/run/nvidia-persistenced/socket" in ipc(plugin_spec(h)), "the fake node's persistenced socket is mounted")
    for flags in ("disable-ipc-discoverer", "disable-nvsandboxutils,disable-ipc-discoverer"):
        spec = plugin_spec(h, env={"CDI_FEATURE_FLAGS": flags})
        check(ipc(spec) == [], "%s: IPC sockets left out: %r" % (flags, ipc(spec)))
    # flags whose effect gpulet's spec already has, upstream's misspelt alias and "" are taken (and printed)
    p = subprocess.run([GPULET, "plugin", *h.base_args(), "--print-config", "--cdi-feature-flags",
                        "no-additional-gids-for-device-nodes,disable-nvsandbox-utils,disable-multiple-csv-devices,"],
                       capture_output=True, text=True, env=h.plugin_env(), timeout=20)
    check(p.returncode == 0 and json.loads(p.stdout)["cdi-feature-flags"] == [
        "no-additional-gids-for-device-nodes", "disable-nvsandboxutils", "disable-multiple-csv-devices"],
        "accepted flags: %s %s" % (p.stdout, p.stderr))
    for bad, what in (("bogus", 'unknown feature flag "bogus"'),
                      ("enable-coherent-annotations", "CDI feature flag enable-coherent-annotations is not supported"),
                      ("enable-explicit-driver-libraries",
                       "CDI feature flag enable-explicit-driver-libraries is not supported")):
        for env in ({"CDI_FEATURE_FLAGS": bad}, {}):
            args = [] if env else ["--cdi-feature-flags", bad]
            p = subprocess.run([GPULET, "plugin", *h.base_args(), "--print-config", *args], capture_output=True,
                               text=True, env=h.plugin_env(env), timeout=20)
            check(p.returncode == 1 and what in p.stderr, "%s %s: %d %s" % (bad, env, p.returncode, p.stderr))


def nvidia_nodes(root):
    """{path under root: rdev} of the NVIDIA character devices in dev/ and dev/nvidia-caps/."""
    out = {}
    for d in ("dev", "dev/nvidia-caps"):
        full = os.path.join(root, d)
        for n in sorted(os.listdir(full)) if os.path.isdir(full) else []:
            st = os.lstat(os.path.join(full, n))
            if n.startswith("nvidia") and stat.S_ISCHR(st.st_mode):
                out[os.path.join(d, n)] = st.st_rdev
    return out


def test_plugin_dev_char_links(h):
    """/dev/char/<major>:<minor> links for every NVIDIA device node at start, as nvidia-ctk system
    create-dev-char-symlinks makes them (systemd names a container's devices by them at daemon-reload;
    docs/reference/cdi.md §7.3.1; NVSwitch nodes left out as upstream); an entry already there is kept;
    --disable-dev-char-symlink-creation
    (DISABLE_DEV_CHAR_SYMLINK_CREATION) makes none."""
    h.start_standin()
    char = os.path.join(h.root, "dev/char")
    nodes = nvidia_nodes(h.root)
    check(any("nvidia-caps" in n for n in nodes) and "dev/nvidiactl" in nodes, "fake node's devices: %r" % nodes)
    os.makedirs(char, exist_ok=True)
    ctl = "%d:%d" % (os.major(nodes["dev/nvidiactl"]), os.minor(nodes["dev/nvidiactl"]))
    os.symlink("../somewhere-else", os.path.join(char, ctl))
    h.start_plugin()
    h.stop_plugin()
    for n, rdev in nodes.items():
        link = os.path.join(char, "%d:%d" % (os.major(rdev), os.minor(rdev)))
        if n == "dev/nvidiactl":
            check(os.readlink(link) == "../somewhere-else", "an existing /dev/char entry was replaced")
            continue
        if os.path.basename(n).startswith(("nvidia-fs", "nvidia-nvswitch", "nvidia-nvlink")):
            check(not os.path.lexists(link), "%s: linked, but upstream leaves it out" % n)  # existing.go
            continue
        want = "../" + n[len("dev/"):]
        check(os.path.islink(link) and os.readlink(link) == want and os.stat(link).st_rdev == rdev,
              "%s: /dev/char link %s -> %s, want %s" % (n, link, os.path.islink(link) and os.readlink(link), want))
    for args, env in ((["--disable-dev-char-symlink-creation"], None), ([], {"DISABLE_DEV_CHAR_SYMLINK_CREATION": "true"})):
        shutil.rmtree(char, ignore_errors=True)
        h.start_plugin(*args, env=env)
        h.stop_plugin()
        check(not os.path.exists(char), "%s %s: /dev/char made: %r" % (args, env, os.path.exists(char) and
                                                                         os.listdir(char)))


if __name__ == "__main__":
    run(test_plugin_hooks)
    run(test_plugin_cdi_feature_flags)
    run(test_plugin_dev_char_links)
