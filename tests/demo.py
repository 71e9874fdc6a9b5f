#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make demo`: gpulet on a simulated DGX A100 node, told as a short story.

The node stays in DIR (default build/demo) after the demo: root/ holds its files (device nodes,
/proc/driver/nvidia, the driver libraries with a real ld.so.cache made by `ldconfig -r`, the fake NVML
installed as the driver's libnvidia-ml, containerd's config, kubelet's device-plugin dir), fixture.json
what the fake NVML answers (tests/fixtures/dgx-a100.json: 8x A100-SXM4-40GB, MIG on GPUs 6 and 7).

The story: the node (`gpulet devices`); `gpulet plugin` registering with a kubelet stand-in
(python3-grpcio, tests/integration/kubelet_standin.py) and what it advertised; an Allocate; the CDI spec
the plugin keeps; the doctor on the healthy node; one breakage (CDI turned off in containerd) and the
doctor naming it; then commands to try, each of which works as printed from the directory `make demo`
ran in (test `demo_story` runs them).

The output is deterministic: the same on every run but for the lines "Took" prints (times), so a run
can be compared with another. Everything the plugin announced is waited for before it is printed.

usage: demo.py [--dir DIR]
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration"))
import plugin_lib as pl  # noqa: E402

MARK = ".gpulet-demo"  # a DIR holding it is ours to remove when the demo runs again
PLUGIN_ARGS = ("--mig-strategy", "mixed", "--device-list-strategy", "envvar,cdi-cri",
               "--nvidia-cdi-hook-path", "/usr/bin/nvidia-cdi-hook")
CONTAINERD = """version = 2
[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
        BinaryName = "/usr/bin/runc"
"""
FINDING = re.compile(r"^  \S+ +(ok|FAIL|WARN) ")  # a finding's first line in the doctor's report
SUMMARY = re.compile(r"^\d+ fail, \d+ warn, \d+ ok$")
CDI_OFF = "sed -i 's/enable_cdi = true/enable_cdi = false/' %s"
CDI_ON = "sed -i 's/enable_cdi = false/enable_cdi = true/' %s"


def rel(path):
    """PATH as the user types it from the current directory (where `make demo` ran)."""
    r = os.path.relpath(path)
    return path if r.startswith("..") else r


class Demo:
    def __init__(self, dirname):
        self.dir = os.path.abspath(dirname)
        self.gpulet = rel(pl.GPULET)
        self.env = None

    def step(self, title):
        print("\n== %s" % title, flush=True)

    def show(self, argv, env_words="", limit=None, keep=None):
        """Print ARGV as a command line, run it on the node, print its output (paths as typed): the
        first LIMIT lines, or those KEEP(lines) returns, saying how many were left out."""
        print("$ %s%s" % (env_words, " ".join(shlex.quote(a) for a in argv)), flush=True)
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True)
        lines = (r.stdout + r.stderr).replace(self.dir + "/", rel(self.dir) + "/").rstrip("\n").splitlines()
        shown = keep(lines) if keep else lines[:limit or len(lines)]
        print("\n".join(shown), flush=True)
        if len(shown) < len(lines):
            print("  ... (%d more lines: run the command to see them)" % (len(lines) - len(shown)))
        return r

    def node(self):
        """The node in DIR: the harness's fake root, with kubelet's and containerd's files inside it, so
        that `gpulet doctor --root` sees what kubelet and containerd would."""
        if os.path.exists(self.dir):
            if not os.path.exists(os.path.join(self.dir, MARK)):
                raise SystemExit("demo: %s exists and is not a demo node; remove it or give another --dir" % self.dir)
            shutil.rmtree(self.dir)
        longest = os.path.join(self.dir, "root/var/lib/kubelet/device-plugins/nvidia-mig-4g.20gb.sock")
        if len(longest.encode()) > 107:  # sun_path: 108 bytes with the NUL
            raise SystemExit("demo: %s is too deep for the plugin's unix sockets (%d bytes of 107): give a "
                             "shorter one, e.g. make demo DEMO_DIR=/tmp/gpulet-demo" % (self.dir, len(longest)))
        h = pl.Harness("dgx-a100", mkroot_args=("--with-fakenvml",), tmp=self.dir)
        open(os.path.join(self.dir, MARK), "w").close()
        h.dp = os.path.join(h.root, "var/lib/kubelet/device-plugins")
        os.makedirs(h.dp, exist_ok=True)
        self.containerd = os.path.join(h.root, "etc/containerd/config.toml")
        os.makedirs(os.path.dirname(self.containerd), exist_ok=True)
        with open(self.containerd, "w") as f:
            f.write(CONTAINERD)
        os.makedirs(os.path.join(h.root, "usr/bin"), exist_ok=True)
        runc = os.path.join(h.root, "usr/bin/runc")  # the runtime binary containerd would exec
        with open(runc, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(runc, 0o755)
        # the CDI hook the plugin's spec names, where gpulet's chart points the plugin at it
        # (values cdi.nvidiaHookPath: /usr/bin/nvidia-cdi-hook, gpulet's static hook under that name)
        shutil.copy(os.path.join(os.path.dirname(pl.GPULET), "gpulet-cdi-hook"),
                    os.path.join(h.root, "usr/bin/nvidia-cdi-hook"))
        self.env = h.plugin_env()
        self.fixture_words = "FAKE_NVML_FIXTURE=%s " % rel(h.fixture)
        return h

    def advertised(self, h):
        """kubelet's view: every resource the plugin serves registered and listed once. The plugin
        serves all its resources before it registers the first ("Serving device plugin" lines), so the
        first Register tells how many to wait for; each is printed once all have arrived."""
        h.events.wait(lambda e: e["event"] == "register", what="the first Register")
        served = sorted(line.split("resource=", 1)[1].split()[0] for line in h.log_text().splitlines()
                        if 'msg="Serving device plugin"' in line)
        pl.check(served, "the plugin logged no 'Serving device plugin' line:\n" + h.log_text())
        lists = {}
        for res in served:
            h.events.wait(lambda e, r=res: e["event"] == "register" and e["resource"] == r, what="Register " + res)
            lists[res] = h.wait_list(res)["devices"]
        for res in served:
            devs = lists[res]
            healthy = sum(1 for d in devs if d["health"] == "Healthy")
            print("kubelet: Register %-22s -> allocatable %d/%d" % (res, healthy, len(devs)))
        return lists

    def allocate(self, h, lists):
        gpus = [d["id"] for d in lists["nvidia.com/gpu"]][:2]
        c = h.allocate("nvidia.com/gpu", gpus).container_responses[0]
        print("kubelet: Allocate nvidia.com/gpu %s" % " ".join(gpus))
        for k, v in sorted(c.envs.items()):
            print("  env  %s=%s" % (k, v))
        for d in c.cdi_devices:
            print("  cdi  %s" % d.name)
        for k, v in sorted(c.annotations.items()):
            print("  annotation  %s=%s" % (k, v))

    def doctor(self, h, only_findings=False):
        """The doctor's report without its notes and "not checked" lists; with ONLY_FINDINGS, only what
        failed or warned, the root cause and the fix."""
        def keep(lines):
            out, kept = [], False
            for line in lines:
                m = FINDING.match(line)
                if m:
                    kept = not only_findings or m.group(1) != "ok"
                elif not line.startswith(" " * 18) or "note:" in line:
                    kept = line.startswith(("Root cause:", "Fix first:")) or SUMMARY.match(line) is not None
                if kept:
                    out.append(line)
                    kept = kept and (m is not None or line.startswith(" "))
            return out
        return self.show([self.gpulet, "doctor", "--root", rel(h.root)], self.fixture_words, keep=keep)

    def run(self):
        t0 = time.time()
        h = self.node()
        try:
            self.step("The node: %s, a simulated DGX A100 (the fake NVML answers from %s)"
                      % (rel(h.root), rel(h.fixture)))
            self.show([self.gpulet, "devices", "--root", rel(h.root)], self.fixture_words)

            self.step("What the plugin advertised: gpulet plugin registering with a kubelet stand-in")
            print("$ %s%s plugin --root %s %s" % (self.fixture_words, self.gpulet, rel(h.root), " ".join(PLUGIN_ARGS)))
            h.start_standin()
            h.start_plugin(*PLUGIN_ARGS, wait_resources=())
            lists = self.advertised(h)

            self.step("An Allocate: kubelet asks the plugin for two GPUs for a container")
            self.allocate(h, lists)

            self.step("The CDI spec the plugin keeps in /var/run/cdi, as a container runtime reads it")
            self.show([self.gpulet, "cdi", "list", "--root", rel(h.root)], limit=4)

            self.step("The doctor walks the chain on the healthy node")
            r = self.doctor(h)
            pl.check(r.returncode == 0, "the doctor failed on the healthy demo node (exit %d)" % r.returncode)

            self.step("One breakage: containerd with CDI turned off")
            print("$ " + CDI_OFF % shlex.quote(rel(self.containerd)))
            with open(self.containerd) as f:
                text = f.read()
            with open(self.containerd, "w") as f:
                f.write(text.replace("enable_cdi = true", "enable_cdi = false"))
            r = self.doctor(h, only_findings=True)
            pl.check(r.returncode == 1, "the doctor did not fail on CDI turned off (exit %d)" % r.returncode)
            h.stop_plugin(signal.SIGTERM)
        finally:
            h.close(keep=True)
        self.step("Your turn: the node stays in %s (run these from this directory)" % rel(self.dir))
        for line in self.try_lines(h):
            print("  " + line)
        print("\nTook %.1fs" % (time.time() - t0))
        return 0

    def try_lines(self, h):
        """Commands that work as printed from where `make demo` ran; test_demo.py runs each of them."""
        root, g = rel(h.root), self.gpulet
        return [
            "export %s   # what the fake NVML answers" % self.fixture_words.strip(),
            "%s doctor --root %s   # CDI still off; the plugin has stopped too (plugin.not-registered)" % (g, root),
            CDI_ON % shlex.quote(rel(self.containerd)) + "   # the fix",
            "%s doctor --root %s --only runtime,cdi   # the runtime and CDI links are healthy again" % (g, root),
            "%s devices --root %s --json" % (g, root),
            "%s labels --oneshot --output - --root %s" % (g, root),
            "%s --help" % g,
            "make install   # gpulet on your PATH: /usr/local/bin (PREFIX=..., DESTDIR=...)",
        ]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=os.path.join(pl.BUILD, "demo"), help="where the node is made and left")
    a = ap.parse_args()
    try:
        return Demo(a.dir).run()
    except AssertionError as e:  # what the demo waited for did not come: the plugin's log says why
        log = os.path.join(os.path.abspath(a.dir), "plugin.log")
        tail = open(log).read()[-3000:] if os.path.exists(log) else ""
        print("demo: %s\n--- the plugin's log (%s), its end ---\n%s" % (e, rel(log), tail))
        return 1


if __name__ == "__main__":
    sys.exit(main())
