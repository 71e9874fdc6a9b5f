#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Flags, env vars and the `version: v1` config file (docs/reference/device-plugin.md §1-2), read
through `gpulet plugin --print-config`: upstream defaults, every env var and flag alias,
precedence flag > env > file > default, YAML and JSON files, bad files failing with
file:line:col and the key, unknown keys warned, bounds; --fail-on-init-error."""
import json
import os
import signal
import subprocess
import tempfile

from plugin_lib import GPULET, Harness, check, run

CLEAN = {k: v for k, v in os.environ.items() if k not in (
    "MIG_STRATEGY", "FAIL_ON_INIT_ERROR", "NVIDIA_DRIVER_ROOT", "NVIDIA_DEV_ROOT", "PASS_DEVICE_SPECS",
    "DEVICE_LIST_STRATEGY", "DEVICE_ID_STRATEGY", "CONFIG_FILE", "KUBELET_SOCKET", "LOG_LEVEL")}

# docs/reference/device-plugin.md §1: flag, env var(s), default as printed by --print-config
DEFAULTS = {
    "mig-strategy": "none", "fail-on-init-error": True, "driver-root": "/", "dev-root": "",
    "pass-device-specs": False, "device-list-strategy": ["envvar"], "device-id-strategy": "uuid",
    "gdrcopy-enabled": False, "gds-enabled": False, "mofed-enabled": False, "cdi-annotation-prefix": "cdi.k8s.io/",
    "nvidia-cdi-hook-path": "/usr/bin/nvidia-ctk", "driver-root-ctr-path": "/driver-root", "mps-root": "",
    "shared-devices-allocation-policy": "distributed", "device-discovery-strategy": "auto", "imex-channel-ids": "",
    "imex-required": False, "kubelet-socket": "/var/lib/kubelet/device-plugins/kubelet.sock", "config-file": "",
    "device-plugin-path": "/var/lib/kubelet/device-plugins",
}
ENVS = [  # (env, key, text, parsed)
    ("MIG_STRATEGY", "mig-strategy", "mixed", "mixed"), ("FAIL_ON_INIT_ERROR", "fail-on-init-error", "false", False),
    ("NVIDIA_DRIVER_ROOT", "driver-root", "/run/nvidia/driver", "/run/nvidia/driver"),
    ("NVIDIA_DEV_ROOT", "dev-root", "/host", "/host"), ("PASS_DEVICE_SPECS", "pass-device-specs", "true", True),
    ("DEVICE_LIST_STRATEGY", "device-list-strategy", "cdi-cri,envvar", ["envvar", "cdi-cri"]),
    ("DEVICE_ID_STRATEGY", "device-id-strategy", "index", "index"), ("GDRCOPY_ENABLED", "gdrcopy-enabled", "1", True),
    ("GDS_ENABLED", "gds-enabled", "True", True), ("MOFED_ENABLED", "mofed-enabled", "t", True),
    ("CDI_ANNOTATION_PREFIX", "cdi-annotation-prefix", "x.io/", "x.io/"),
    ("NVIDIA_CDI_HOOK_PATH", "nvidia-cdi-hook-path", "/opt/hook", "/opt/hook"),
    ("NVIDIA_CTK_PATH", "nvidia-cdi-hook-path", "/opt/ctk", "/opt/ctk"),
    ("DRIVER_ROOT_CTR_PATH", "driver-root-ctr-path", "/d", "/d"), ("CONTAINER_DRIVER_ROOT", "driver-root-ctr-path", "/c", "/c"),
    ("MPS_ROOT", "mps-root", "/run/nvidia/mps", "/run/nvidia/mps"),
    ("SHARED_DEVICES_ALLOCATION_POLICY", "shared-devices-allocation-policy", "packed", "packed"),
    ("DEVICE_DISCOVERY_STRATEGY", "device-discovery-strategy", "nvml", "nvml"),
    ("IMEX_CHANNEL_IDS", "imex-channel-ids", "0", "0"), ("IMEX_REQUIRED", "imex-required", "true", True),
    ("KUBELET_SOCKET", "kubelet-socket", "/k/kubelet.sock", "/k/kubelet.sock"),
    ("DP_DEVICE_PLUGIN_PATH", "device-plugin-path", "/k", "/k"),
    ("GPULET_NVML_LIBRARY", "nvml-library", "/x/libnvidia-ml.so.1", "/x/libnvidia-ml.so.1"),
]
ALIASES = [("--nvidia-driver-root=/a", "driver-root", "/a"), ("--nvidia-dev-root=/b", "dev-root", "/b"),
           ("--nvidia-ctk-path=/c", "nvidia-cdi-hook-path", "/c"), ("--container-driver-root=/d", "driver-root-ctr-path", "/d")]


def gp(*args, env=None, rc=0):
    e = dict(CLEAN)
    e.update(env or {})
    p = subprocess.run([GPULET, "plugin", *args], capture_output=True, text=True, env=e, timeout=20)
    check(p.returncode == rc, "gpulet plugin %s: rc %d (want %d)\n%s%s" % (args, p.returncode, rc, p.stdout, p.stderr))
    return (json.loads(p.stdout) if rc == 0 and "--print-config" in args else None), p.stderr


def cfgfile(tmp, text, name="config.yaml"):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_config_sources(h):
    tmp = h.tmp
    c, _ = gp("--print-config")
    for k, v in DEFAULTS.items():
        check(c[k] == v, "default of %s: %r, upstream %r" % (k, c[k], v))
    for env, key, text, want in ENVS:
        c, _ = gp("--print-config", env={env: text})
        check(c[key] == want, "env %s=%s gave %s=%r" % (env, text, key, c[key]))
    for flag, key, want in ALIASES:
        c, _ = gp("--print-config", flag)
        check(c[key] == want, "%s gave %r" % (flag, c[key]))
    c, _ = gp("--print-config", "--pass-device-specs", "--fail-on-init-error=false")
    check(c["pass-device-specs"] is True and c["fail-on-init-error"] is False, "bool flags %r" % c)

    # precedence flag > env > file > default
    f = cfgfile(tmp, "version: v1\nflags:\n  migStrategy: single\n  plugin:\n    deviceListStrategy: [envvar, cdi-cri]\n")
    c, _ = gp("--print-config", "--config-file", f)
    check(c["mig-strategy"] == "single" and c["device-list-strategy"] == ["envvar", "cdi-cri"], "file %r" % c)
    c, _ = gp("--print-config", env={"CONFIG_FILE": f, "MIG_STRATEGY": "mixed"})
    check(c["mig-strategy"] == "mixed", "env over file: %r" % c["mig-strategy"])
    c, _ = gp("--print-config", "--mig-strategy=none", env={"CONFIG_FILE": f, "MIG_STRATEGY": "mixed"})
    check(c["mig-strategy"] == "none", "flag over env: %r" % c["mig-strategy"])
    check(c["device-list-strategy"] == ["envvar", "cdi-cri"], "file value kept where nothing overrides it")

    # JSON file, sharing semantics
    f = cfgfile(tmp, json.dumps({"version": "v1", "flags": {"plugin": {"passDeviceSpecs": True}},
                                 "sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 3}]}}}), "c.json")
    c, _ = gp("--print-config", "--config-file", f, "--mps-root=/run/nvidia/mps")
    check(c["pass-device-specs"] is True, "json flags %r" % c)
    check(c["sharing"] == {"strategy": "mps", "renameByDefault": False, "failRequestsGreaterThanOne": True,
                           "resources": [{"name": "nvidia.com/gpu", "rename": "", "replicas": 3}]},
          "mps defaults failRequestsGreaterThanOne to true: %r" % c["sharing"])
    f = cfgfile(tmp, "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
                     "    - name: nvidia.com/gpu\n      replicas: 10\n    - name: nvidia.com/mig-1g.5gb\n"
                     "      replicas: 2\n      rename: small\n")
    c, _ = gp("--print-config", "--config-file", f)
    check(c["sharing"] == {"strategy": "time-slicing", "renameByDefault": True, "failRequestsGreaterThanOne": False,
                           "resources": [{"name": "nvidia.com/gpu", "rename": "nvidia.com/gpu.shared", "replicas": 10},
                                         {"name": "nvidia.com/mig-1g.5gb", "rename": "nvidia.com/mig-1g.5gb.shared",
                                          "replicas": 2}]}, "time-slicing %r" % c["sharing"])
    # issue 15 §5: `rename` forced off as upstream (DisableResourceNamingInConfig), with a located warning
    _, err = gp("--print-config", "--config-file", f)
    check("%s:10:15: sharing.timeSlicing.resources[1].rename: setting 'rename' is not supported" % f in err,
          "rename warning: %r" % err)
    # timeSlicing + mps: mps wins (upstream Sharing.SharingStrategy), with a warning
    f = cfgfile(tmp, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 8}\n"
                     "  mps:\n    resources:\n    - {name: gpu, replicas: 2, rename: foo}\n")
    c, err = gp("--print-config", "--config-file", f, "--mps-root=/run/nvidia/mps")
    check(c["sharing"] == {"strategy": "mps", "renameByDefault": False, "failRequestsGreaterThanOne": True,
                           "resources": [{"name": "nvidia.com/gpu", "rename": "", "replicas": 2}]},
          "mps wins: %r" % c["sharing"])
    check("using mps (as upstream)" in err and "advertised as nvidia.com/gpu" in err, "warnings %r" % err)
    # a relative --config-file / CONFIG_FILE is read from the working directory (upstream os.Open)
    cfgfile(tmp, "version: v1\nflags:\n  migStrategy: single\n", "rel.yaml")
    for how in ("flag", "env"):
        p = subprocess.run([GPULET, "plugin", "--print-config"] + (["--config-file", "rel.yaml"] if how == "flag"
                                                                   else []),
                           capture_output=True, text=True, cwd=tmp, timeout=20,
                           env=dict(CLEAN, **({"CONFIG_FILE": "rel.yaml"} if how == "env" else {})))
        check(p.returncode == 0, "relative config (%s): %s" % (how, p.stderr))
        c = json.loads(p.stdout)
        check(os.path.realpath(c["config-file"]) == os.path.realpath(os.path.join(tmp, "rel.yaml")),
              "relative kept absolute: %r" % c["config-file"])
        check(c["mig-strategy"] == "single", "relative config (%s) not read: %r" % (how, c))
    # issue 15 §6: without --device-plugin-path the sockets go next to --kubelet-socket
    c, _ = gp("--print-config", "--kubelet-socket", "/var/lib/k0s/kubelet/device-plugins/kubelet.sock")
    check(c["device-plugin-path"] == "/var/lib/k0s/kubelet/device-plugins", "derived dir %r" % c["device-plugin-path"])
    c, _ = gp("--print-config", "--kubelet-socket", "/a/kubelet.sock", "--device-plugin-path", "/b")
    check(c["device-plugin-path"] == "/b", "explicit dir wins %r" % c["device-plugin-path"])

    # unknown keys: warned with file:line:col, not fatal; GFD keys accepted silently
    f = cfgfile(tmp, "version: v1\nflags:\n  migStrategy: none\n  colour: blue\n  gfd:\n    oneshot: true\nextra: 1\n")
    _, err = gp("--print-config", "--config-file", f)
    check("%s:4:11: unknown key flags.colour" % f in err and "%s:7:1: unknown key (top).extra" % f in err
          and "gfd" not in err, "warnings: %r" % err)


BAD = [  # (file text, expected words in the error)
    # the YAML type of each key as upstream's JSON decoding into *bool / *string / Duration takes it
    ("version: v1\nflags:\n  failOnInitError: \"false\"\n", ":3:20: flags.failOnInitError: must be true or false"),
    ("version: v1\nflags:\n  plugin:\n    passDeviceSpecs: 1\n", ":4:22: flags.plugin.passDeviceSpecs: must be true or"),
    ("version: v1\nflags:\n  plugin:\n    cdiAnnotationPrefix: 5\n",
     ":4:26: flags.plugin.cdiAnnotationPrefix: must be a string (quote it), got a number"),
    ("version: v1\nflags:\n  plugin:\n    deviceListStrategy: [envvar, 5]\n", "list items must be strings"),
    ("version: v1\nflags:\n  migStrategy: [none\n", ":4:1:"),  # YAML syntax: line:col from libyaml
    ("version: v2\n", ":1:10: version: unknown version \"v2\""),
    ("version: v1\nflags:\n  plugin:\n    deviceIDStrategy: serial\n", ":4:23: flags.plugin.deviceIDStrategy"),
    ("version: v1\nflags:\n  failOnInitError: maybe\n", ":3:20: flags.failOnInitError"),
    ("version: v1\nflags:\n  plugin:\n    deviceListStrategy: [envvar, teleport]\n", "unknown strategy \"teleport\""),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 1\n",
     ":6:17: sharing.timeSlicing.resources[0]: replicas must be an integer from 2 to 1024, got \"1\""),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 100000\n", "from 2 to 1024"),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", "sharing.timeSlicing.resources: a non-empty list"),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - replicas: 2\n", "name is required"),
    ("version: v1\nflags:\n  nvidiaDriverRoot: relative/path\n", "must be an absolute path"),
    ("version: v1\nflags:\n  nvidiaDriverRoot: /../../../etc\n", ":3:21: flags.nvidiaDriverRoot: driver-root: path "
     "must not contain '..'"),
    ("version: v1\nimex:\n  channelIDs: [1]\n", "only channel 0"),
    ("version: v1\nflags:\n  plugin: yes\n", "expected a mapping"),
    # issue 23 item 9: refused as upstream's api/config/v1 refuses them (§2)
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: \"4\"\n",
     ":6:17: sharing.timeSlicing.resources[0]: replicas must be an integer, not the string \"4\""),
    ("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 2, devices: some}\n",
     ":5:41: sharing.timeSlicing.resources[0].devices: \"some\" is not valid"),
    ("version: v1\nresources:\n  gpus:\n  - pattern: \"*\"\n", ":4:5: resources.gpus[0]: 'name' is required"),
    # duplicates: upstream merges them silently; gpulet names both places
    ("version: v1\nsharing:\n  mps:\n    resources:\n    - {name: gpu, replicas: 2}\n    - {name: gpu, replicas: 3}\n",
     ":6:14: sharing.mps.resources[1].name: nvidia.com/gpu is already listed at "),
]


def test_config_errors(h):
    for i, (text, words) in enumerate(BAD):
        f = cfgfile(h.tmp, text, "bad%d.yaml" % i)
        _, err = gp("--print-config", "--config-file", f, rc=1)
        check(f in err and words in err, "bad file %d: %r lacks %r" % (i, err, words))
    _, err = gp("--print-config", "--config-file", "/nonexistent.yaml", rc=1)
    check("/nonexistent.yaml" in err, "missing file: %r" % err)
    _, err = gp("--print-config", "--mig-strategy=sometimes", rc=1)
    check("--mig-strategy" in err and "none|single|mixed" in err, "flag error %r" % err)
    _, err = gp("--print-config", env={"DEVICE_ID_STRATEGY": "serial"}, rc=1)
    check("env DEVICE_ID_STRATEGY" in err, "env error %r" % err)
    # '..' in a path from a flag or env var is refused too: it would leave --root
    _, err = gp("--print-config", "--device-plugin-path", "/var/lib/kubelet/../../../tmp", rc=1)
    check("--device-plugin-path" in err and "'..'" in err, "dotdot flag %r" % err)
    _, err = gp("--print-config", env={"NVIDIA_DRIVER_ROOT": "/run/nvidia/driver/.."}, rc=1)
    check("env NVIDIA_DRIVER_ROOT" in err and "'..'" in err, "dotdot env %r" % err)
    _, err = gp("--print-config", "--rescan-interval=0", rc=1)
    check("--rescan-interval" in err, "bounds %r" % err)
    # QA: a missing value is named as such; a flag from the field guide (§5.2) gets the plugin's equivalent
    _, err = gp("--print-config", "--mig-strategy", rc=2)
    check("'--mig-strategy' needs a value" in err, "missing value %r" % err)
    _, err = gp("--print-config", "--enable-cdi=true", rc=2)
    check("'--enable-cdi=true'" in err and "--device-list-strategy=cdi-cri" in err, "foreign flag %r" % err)
    _, err = gp("--no-such-flag", rc=2)
    check("--no-such-flag" in err, "unknown flag %r" % err)
    _, err = gp("--print-config", "--config-file", cfgfile(h.tmp, "sharing:\n  mps:\n    resources:\n"
                                                                   "    - {name: gpu, replicas: 2}\n"), rc=1)
    check("--mps-root" in err, "MPS needs --mps-root: %r" % err)
    # vfio is GFD's (the shared file may say so for labels); the plugin refuses it, as upstream's does
    vfio = cfgfile(h.tmp, "version: v1\nflags:\n  deviceDiscoveryStrategy: vfio\n", "vfio.yaml")
    _, err = gp("--print-config", "--config-file", vfio, rc=1)
    check("vfio is for labels" in err, "vfio in the plugin: %r" % err)
    # issue 35 item 6: tegra is refused naming it (before: accepted, NVML used anyway), with or without CDI
    for extra in ([], ["--device-list-strategy", "envvar"]):
        _, err = gp("--print-config", "--device-discovery-strategy", "tegra", *extra, rc=1)
        check("--device-discovery-strategy=tegra is not supported" in err, "tegra in the plugin: %r" % err)
    _, err = gp("--print-config", env={"DEVICE_DISCOVERY_STRATEGY": "tegra"}, rc=1)
    check("tegra is not supported" in err, "tegra from the env: %r" % err)
    teg = cfgfile(h.tmp, "version: v1\nflags:\n  deviceDiscoveryStrategy: tegra\n", "tegra.yaml")
    _, err = gp("--print-config", "--config-file", teg, rc=1)
    check("tegra is not supported" in err, "tegra from the file: %r" % err)


def test_go_values(h):
    """Issue 23 §6: env vars as urfave/cli v2 reads them (set but empty counts as set), -v
    (docs/reference/go-parsing.md)."""
    c, _ = gp("--print-config", env={"KUBELET_SOCKET": "", "FAIL_ON_INIT_ERROR": "", "PASS_DEVICE_SPECS": ""})
    check(c["kubelet-socket"] == "" and c["fail-on-init-error"] is False and c["pass-device-specs"] is False,
          "empty env vars: %s" % c)
    # an empty env var wins over the file and over a later env var of the same option
    f = cfgfile(h.tmp, "version: v1\nflags:\n  failOnInitError: true\n  plugin:\n    nvidiaCTKPath: /f/ctk\n")
    c, _ = gp("--print-config", "--config-file", f, env={"FAIL_ON_INIT_ERROR": "", "NVIDIA_CDI_HOOK_PATH": "",
                                                         "NVIDIA_CTK_PATH": "/e/ctk"})
    check(c["fail-on-init-error"] is False and c["nvidia-cdi-hook-path"] == "", "empty env over file: %s" % c)
    # a choice or list set to "" is refused, as upstream's validation refuses it
    for env in ("MIG_STRATEGY", "DEVICE_LIST_STRATEGY", "DEVICE_ID_STRATEGY"):
        gp("--print-config", env={env: ""}, rc=1)
    # gpulet's own numbers keep their default, as urfave's UintFlag does with ""
    c, _ = gp("--print-config", env={"GPULET_RESCAN_INTERVAL": ""})
    check(c["rescan-interval"] == 10, "empty number env: %s" % c)
    # the command line still wins
    c, _ = gp("--print-config", "--fail-on-init-error=true", env={"FAIL_ON_INIT_ERROR": ""})
    check(c["fail-on-init-error"] is True, "flag over empty env: %s" % c)
    for verb in ("plugin", "mps-control-daemon"):
        p = subprocess.run([GPULET, verb, "-v"], capture_output=True, text=True, env=CLEAN, timeout=20)
        check(p.returncode == 0 and "gpulet %s replaces" % verb in p.stdout, "%s -v: %s" % (verb, p.stdout))


def test_fail_on_init_error(h):
    env = h.plugin_env()
    base = h.base_args()
    # NVML cannot be loaded: default exits 1 naming the library; false keeps the pod up
    p = subprocess.run([GPULET, "plugin", *base, "--nvml-library", "/nonexistent/libnvidia-ml.so.1"],
                       capture_output=True, text=True, env=env, timeout=20)
    check(p.returncode == 1 and "/nonexistent/libnvidia-ml.so.1" in p.stderr and "fail-on-init-error" in p.stderr,
          "rc %d: %s" % (p.returncode, p.stderr))
    log = open(os.path.join(h.tmp, "wait.log"), "w+")
    p = subprocess.Popen([GPULET, "plugin", *base, "--nvml-library", "/nonexistent/libnvidia-ml.so.1",
                          "--fail-on-init-error=false"], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(100):
            log.seek(0)
            if "No devices found. Waiting indefinitely." in log.read():
                break
            subprocess.run(["sleep", "0.05"])
        check(p.poll() is None, "exited with --fail-on-init-error=false")
        # a reload while nothing was ever served: no "previous" device list to fall back on
        p.send_signal(signal.SIGHUP)
        for _ in range(100):
            log.seek(0)
            if "Still no devices" in log.read():
                break
            subprocess.run(["sleep", "0.05"])
        p.send_signal(signal.SIGTERM)
        check(p.wait(10) == 0, "SIGTERM while waiting")
    finally:
        if p.poll() is None:
            p.kill()
    log.seek(0)
    text = log.read()
    check("No devices found. Waiting indefinitely." in text, "no waiting message")
    check("Still no devices" in text and "retry_s=30" in text, "a reload while waiting must say nothing is served")
    check("serving the previous one" not in text, "there never was a previous device list: %r" % text)


def test_warnings_one_by_one(h):
    """The file's warnings: one log line each, at most 20, then how many more (not one line that
    may be megabytes long)."""
    cfg = cfgfile(h.tmp, "version: v1\nflags:\n" + "".join("  unknownKey%d: x\n" % i for i in range(25)))
    # imex.required without the channel: exits after logging the config, before NVML
    p = subprocess.run([GPULET, "plugin", *h.base_args(), "--config-file", cfg, "--imex-channel-ids=0",
                        "--imex-required"], capture_output=True, text=True, env=h.plugin_env(), timeout=20)
    lines = [x for x in p.stderr.splitlines() if 'msg="Config warning"' in x]
    check(p.returncode == 1 and len(lines) == 20 and all("unknownKey" in x for x in lines),
          "warning lines: rc %d %d\n%s" % (p.returncode, len(lines), p.stderr[-3000:]))
    check(any('msg="Config warnings left out"' in x and "count=5" in x for x in p.stderr.splitlines()),
          "no count of the rest:\n%s" % p.stderr[-3000:])


def test_cdi_spec_unwritable(h):
    """A CDI strategy whose spec cannot be written: exit 1 at start (QA), or serve with
    --fail-on-init-error=false."""
    spec = os.path.join(h.root, "var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json")
    os.makedirs(spec)  # a dir where the file goes: the write fails
    args = [*h.base_args(), "--device-list-strategy", "cdi-cri"]
    p = subprocess.run([GPULET, "plugin", *args], capture_output=True, text=True, env=h.plugin_env(), timeout=20)
    check(p.returncode == 1 and "Cannot write the CDI spec" in p.stderr and "fail-on-init-error" in p.stderr,
          "unwritable CDI spec: rc %d %s" % (p.returncode, p.stderr))
    h.start_standin()
    h.start_plugin("--device-list-strategy", "cdi-cri", "--fail-on-init-error=false")
    h.check_alive()


# Every key of upstream's api/config/v1/flags.go at v0.20.0 (docs/reference/device-plugin.md §2):
# the file the plugin and GFD share.
EVERY_KEY = """version: v1
flags:
  migStrategy: none
  failOnInitError: true
  mpsRoot: /run/nvidia/mps
  nvidiaDriverRoot: /
  nvidiaDevRoot: /
  gdrcopyEnabled: false
  gdsEnabled: false
  mofedEnabled: false
  useNodeFeatureAPI: false
  deviceDiscoveryStrategy: auto
  plugin:
    passDeviceSpecs: false
    deviceListStrategy: [envvar]
    deviceIDStrategy: uuid
    cdiAnnotationPrefix: cdi.k8s.io/
    nvidiaCTKPath: /usr/bin/nvidia-ctk
    containerDriverRoot: /driver-root
    sharedDevicesAllocationPolicy: distributed
  gfd:
    oneshot: false
    noTimestamp: false
    sleepInterval: 60s
    outputFile: /etc/kubernetes/node-feature-discovery/features.d/gfd
    machineTypeFile: /sys/class/dmi/id/product_name
"""


def test_shared_file(h):
    """The shared file with every upstream key: no warning from the plugin (GFD's keys are another reader's)."""
    f = cfgfile(h.tmp, EVERY_KEY, "every.yaml")
    _, err = gp("--print-config", "--config-file", f)
    check(err == "", "warnings on upstream's keys: %r" % err)
    # not upstream's keys: warned as any typo
    f = cfgfile(h.tmp, "version: v1\nflags:\n  gfd:\n    useNodeFeatureAPI: true\n    deviceDiscoveryStrategy: nvml\n",
                "wrong.yaml")
    _, err = gp("--print-config", "--config-file", f)
    check("unknown key flags.gfd.useNodeFeatureAPI" in err and "unknown key flags.gfd.deviceDiscoveryStrategy" in err,
          "not upstream's keys: %r" % err)


def test_log_level(h):
    """--log-level has one rule in every verb: any case, 'warning' for warn (util/log.h LOG_OPT_LEVEL)."""
    for args, env, want in ((["--log-level", "INFO"], {}, "info"), ([], {"LOG_LEVEL": "warning"}, "warn"),
                            ([], {"LOG_LEVEL": "Debug"}, "debug"), (["--log-level", "ERROR"], {}, "error")):
        c, _ = gp("--print-config", *args, env=env)
        check(c["log-level"] == want, "%s %s: log-level %r" % (args, env, c["log-level"]))
    _, err = gp("--print-config", "--log-level", "loud", rc=1)
    check("--log-level" in err and "loud" in err, "bad level: %r" % err)


if __name__ == "__main__":
    run(test_shared_file)
    run(test_log_level)
    run(test_warnings_one_by_one)
    run(test_config_sources)
    run(test_config_errors)
    run(test_go_values)
    run(test_fail_on_init_error)
    run(test_cdi_spec_unwritable)
