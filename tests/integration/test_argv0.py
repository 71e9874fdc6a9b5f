#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet invoked under the upstream programs' names (issue 15.7): a link named nvidia-device-plugin,
gpu-feature-discovery, mps-control-daemon or nvidia-cdi-hook runs the verb that replaces it, with the
environment the upstream Helm chart gives that container (deployments/helm/nvidia-device-plugin/templates,
v0.20.0: no arguments, everything in env) and its command line as config-manager finds it
(PROCESS_TO_SIGNAL is compared with /proc/PID/cmdline's first word). The test's own plumbing (fake
root, fake NVML, socket dir) is passed as single-dash flags, as upstream's CLI takes them."""
import os
import re
import signal
import subprocess
import time

from plugin_lib import FAKE_NVML_LIB, GPULET, SRC, check, fail, pb, run

# The env of the upstream chart's containers (values: migStrategy=mixed, failOnInitError=true,
# compatWithCPUManager=true, deviceListStrategy=envvar, deviceIDStrategy=index, mps.root default).
PLUGIN_ENV = {"MPS_ROOT": "/run/nvidia/mps", "MIG_STRATEGY": "mixed", "FAIL_ON_INIT_ERROR": "true",
              "PASS_DEVICE_SPECS": "true", "DEVICE_LIST_STRATEGY": "envvar", "DEVICE_ID_STRATEGY": "index",
              "NVIDIA_DRIVER_ROOT": "/", "NVIDIA_MIG_MONITOR_DEVICES": "all", "NVIDIA_VISIBLE_DEVICES": "all",
              "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
GFD_ENV = {"NODE_NAME": "node-1", "NAMESPACE": "gpu-operator", "POD_NAME": "gfd-x1", "MIG_STRATEGY": "mixed",
           "FAIL_ON_INIT_ERROR": "true", "GFD_NO_TIMESTAMP": "true", "GFD_SLEEP_INTERVAL": "1s",
           "NVIDIA_MIG_MONITOR_DEVICES": "all"}
FEATURE_FILE = "etc/kubernetes/node-feature-discovery/features.d/gfd"


def links(tmp):
    """A bin dir of links to build/gpulet, as the image has them; PATH finds them by name."""
    d = os.path.join(tmp, "bin")
    os.makedirs(d, exist_ok=True)
    for name in ("nvidia-device-plugin", "gpu-feature-discovery", "mps-control-daemon", "nvidia-cdi-hook",
                 "gpulet-copy"):
        if not os.path.lexists(os.path.join(d, name)):
            os.symlink(GPULET, os.path.join(d, name))
    return d


def cmdline0(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().split(b"\0")[0].decode()


def test_nvidia_device_plugin(h):
    bindir = links(h.tmp)
    fx = h.fixture_data()
    h.start_standin()
    env = h.plugin_env(dict(PLUGIN_ENV, PATH=bindir + ":" + os.environ.get("PATH", "/usr/bin:/bin")))
    h.log = open(h.log_path, "a")
    h.plugin = subprocess.Popen(["nvidia-device-plugin", "-nvml-library=" + FAKE_NVML_LIB, "-root", h.root,
                                 "-device-plugin-path", h.dp, "-kubelet-socket", os.path.join(h.dp, "kubelet.sock")],
                                stdout=h.log, stderr=subprocess.STDOUT, env=env)
    # MIG_STRATEGY=mixed from env: the whole GPUs and one resource per MIG profile
    h.wait_list("nvidia.com/gpu")
    profiles = sorted({ci["profile_name"].replace("+", ".") for g in fx["gpus"] if g.get("mig_mode")
                       for gi in g.get("mig", []) for ci in gi["cis"]})
    check(profiles, "the dgx-a100 fixture has MIG instances")
    for p in profiles:
        h.wait_list("nvidia.com/mig-" + p)
    # DEVICE_ID_STRATEGY=index, PASS_DEVICE_SPECS=true
    full = [g for g in fx["gpus"] if not g.get("mig_mode")]
    r = h.allocate("nvidia.com/gpu", [full[0]["uuid"]]).container_responses[0]
    index = str(fx["gpus"].index(full[0]))  # NVML's index: the fixture's order
    check(r.envs.get("NVIDIA_VISIBLE_DEVICES") == index,
          "NVIDIA_VISIBLE_DEVICES %r, want the index %r" % (r.envs.get("NVIDIA_VISIBLE_DEVICES"), index))
    check(any(d.host_path == "/dev/nvidia%d" % full[0]["minor"] for d in r.devices),
          "PASS_DEVICE_SPECS: device specs %r" % [d.host_path for d in r.devices])
    # config-manager finds the process by its command line's first word and sends SIGHUP
    check(cmdline0(h.plugin.pid) == "nvidia-device-plugin", "cmdline[0] %r" % cmdline0(h.plugin.pid))
    h.plugin.send_signal(signal.SIGHUP)
    h.wait_log(r"SIGHUP: reloading the config")
    h.check_alive()
    check(h.stop_plugin() == 0, "nvidia-device-plugin exits 0 on SIGTERM")


def labels_text(path):
    with open(path) as f:
        return f.read()


def test_gpu_feature_discovery(h):
    bindir = links(h.tmp)
    env = dict(os.environ, FAKE_NVML_FIXTURE=h.fixture, **GFD_ENV)
    env["PATH"] = bindir + ":" + env.get("PATH", "/usr/bin:/bin")
    for k in ("GFD_ONESHOT", "GFD_OUTPUT_FILE", "GFD_MIG_STRATEGY", "CONFIG_FILE", "GFD_CONFIG_FILE"):
        env.pop(k, None)
    out = os.path.join(h.root, FEATURE_FILE)
    os.makedirs(os.path.dirname(out), exist_ok=True)  # the chart's hostPath volume "output-dir"
    p = subprocess.Popen(["gpu-feature-discovery", "-root", h.root, "-nvml-library", FAKE_NVML_LIB],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    try:
        deadline = time.time() + 15
        while not os.path.exists(out) and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        check(p.poll() is None, "gpu-feature-discovery keeps running (no --oneshot in the chart): rc %s" % p.poll())
        check(os.path.exists(out), "the feature file %s is written" % FEATURE_FILE)
        check(cmdline0(p.pid) == "gpu-feature-discovery", "cmdline[0] %r" % cmdline0(p.pid))
        got = labels_text(out)
        # the same labels as the verb itself with the same settings given as flags
        want = subprocess.run([GPULET, "labels", "--oneshot", "--output-file", "-", "--mig-strategy", "mixed",
                               "--no-timestamp", "--root", h.root, "--nvml-library", FAKE_NVML_LIB],
                              env=dict(os.environ, FAKE_NVML_FIXTURE=h.fixture), capture_output=True, text=True)
        check(want.returncode == 0, "gpulet labels --oneshot: %s" % want.stderr)
        check(got == want.stdout, "gpu-feature-discovery wrote:\n%s\ngpulet labels printed:\n%s" % (got, want.stdout))
        check("nvidia.com/mig.strategy=mixed" in got, "MIG_STRATEGY=mixed from env: %s" % got)
        check("nvidia.com/gfd.timestamp" not in got, "GFD_NO_TIMESTAMP=true from env")
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            fail("gpu-feature-discovery did not exit on SIGTERM")
    check(rc == 0, "gpu-feature-discovery exits 0 on SIGTERM: %s\n%s" % (rc, p.stdout.read()))


def verbs_in_build():
    return set(re.findall(r'\{"([a-z-]+)", cmd_[a-z_]+,', open(os.path.join(SRC, "src", "main.c")).read()))


def test_other_names(h):
    bindir = links(h.tmp)
    have = verbs_in_build()
    for name, verb in (("mps-control-daemon", "mps-control-daemon"), ("nvidia-cdi-hook", "cdi-hook"),
                       ("nvidia-device-plugin", "plugin"), ("gpu-feature-discovery", "labels")):
        link = os.path.join(bindir, name)
        r = subprocess.run([link, "--help"], capture_output=True, text=True, timeout=30)
        v = subprocess.run([link, "--version"], capture_output=True, text=True, timeout=30)
        if verb in have:
            check(r.returncode == 0 and ("gpulet " + verb) in r.stdout, "%s --help is gpulet %s's: %s" %
                  (name, verb, r.stdout[:200] + r.stderr[:200]))
            check(v.returncode == 0 and v.stdout.startswith("gpulet version ") and ("replaces " + name) in v.stdout,
                  "%s --version: %s" % (name, v.stdout))
        else:  # the verb is not in this build yet: a clear message, not gpulet's usage
            for x in (r, v):
                check(x.returncode == 1 and "invoked as %s, but this build has no '%s' command" % (name, verb)
                      in x.stderr, "%s without the verb: rc %s %s" % (name, x.returncode, x.stderr))
    # any other name is plain gpulet
    r = subprocess.run([os.path.join(bindir, "gpulet-copy"), "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.startswith("Usage: gpulet COMMAND"), "another name: gpulet's usage")


def test_operator_names(h):
    """The names the GPU Operator's and NVIDIA's charts' containers run on gpulet's image
    (docs/reference/operator.md): dcgm-exporter is the exporter; sh and bash answer only the Operator's
    device-plugin form; config-manager names the ClusterPolicy setting that starts it; the image's
    entrypoint picks the exporter from DCGM_* env. What needs a container (the driver-ready file, the
    script at /bin/entrypoint.sh) is tested in the image (test_image.py) and on the node (k8s_operator)."""
    d = links(h.tmp)
    for name in ("dcgm-exporter", "sh", "bash", "config-manager"):
        if not os.path.lexists(os.path.join(d, name)):
            os.symlink(GPULET, os.path.join(d, name))
    env = {"PATH": "/usr/bin:/bin"}

    def go(argv, extra=None, rc=None, words=(), out="stderr"):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=dict(env, **(extra or {})))
        text = getattr(r, out)
        check((rc is None or r.returncode == rc) and all(w in text for w in words),
              "%s %s: rc %d, %s" % (argv, extra or "", r.returncode, (r.stdout + r.stderr)[-800:]))
        return r

    go([os.path.join(d, "dcgm-exporter"), "--help"], rc=0, words=["gpulet exporter"], out="stdout")
    sh = os.path.join(d, "sh")
    for argv in ([sh], [sh, "-c", "id"], [os.path.join(d, "bash"), "-c", "echo x"], [sh, "-c", "/bin/entrypoint.sh", "x"],
                 [sh, "/bin/entrypoint.sh"]):
        go(argv, rc=2, words=["gpulet's image has no shell", "/bin/entrypoint.sh"])
    go([sh, "-c", "/bin/entrypoint.sh"], {"HOST_ROOT": "/rootfs"}, rc=1, words=["hostPaths.rootFS"])
    go([os.path.join(d, "config-manager")], rc=1, words=["devicePlugin.config"])
    # the image's entrypoint: a command, the exporter's env with flags only, neither
    go([GPULET, "entrypoint", "devices", "--help"], rc=0, words=["Usage: gpulet devices"], out="stdout")
    go([GPULET, "entrypoint", "-f", "/nonexistent/c.csv"], {"DCGM_EXPORTER_LISTEN": "127.0.0.1:0"}, rc=1,
       words=["DCGM_EXPORTER_LISTEN is set: running dcgm-exporter", "collectors file"])
    go([GPULET, "entrypoint", "-f", "x.csv"], rc=2, words=["'-f' without a command"])
    go([GPULET, "entrypoint"], rc=0, words=["Usage: gpulet COMMAND"], out="stdout")


if __name__ == "__main__":
    run(test_operator_names)
    run(test_other_names)
    run(test_nvidia_device_plugin)
    run(test_gpu_feature_discovery)
    print("ok: gpulet answers to the upstream programs' names")
