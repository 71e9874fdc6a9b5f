#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Registration and ListAndWatch as kubelet sees them: one socket per resource (mode 0600),
Register fields, GetDevicePluginOptions, the initial device list with NUMA topology, the
`Registered device plugin` log line, PreStartContainer, UNIMPLEMENTED for unknown methods;
a stale socket is replaced, a live one (a second plugin on the same dir) is left alone."""
import os
import re
import socket
import stat
import subprocess

import grpc

from plugin_lib import FAKE_NVML_LIB, GPULET, check, pb, run


def test_registration_mixed(h):
    fx = h.fixture_data()
    h.start_standin()
    h.start_plugin("--mig-strategy", "mixed",
                   wait_resources=("nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb"))
    regs = {e["resource"]: e for e in h.events.items if e["event"] == "register"}
    # expected resources from the fixture: non-MIG GPUs -> nvidia.com/gpu, MIG profiles -> mig-<profile>
    full = [g for g in fx["gpus"] if not g.get("mig_mode")]
    profiles = {}
    for g in fx["gpus"]:
        for gi in g.get("mig", []) if g.get("mig_mode") else []:
            for ci in gi["cis"]:
                profiles.setdefault("nvidia.com/mig-" + ci["profile_name"].replace("+", "."), []).append(ci["uuid"])
    expected = {"nvidia.com/gpu"} | set(profiles)
    h.events.wait(lambda e: len({x["resource"] for x in h.events.items if x["event"] == "register"}) >= len(expected),
                  what="all registrations")
    regs = {e["resource"]: e for e in h.events.items if e["event"] == "register"}
    check(set(regs) == expected, "registered %s, expected %s" % (sorted(regs), sorted(expected)))
    for res, e in regs.items():
        check(e["version"] == "v1beta1", "version %r" % e["version"])
        check(e["endpoint"] == "nvidia-%s.sock" % res.split("/", 1)[1], "endpoint %r for %s" % (e["endpoint"], res))
        check(e["has_options"] and e["options"]["get_preferred_allocation_available"] is True,
              "options %r" % e["options"])
        check(e["options"]["pre_start_required"] is False, "pre_start_required %r" % e["options"])
        st = os.stat(os.path.join(h.dp, e["endpoint"]))
        check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
              "%s mode %o, expected socket 0600" % (e["endpoint"], st.st_mode))
        h.wait_log(r'msg="Registered device plugin" resource=%s socket=%s' % (
            res.replace(".", r"\."), os.path.join(h.dp, e["endpoint"]).replace(".", r"\.")))
    opts = [e for e in h.events.items if e["event"] == "options"]
    check(all(o["get_preferred_allocation_available"] for o in opts) and opts, "GetDevicePluginOptions %r" % opts)

    gpus = h.wait_list("nvidia.com/gpu")["devices"]
    check([d["id"] for d in gpus] == [g["uuid"] for g in full], "gpu list %r" % gpus)
    for d, g in zip(gpus, full):
        check(d["health"] == "Healthy", "health %r" % d)
        check(d["numa"] == [g["numa_node"]], "numa of %s: %r, fixture %r" % (d["id"], d["numa"], g["numa_node"]))
    for res, uuids in profiles.items():
        devs = h.wait_list(res)["devices"]
        check(sorted(d["id"] for d in devs) == sorted(uuids), "%s list %r, expected %r" % (res, devs, uuids))

    # PreStartContainer: empty reply; an unknown method: UNIMPLEMENTED
    r = h.call("nvidia.com/gpu", "PreStartContainer", pb.PreStartContainerRequest(devices_ids=[gpus[0]["id"]]),
               pb.PreStartContainerResponse)
    check(r.ByteSize() == 0, "PreStartContainer reply %r" % r)
    try:
        h.call("nvidia.com/gpu", "NoSuchMethod", pb.Empty(), pb.Empty)
        check(False, "unknown method answered")
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.UNIMPLEMENTED, "unknown method: %s" % e.code())
    h.check_alive()


def test_registration_none_strategy(h):
    """mig-strategy none: every GPU, MIG or not, is one nvidia.com/gpu (upstream §6)."""
    fx = h.fixture_data()
    h.start_standin()
    h.start_plugin()
    devs = h.wait_list("nvidia.com/gpu")["devices"]
    check([d["id"] for d in devs] == [g["uuid"] for g in fx["gpus"]], "list %r" % devs)
    check(not any(e["event"] == "register" and e["resource"] != "nvidia.com/gpu" for e in h.events.items),
          "extra resources registered")


def test_registration_socket_owner(h):
    """A socket nobody listens on is stale and replaced; one a live plugin serves is not: a second
    plugin on the same dir exits 1 naming the socket and the first one's pid (even with
    --fail-on-init-error=false), and the first keeps its socket and answers."""
    h.start_standin()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(h.sock("nvidia.com/gpu"))
    stale.close()  # the file stays, connect() gets ECONNREFUSED
    h.start_plugin()
    h.wait_log(r'msg="Registered device plugin" resource=nvidia\.com/gpu')
    ino = os.stat(h.sock("nvidia.com/gpu")).st_ino
    p = subprocess.run([GPULET, "plugin", *h.base_args(), "--fail-on-init-error=false"], capture_output=True,
                       text=True, env=h.plugin_env(), timeout=20)
    want = r"%s is served by another gpulet plugin \(pid %d from SO_PEERCRED\)" % (
        re.escape(h.sock("nvidia.com/gpu")), h.plugin.pid)
    check(p.returncode == 1 and re.search(want, p.stderr), "second plugin rc=%d:\n%s" % (p.returncode, p.stderr))
    check(os.stat(h.sock("nvidia.com/gpu")).st_ino == ino, "the first plugin's socket was replaced")
    r = h.call("nvidia.com/gpu", "GetDevicePluginOptions", pb.Empty(), pb.DevicePluginOptions)
    check(r.get_preferred_allocation_available, "first plugin options %r" % r)
    h.check_alive()


def test_registration_endpoint_dir(h):
    """Issue 15 §6: with only --kubelet-socket D/kubelet.sock the endpoint socket is served in D,
    where kubelet dials the registered endpoint name (no --device-plugin-path)."""
    h.start_standin()
    args = ["--nvml-library", FAKE_NVML_LIB, "--root", h.root, "--kubelet-socket", os.path.join(h.dp, "kubelet.sock")]
    mark = h.events.mark()
    h.log = open(h.log_path, "a")
    h.plugin = subprocess.Popen([GPULET, "plugin", *args], stdout=h.log, stderr=subprocess.STDOUT,
                                env=h.plugin_env())
    h.wait_list("nvidia.com/gpu", start=mark)
    check(stat.S_ISSOCK(os.stat(h.sock("nvidia.com/gpu")).st_mode), "socket not in the kubelet socket's dir")
    h.wait_log(r'msg="Registered device plugin" resource=nvidia\.com/gpu socket=%s' % re.escape(h.sock("nvidia.com/gpu")))
    h.check_alive()


def test_registration_socket_retry(h):
    """Issue 15 §5: a socket that cannot be created is retried (each failure logged), never exit 1:
    a regular file where the socket goes; once it is removed the plugin serves and registers."""
    h.start_standin()
    with open(h.sock("nvidia.com/gpu"), "w") as f:
        f.write("not a socket")
    h.log = open(h.log_path, "a")
    mark = h.events.mark()
    h.plugin = subprocess.Popen([GPULET, "plugin", *h.base_args()], stdout=h.log, stderr=subprocess.STDOUT,
                                env=h.plugin_env())
    h.wait_log(r'msg="Cannot serve the device plugins, will retry" error="%s exists and is not a socket[^"]*" '
               r'attempt=2 retry_s=2' % re.escape(h.sock("nvidia.com/gpu")))
    h.check_alive()
    check(not any(e["event"] == "register" for e in h.events.items[mark:]), "registered without a socket")
    os.unlink(h.sock("nvidia.com/gpu"))
    h.wait_list("nvidia.com/gpu", start=mark, timeout=15)
    check(stat.S_ISSOCK(os.stat(h.sock("nvidia.com/gpu")).st_mode), "no socket after the retry")
    h.check_alive()


def test_registration_dir_appears(h):
    """The kubelet socket's dir does not exist yet (upstream exits): the plugin waits, and serves
    and registers once the dir and kubelet are there."""
    os.rmdir(h.dp)
    h.log = open(h.log_path, "a")
    h.plugin = subprocess.Popen([GPULET, "plugin", *h.base_args()], stdout=h.log, stderr=subprocess.STDOUT,
                                env=h.plugin_env())
    h.wait_log(r"Cannot watch the kubelet socket's directory for kubelet restarts, will retry")
    h.wait_log(r'msg="Cannot serve the device plugins, will retry"')
    h.check_alive()
    os.makedirs(h.dp)
    h.start_standin()
    h.wait_list("nvidia.com/gpu", timeout=15)
    h.wait_log(r"Watching the kubelet socket's directory")
    h.check_alive()


if __name__ == "__main__":
    run(test_registration_mixed)
    run(test_registration_none_strategy)
    run(test_registration_socket_owner)
    run(test_registration_endpoint_dir)
    run(test_registration_socket_retry)
    run(test_registration_dir_appears)
