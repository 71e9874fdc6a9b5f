#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""MPS and the node around it (docs/reference/device-plugin.md §5.1), with NVIDIA's REAL
nvidia-cuda-mps-control (test_plugin_mps.py's harness):

  * SELinux (upstream's setSELinuxContext): with <root>/sys/fs/selinux the pipe dir carries the label
    system_u:object_r:container_file_t:s0 (security.selinux, read back by the test) before the real
    control daemon starts in it; without, it carries none and the log says SELinux is off;
  * in a pid namespace of its own (a pod without hostPID) the real control daemon starts, takes the
    limits and answers the plugin, which runs in another pid namespace (what needs host PIDs is the
    MPS server a CUDA client makes the daemon start, never run here; helm-chart.md §2).
"""
import os
import re
import subprocess

from plugin_lib import check, run
from test_plugin_mps import MPS_ROOT, with_mps


@with_mps("standin")
def test_mps_pid_namespace(h, m):
    wrap = ("unshare", "--pid", "--fork", "--mount-proc", "--kill-child")
    if subprocess.run([*wrap, "true"], capture_output=True).returncode != 0:
        print("note: no pid namespace can be made here; nothing to check")
        return
    h.start_standin()
    mark = h.start_plugin("--config-file", m.config, "--mps-root", MPS_ROOT, wait_resources=())
    m.start(wrap=wrap)
    m.wait_log(r'msg="MPS control daemons ready" root=%s daemons=1' % re.escape(m.root))
    (pid,) = m.daemon_pids()
    with open("/proc/%d/status" % pid) as f:
        nspid = next(x.split()[1:] for x in f if x.startswith("NSpid:"))
    check(len(nspid) == 2, "the control daemon is not in a pid namespace of its own: NSpid %s" % nspid)
    # the plugin (this machine's pid namespace) asks it, and advertises the replicas
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: len(d) == 16, timeout=15)
    check(m.ask("get_default_active_thread_percentage\n") == (0, "25.0"), "limits from another pid namespace")
    print("PASS the real control daemon in a pid namespace of its own (pid %s there): ready, limits set, "
          "the plugin outside it advertises 16 replicas" % nspid[1])


def selinux_label(path):
    try:
        return os.getxattr(path, "security.selinux", follow_symlinks=False).rstrip(b"\0").decode()
    except OSError:
        return None


@with_mps("standin")
def test_mps_selinux_relabel(h, m):
    m.start()
    m.wait_log(r'msg="MPS control daemons ready" root=%s daemons=1' % re.escape(m.root))
    check('msg="SELinux disabled, not updating context" path=%s' % m.pipe in m.text(), "no word on SELinux")
    check(selinux_label(m.pipe) is None, "labelled without SELinux: %r" % selinux_label(m.pipe))
    check(m.stop() == 0, "SIGTERM exit code")
    os.makedirs(os.path.join(h.root, "sys/fs/selinux"))
    at = len(m.text())
    m.start()
    m.wait_log(r'msg="MPS control daemons ready" root=%s daemons=1' % re.escape(m.root), after=at)
    check('msg="SELinux enabled, setting context" path=%s context=system_u:object_r:container_file_t:s0' % m.pipe
          in m.text()[at:], "no relabel said: %s" % m.text()[at:])
    check(selinux_label(m.pipe) == "system_u:object_r:container_file_t:s0", "pipe dir label %r" % selinux_label(m.pipe))
    # the real daemon made its pipes in the labelled dir, and answers there
    check(m.ask("get_default_active_thread_percentage\n") == (0, "25.0"), "daemon in the labelled dir")
    check(m.stop() == 0, "SIGTERM exit code")


if __name__ == "__main__":
    run(test_mps_selinux_relabel)
    run(test_mps_pid_namespace)
    print("ok: the MPS daemon's pipe dirs are labelled where SELinux is on; it runs in a pid namespace of its own")
