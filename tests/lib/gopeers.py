#!/usr/bin/python3
"""The Go programs gpulet lives among (kubelet, kube-apiserver, containerd, crictl, nvidia-ctk,
NVIDIA's device plugin), built by the tests from their Go modules through the module proxy.

Nothing of theirs enters the clone: each build happens in a throwaway module under the cache dir
(GPULET_PEERS_CACHE, default ~/.cache/gpulet-peers), keyed by name and version, and the Go sources
stay in Go's module cache. A second call with the same inputs returns the binaries at once; two
test processes building the same peer wait for each other (a lock file), never build twice.

    gopeers.py build NAME MODULE VERSION PKG...     build (once) and print the binaries' paths

Library use:
    bins = gopeers.build("crictl", "sigs.k8s.io/cri-tools", "v1.34.0", ["sigs.k8s.io/cri-tools/cmd/crictl"])
    bins["crictl"]  -> /root/.cache/gpulet-peers/crictl-v1.34.0/bin/crictl

A failed build raises GoBuildError with go's own output: without the registries the tests fail,
they never skip.
"""
import fcntl
import json
import re
import os
import re
import shutil
import subprocess
import sys
import tempfile

CACHE = os.environ.get("GPULET_PEERS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "gpulet-peers")


class GoBuildError(RuntimeError):
    pass


# The modules built here need Go 1.24 or newer; Debian 12's golang-go (/usr/bin/go) is 1.19, so a
# newer toolchain installed in /usr/local/go wins over whatever comes first on PATH.
GO_MIN = (1, 24)


def _go_version(go):
    try:
        out = subprocess.run([go, "env", "GOVERSION"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, timeout=60).stdout.strip()
    except OSError:
        return None
    m = re.match(r"go(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _go():
    seen = []
    for go in (os.environ.get("GPULET_GO"), "/usr/local/go/bin/go", shutil.which("go")):
        if not go or not os.access(go, os.X_OK):
            continue
        v = _go_version(go)
        if v and v >= GO_MIN:
            return go
        seen.append("%s (%s)" % (go, "go%d.%d" % v if v else "unusable"))
    raise GoBuildError("no Go toolchain >= go%d.%d (found: %s); the tests build their Go peers with it: install "
                       "one in /usr/local/go or name it in GPULET_GO" % (GO_MIN + (", ".join(seen) or "none",)))


def _run(cmd, cwd, env, timeout):
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        raise GoBuildError("%s failed (exit %d) in %s:\n%s" % (" ".join(cmd), p.returncode, cwd, p.stdout[-6000:]))
    return p.stdout


def _gomod(name, module, version, replace):
    lines = ["module gpulet.test/peers/%s" % name, "", "go 1.24", "", "require %s %s" % (module, version)]
    for old, new in replace:
        lines.append("replace %s => %s" % (old, new))
    return "\n".join(lines) + "\n"


def binary_name(package):
    """The file go build writes for a package path: its last element, or the one before a major
    version suffix (go.etcd.io/etcd/server/v3 -> server)."""
    parts = package.rstrip("/").split("/")
    if len(parts) > 1 and re.fullmatch(r"v[0-9]+", parts[-1]):
        return parts[-2]
    return parts[-1]


def build(name, module, version, packages, replace=(), tags=(), cgo=False, ldflags="", timeout=3600):
    """Build each package path of module@version into CACHE/NAME-VERSION/bin; return {binary: path}.

    replace: (old, new) pairs for the throwaway go.mod, e.g. ("k8s.io/api", "k8s.io/api v0.34.1") for
    a module whose own go.mod points its staging modules at local dirs (replace lines of a dependency
    are ignored by Go). tags, cgo and ldflags are passed to go build.
    """
    inputs = {"module": module, "version": version, "packages": sorted(packages),
              "replace": [list(r) for r in replace], "tags": sorted(tags), "cgo": bool(cgo),
              "ldflags": ldflags}
    top = os.path.join(CACHE, "%s-%s" % (name, version))
    bindir = os.path.join(top, "bin")
    stamp = os.path.join(top, "built.json")
    bins = {b: os.path.join(bindir, b) for b in map(binary_name, packages)}
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(stamp) as f:
                if json.load(f) == inputs and all(os.access(b, os.X_OK) for b in bins.values()):
                    return bins
        except (OSError, ValueError):
            pass
        work = tempfile.mkdtemp(prefix="mod.", dir=top)
        try:
            with open(os.path.join(work, "go.mod"), "w") as f:
                f.write(_gomod(name, module, version, replace))
            env = dict(os.environ, CGO_ENABLED="1" if cgo else "0", GOFLAGS="-mod=mod -buildvcs=false",
                       GOTOOLCHAIN="local")
            _run([_go(), "mod", "download", module], work, env, timeout)
            tmpbin = os.path.join(work, "bin")
            os.makedirs(tmpbin)
            cmd = [_go(), "build", "-trimpath", "-o", tmpbin + "/"]
            if tags:
                cmd += ["-tags", ",".join(tags)]
            if ldflags:
                cmd += ["-ldflags", ldflags]
            _run(cmd + list(packages), work, env, timeout)
            os.makedirs(bindir, exist_ok=True)
            for b, path in bins.items():
                os.replace(os.path.join(tmpbin, b), path)
            with open(stamp + ".tmp", "w") as f:
                json.dump(inputs, f)
            os.replace(stamp + ".tmp", stamp)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return bins


def main(argv):
    if len(argv) < 5 or argv[1] != "build":
        sys.stderr.write(__doc__)
        return 2
    for b, path in sorted(build(argv[2], argv[3], argv[4], argv[5:]).items()):
        print("%s\t%s" % (b, path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
