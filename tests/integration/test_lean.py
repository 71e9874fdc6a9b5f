#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Lean start-up (issue 16.3, docs/HACKING.md "Lean start-up"): build/gpulet needs only libc, libm,
jansson and libyaml; the verbs that serve nothing never load gRPC, HTTP or their modules (seen by the
dynamic linker itself: LD_DEBUG=files); plugin and exporter load their module from next to the
executable or from ../lib/gpulet; a module that is missing, writable by others or from another build
is refused with a message that says which file and what to do."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

from test_cdi_testlib import BUILD, FAKE, GPULET, SRC, check, finish

HEAVY = ("libgrpc", "libgpr", "libabsl", "libstdc++", "libmicrohttpd", "libgnutls", "libprotobuf-c", "libssl",
         "libcrypto", "libupb", "libre2", "libcares")
MODULES = ("gpulet-grpc.so", "gpulet-http.so")
FIXTURE = os.path.join(SRC, "tests", "fixtures", "dgx-a100.json")


def loaded(argv, env=None):
    """(exit status, the shared objects the dynamic linker loaded for this run, dlopen included)."""
    e = dict(env or os.environ, LD_DEBUG="files", FAKE_NVML_FIXTURE=FIXTURE)
    p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=60)
    objs = {os.path.basename(line.split("file=")[1].split()[0]) for line in p.stderr.splitlines()
            if "generating link map" in line}
    return p.returncode, objs


def needed(path):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return {line.split("[")[1].split("]")[0] for line in out.splitlines() if "(NEEDED)" in line}


def test_needed():
    n = {x for x in needed(GPULET) if not x.startswith(("libasan", "libubsan"))}  # the sanitizer tree
    check(n <= {"libc.so.6", "libm.so.6", "libjansson.so.4", "libyaml-0.so.2"}, f"gpulet NEEDED: {sorted(n)}")
    check("libgrpc" in " ".join(needed(os.path.join(BUILD, "gpulet-grpc.so"))), "gpulet-grpc.so needs libgrpc")
    check("libmicrohttpd.so.12" in needed(os.path.join(BUILD, "gpulet-http.so")), "gpulet-http.so needs microhttpd")
    check(not any("microhttpd" in x for x in needed(os.path.join(BUILD, "gpulet-grpc.so"))),
          "the plugin's module does not bring HTTP")


def test_lean_verbs(root):
    nv = ["--nvml-library", FAKE]
    runs = [
        ["--help"], ["--version"], ["devices", "--root", root, *nv], ["cdi", "generate", "--root", root, *nv],
        ["cdi", "validate", "--root", root], ["labels", "--oneshot", "--output-file", "-", "--root", root, *nv],
        ["doctor", "--root", root, *nv], ["lint", os.path.join(SRC, "tests", "lint")], ["versions", "--root", root],
        ["probe", "--root", root, "--nvml-library", FAKE],
    ]
    for args in runs:
        rc, objs = loaded([GPULET, *args])
        sanitized = any(o.startswith("libasan") for o in objs)  # libasan itself needs libstdc++
        heavy = sorted(o for o in objs if (o.startswith(HEAVY) and not (sanitized and o.startswith("libstdc++")))
                       or o in MODULES)
        check(not heavy, f"gpulet {' '.join(args[:2])}: loads {heavy}")
        check(rc in (0, 1), f"gpulet {' '.join(args[:2])}: exit {rc}")
    print(f"{len(runs)} lean runs load no gRPC, HTTP or module")


def test_serving_verbs():
    rc, objs = loaded([GPULET, "plugin", "--help"])
    check(rc == 0 and "gpulet-grpc.so" in objs and "gpulet-http.so" not in objs, f"plugin loads: {sorted(objs)}")
    check(not any(o.startswith(("libmicrohttpd", "libgnutls")) for o in objs), "plugin loads no HTTP")
    rc, objs = loaded([GPULET, "exporter", "--help"])
    check(rc == 0 and "gpulet-http.so" in objs, f"exporter loads: {sorted(objs)}")


def run_copy(bindir, *args):
    return subprocess.run([os.path.join(bindir, "gpulet"), *args], capture_output=True, text=True, timeout=30)


def test_module_search_and_refusal(tmp):
    # installed layout: <prefix>/bin/gpulet and <prefix>/lib/gpulet/*.so
    bindir, libdir = os.path.join(tmp, "bin"), os.path.join(tmp, "lib", "gpulet")
    os.makedirs(bindir)
    shutil.copy(GPULET, bindir)
    r = run_copy(bindir, "plugin", "--help")
    check(r.returncode == 1 and "gpulet-grpc.so not found" in r.stderr and bindir in r.stderr,
          f"no module: {r.returncode} {r.stderr}")
    check(run_copy(bindir, "cdi", "--help").returncode == 0, "the lean verbs work without the modules")
    os.makedirs(libdir)
    for m in MODULES:
        shutil.copy(os.path.join(BUILD, m), libdir)
    r = run_copy(bindir, "plugin", "--help")
    check(r.returncode == 0 and "Usage: gpulet plugin" in r.stdout, f"module in ../lib/gpulet: {r.stderr}")
    os.chmod(os.path.join(libdir, "gpulet-grpc.so"), 0o777)
    r = run_copy(bindir, "plugin", "--help")
    check(r.returncode == 1 and "refusing to load" in r.stderr and "writable by group or others" in r.stderr,
          f"group-writable module: {r.returncode} {r.stderr}")
    # a module from another build: the same file name, another ABI string
    other = os.path.join(tmp, "other.c")
    with open(other, "w") as f:
        f.write('const char gpulet_module_abi[] = "gpulet-module/1 0.0.0-other";\n')
    os.remove(os.path.join(libdir, "gpulet-grpc.so"))
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", os.path.join(libdir, "gpulet-grpc.so"),
                    other], check=True)
    os.chmod(os.path.join(libdir, "gpulet-grpc.so"), 0o755)
    r = run_copy(bindir, "plugin", "--help")
    check(r.returncode == 1 and "from another build" in r.stderr and "0.0.0-other" in r.stderr,
          f"module of another build: {r.returncode} {r.stderr}")
    # next to the executable wins over ../lib/gpulet
    shutil.copy(os.path.join(BUILD, "gpulet-grpc.so"), bindir)
    r = run_copy(bindir, "plugin", "--help")
    check(r.returncode == 0, f"module next to the executable: {r.stderr}")


def main():
    tmp = tempfile.mkdtemp(prefix="gpulet-lean-")
    try:
        root = os.path.join(tmp, "root")
        subprocess.run(["sh", os.path.join(SRC, "tests", "lib", "mkroot.sh"), root, "dgx-a100"], check=True,
                       capture_output=True, env=dict(os.environ, GPULET_BUILD=BUILD))
        test_needed()
        test_lean_verbs(root)
        test_serving_verbs()
        test_module_search_and_refusal(os.path.join(tmp, "install"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("lean start-up: gRPC and HTTP only where they are used")


if __name__ == "__main__":
    sys.exit(main())
