#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make demo` (tests/demo.py) as a newcomer meets it:

  * two runs print the same story, but for the node's directory and the "Took" line: every
    resource the plugin serves is listed (a race on the stand-in's list events once printed 3 of 5,
    then 4 of 5);
  * the story has its parts in order: the node, what the plugin advertised, an Allocate, the CDI
    spec, the doctor healthy, one breakage and the doctor naming it, the commands to try;
  * every command of "Your turn" works as printed, in order, in one shell from the directory the
    demo ran in (`make install` with DESTDIR added, so nothing outside the test's temp dir changes),
    and the installed tree is the one docs/HACKING.md section 7 describes;
  * `make demo`'s packages are among those `make test` installs.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("GPULET_SRC") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
DEMO = os.path.join(SRC, "tests", "demo.py")
SECTIONS = ["The node:", "What the plugin advertised", "An Allocate", "The CDI spec", "The doctor walks the chain",
            "One breakage", "Your turn"]


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run_demo(d):
    r = subprocess.run(["/usr/bin/python3", DEMO, "--dir", d], capture_output=True, text=True, cwd=SRC,
                       env=dict(os.environ, GPULET_BUILD=BUILD), timeout=120)
    check(r.returncode == 0, "demo.py --dir %s exited %d:\n%s%s" % (d, r.returncode, r.stdout, r.stderr))
    check(os.path.isdir(os.path.join(d, "root")), "the demo did not leave its node in %s" % d)
    return r.stdout


def normal(out, d):
    """The output with the node's directory as $DEMO and without the time it took."""
    return re.sub(r"^Took .*$", "Took", out.replace(d, "$DEMO"), flags=re.M)


def check_story(out):
    heads = [line[3:] for line in out.splitlines() if line.startswith("== ")]
    check(len(heads) == len(SECTIONS) and all(h.startswith(s) for h, s in zip(heads, SECTIONS)),
          "the story's sections are %s, want %s" % (heads, SECTIONS))
    adv = re.findall(r"^kubelet: Register (\S+) +-> allocatable (\d+)/(\d+)$", out, re.M)
    # dgx-a100 with --mig-strategy mixed: 6 full GPUs, MIG 1g.5gb x3, 2g.10gb x2, 3g.20gb, 4g.20gb
    want = [("nvidia.com/gpu", "6", "6"), ("nvidia.com/mig-1g.5gb", "3", "3"), ("nvidia.com/mig-2g.10gb", "2", "2"),
            ("nvidia.com/mig-3g.20gb", "1", "1"), ("nvidia.com/mig-4g.20gb", "1", "1")]
    check(adv == want, "advertised %s, want %s" % (adv, want))
    check(re.search(r"^  cdi  k8s.device-plugin.nvidia.com/gpu=GPU-", out, re.M), "no CDI name in the Allocate")
    # the count of ok lines grows with the doctor's checks; no failure and no warning is what matters
    check(re.search(r"^0 fail, 0 warn, \d+ ok$", out, re.M), "the doctor was not healthy before the breakage:\n" + out)
    check(re.search(r"^Root cause: inject\.cdi-disabled ", out, re.M), "the doctor did not name CDI off:\n" + out)


def try_lines(out):
    tail = out.split("\n== Your turn", 1)[1].splitlines()[1:]
    return [line.strip() for line in tail if line.startswith("  ")]


def run_try(lines, tmp):
    """Each line in one bash, in order, from the source dir; `make install` into tmp/dest. Returns
    [(line, rc, output)]."""
    script = []
    for i, line in enumerate(lines):
        cmd = line.split("   #", 1)[0]
        if cmd.startswith("make install"):
            cmd += " -s BUILD=%s DESTDIR=%s/dest" % (BUILD, tmp)
        script.append("%s >%s/out.%d 2>&1; echo $? >%s/rc.%d" % (cmd, tmp, i, tmp, i))
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=SRC, capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, "the commands did not run: %s" % r.stderr)
    res = []
    for i, line in enumerate(lines):
        with open("%s/out.%d" % (tmp, i)) as f, open("%s/rc.%d" % (tmp, i)) as g:
            res.append((line, int(g.read()), f.read()))
    return res


def check_try(res, tmp):
    cmds = [line for line, _, _ in res]
    check(any(c.startswith("make install") for c in cmds), "no `make install` among %s" % cmds)
    doctors = [(line, rc, out) for line, rc, out in res if " doctor " in line]
    check(len(doctors) == 2, "want two doctor runs, got %s" % cmds)
    line, rc, out = doctors[0]
    check(rc == 1 and "Root cause: inject.cdi-disabled" in out and "plugin.not-registered" in out,
          "%s: exit %d, want 1 naming CDI off and the stopped plugin:\n%s" % (line, rc, out))
    line, rc, out = doctors[1]
    check(rc == 0 and "0 fail, 0 warn" in out, "%s: exit %d after the fix:\n%s" % (line, rc, out))
    for line, rc, out in res:
        if " doctor " not in line:
            check(rc == 0, "%s: exit %d:\n%s" % (line, rc, out))
    check('"uuid": "GPU-4fa1c0e2-7b3d-4d21-9a5e-1c2b3d4e5f60"' in res[cmds.index(next(
        c for c in cmds if " devices " in c))][2], "devices --json does not list GPU 0")
    check_install(os.path.join(tmp, "dest", "usr", "local"))


def check_install(prefix):
    """docs/HACKING.md section 7, "Installing"."""
    b, lib = os.path.join(prefix, "bin"), os.path.join(prefix, "lib", "gpulet")
    for f in ("gpulet", "gpulet-probe", "gpulet-cdi-hook"):
        check(os.access(os.path.join(b, f), os.X_OK), "make install left no executable bin/%s" % f)
    for f in ("gpulet-grpc.so", "gpulet-http.so"):
        mode = os.stat(os.path.join(lib, f)).st_mode & 0o777
        check(mode & 0o022 == 0, "lib/gpulet/%s is mode %o: the loader refuses group/other-writable modules" % (f, mode))
    links = {"nvidia-device-plugin": "gpulet", "gpu-feature-discovery": "gpulet", "mps-control-daemon": "gpulet",
             "nvidia-cdi-hook": "gpulet-cdi-hook"}
    for name, target in links.items():
        p = os.path.join(b, name)
        check(os.path.islink(p) and os.readlink(p) == target, "bin/%s is not a link to %s" % (name, target))
    # the installed executable finds its modules in ../lib/gpulet: `gpulet exporter` lives in gpulet-http.so
    r = subprocess.run([os.path.join(b, "gpulet"), "exporter", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "--web-config-file" in r.stdout, "installed gpulet exporter --help: %s" % r.stderr)
    r = subprocess.run([os.path.join(b, "nvidia-device-plugin"), "--version"], capture_output=True, text=True)
    check(r.returncode == 0, "installed nvidia-device-plugin --version: %s" % r.stderr)


def check_packages():
    def names(path):
        with open(os.path.join(SRC, path)) as f:
            return {w for line in f if not line.startswith("#") for w in line.split()}
    extra = names(".ci/demo-packages.txt") - names(".ci/packages.txt")
    check(not extra, "make demo installs %s, which make test does not" % sorted(extra))


def main():
    tmp = tempfile.mkdtemp(prefix="gpulet-demo-test-")
    try:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        out_a, out_b = run_demo(a), run_demo(b)
        check(normal(out_a, a) == normal(out_b, b), "two runs differ:\n--- first\n%s\n--- second\n%s"
              % (normal(out_a, a), normal(out_b, b)))
        check_story(out_a)
        lines = try_lines(out_a)
        check(all(a in line or "make install" in line or "--help" in line for line in lines[1:]),
              "a command to try does not name the node in %s: %s" % (a, lines))
        check_try(run_try(lines, tmp), tmp)
        check_packages()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS demo: deterministic story, %d commands to try work as printed, make install" % len(lines))


if __name__ == "__main__":
    main()
