#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`gpulet exporter` stops what it started on every way out (src/exporter/daemon.c): a bad collectors
file, an address in use, SIGTERM while NVML keeps failing, SIGTERM once ready.
Each exits with its status and, in the sanitizer suite, without a leak or ASan/UBSan report.
Env GPULET, FAKE_NVML_LIB, GPULET_SRC."""
import os, signal, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exporter_lib as lib  # noqa: E402

SANITIZER = ("LeakSanitizer", "ERROR: AddressSanitizer", "runtime error:")
failures = []


def check(ok, what):
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def start(tmp, args, env=None):
    e = dict(os.environ, FAKE_NVML_FIXTURE=lib.fixture("single-t4"), NODE_NAME="n")
    e.update(env or {})
    cmd = [lib.GPULET, "exporter", "--nvml-library", lib.FAKE, "--root", tmp, "--kubernetes=false"] + args
    log = tempfile.NamedTemporaryFile("w+", dir=tmp, suffix=".log", delete=False)
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=e)
    p.log_path = log.name
    return p


def finish(p, what, want, wait_for=None):
    """Wait for wait_for in the log (then SIGTERM), or for the exit; check status and sanitizer silence."""
    def text():
        with open(p.log_path) as f:
            return f.read()
    if wait_for:
        deadline = time.monotonic() + 30
        while wait_for not in text() and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        check(wait_for in text(), f"{what}: logs {wait_for!r}")
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    out = text()
    check(p.returncode == want, f"{what}: exit status {p.returncode}, want {want}")
    bad = [s for s in SANITIZER if s in out]
    check(not bad, f"{what}: no sanitizer report {bad}" + (f"\n{out}" if bad else ""))


def main():
    tmp = tempfile.mkdtemp(prefix="gpulet-exp-exits-")
    finish(start(tmp, ["--address", "127.0.0.1:0", "--collectors", os.path.join(tmp, "missing.csv")]),
           "collectors file missing", 1)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    finish(start(tmp, ["--address", f"127.0.0.1:{busy.getsockname()[1]}"]), "address in use", 1)
    busy.close()
    p = start(tmp, ["--address", "127.0.0.1:0", "--nvml-library", os.path.join(tmp, "no-libnvidia-ml.so.1")])
    finish(p, "SIGTERM while NVML keeps failing", 0, wait_for="cannot load NVML")
    finish(start(tmp, ["--address", "127.0.0.1:0"]), "SIGTERM once ready", 0, wait_for="Exporter ready")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
