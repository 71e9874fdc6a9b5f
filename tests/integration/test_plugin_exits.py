#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet plugin` stops what it started on every way out (src/plugin/daemon.c, plugin_daemon_stop()):

  * another plugin serves the device-plugin dir: exit 1 before anything in the CDI spec dir is
    written or removed (the running plugin's gpu spec and extra specs stay as they are);
  * the CDI spec cannot be written under the default failOnInitError: exit 1 with NVML open and
    the node read;
  * imex.required and no channel: exit 1 before NVML;
  * SIGTERM while waiting for devices, SIGTERM after a SIGHUP reload, SIGTERM once serving: exit 0.

Each exits with its status within the timeout (a thread left running would hang it) and, in the
sanitizer suite, without a leak or ASan/UBSan report (LeakSanitizer runs at exit)."""
import os
import socket
import stat
import subprocess
import time

from plugin_lib import GPULET, check, run

SANITIZER = ("LeakSanitizer", "ERROR: AddressSanitizer", "runtime error:")
CDI = ("--device-list-strategy=cdi-cri", "--gds-enabled")


def gds_nodes(h):
    path = os.path.join(h.root, "dev/nvidia-fs0")
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(511, 2))


def plugin(h, *args):
    log = open(os.path.join(h.tmp, "exit-%d.log" % time.monotonic_ns()), "w+")
    p = subprocess.Popen([GPULET, "plugin", *h.base_args(), *args], stdout=log, stderr=subprocess.STDOUT,
                         env=h.plugin_env())
    p.log = log
    return p


def text(p):
    p.log.seek(0)
    return p.log.read()


def finish(p, what, want, wait_for=(), signals=()):
    """Wait for each line of wait_for in turn (sending the matching signal after it), or for the exit."""
    for i, line in enumerate(wait_for):
        deadline = time.monotonic() + 30
        while line not in text(p) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        check(line in text(p), "%s: never logged %r:\n%s" % (what, line, text(p)[-3000:]))
        p.send_signal(signals[i])
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    out = text(p)
    check(p.returncode == want, "%s: exit status %s, want %d:\n%s" % (what, p.returncode, want, out[-3000:]))
    bad = [s for s in SANITIZER if s in out]
    check(not bad, "%s: sanitizer report %r:\n%s" % (what, bad, out[-6000:]))
    print("ok   %s" % what)
    return out


def spec_dir(cdi):
    """Each file of the CDI spec dir: (mtime, content). A file gone between the listing and the read
    (a running plugin's temp file, renamed into place) is not in it."""
    out = {}
    for name in sorted(os.listdir(cdi)):
        try:
            with open(os.path.join(cdi, name)) as f:
                out[name] = (os.fstat(f.fileno()).st_mtime_ns, f.read())
        except FileNotFoundError:
            pass
    return out


def test_busy_dir(h):
    gds_nodes(h)
    cdi = os.path.join(h.root, "var/run/cdi")
    first = plugin(h, *CDI)
    deadline = time.monotonic() + 30
    while not ("Serving device plugin" in text(first) and
               os.path.exists(os.path.join(cdi, "k8s.device-plugin.nvidia.com-gds.json"))):
        check(first.poll() is None and time.monotonic() < deadline, "first plugin:\n%s" % text(first)[-3000:])
        time.sleep(0.05)
    # the first plugin's gpu spec (uuid names) and its extra spec (gds): the second one, another
    # id strategy and no gds, must leave both alone
    before = spec_dir(cdi)
    check(len(before) == 2, "first plugin's specs: %s" % sorted(before))
    out = finish(plugin(h, "--device-list-strategy=cdi-cri", "--device-id-strategy=index"),
                 "another plugin serves the dir", 1)
    check("Another plugin serves this device-plugin dir" in out and "Wrote CDI spec" not in out,
          "the specs were written before the dir was found taken:\n%s" % out[-3000:])
    after = spec_dir(cdi)
    check(sorted(after) == sorted(before), "spec dir changed: %s -> %s" % (sorted(before), sorted(after)))
    for name in before:
        check(after[name] == before[name], "%s was rewritten by the second plugin" % name)
    first.send_signal(15)
    finish(first, "the first plugin still serves and stops", 0)


def test_no_spec(h):
    # the spec dir is a symlink: cdi_write_spec refuses it
    os.makedirs(os.path.join(h.root, "var/run"), exist_ok=True)
    os.symlink(h.tmp, os.path.join(h.root, "var/run/cdi"))
    out = finish(plugin(h, *CDI), "the CDI spec cannot be written", 1)
    check("Cannot write the CDI spec" in out and "no CDI spec" in out, "why:\n%s" % out[-3000:])


def test_imex_required(h):
    out = finish(plugin(h, "--imex-channel-ids=0", "--imex-required"), "imex.required and no channel", 1)
    check("IMEX channel 0 is required" in out, "why:\n%s" % out[-3000:])


def test_signals(h):
    h.start_standin()
    finish(plugin(h, *CDI), "SIGTERM once serving", 0, wait_for=("Registered device plugin",),
           signals=(15,))
    finish(plugin(h, *CDI), "SIGTERM after a SIGHUP reload", 0,
           wait_for=("Registered device plugin", "Restarting device plugins"), signals=(1, 15))


def test_waiting(h):
    finish(plugin(h), "SIGTERM while waiting for devices", 0, wait_for=("No devices found. Waiting",),
           signals=(15,))


test_waiting.harness_args = {"fixture": "no-gpu"}

if __name__ == "__main__":
    run(test_busy_dir)
    run(test_no_spec)
    run(test_imex_required)
    run(test_signals)
    run(test_waiting)
