#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fetch NVIDIA's real 535 user-space driver from Debian 12 non-free and assemble driver roots.

    realdriver.py setup CACHE_DIR      fetch (once; cached) + assemble; prints size and time
    realdriver.py env CACHE_DIR        print the KEY=VALUE facts tests read (after setup)

Nothing is installed and the machine's apt sources are not changed: a private deb822 sources file
(Components: main non-free, same archive URI, suite and keyring as the system's debian.sources) lives in
CACHE_DIR/apt, and apt-get reads only it (Dir::Etc::sourcelist=/dev/null, Dir::Etc::sourceparts).
The packages are unpacked with dpkg-deb -x into two roots (docs/reference/real-driver.md):

    CACHE_DIR/root-debian  Debian's layout as an installed system has it: libraries in
                           usr/lib/x86_64-linux-gnu/nvidia/current, reached from
                           usr/lib/x86_64-linux-gnu through /etc/alternatives (the links
                           nvidia-alternative's postinst asks update-alternatives for), ld.so.cache.
    CACHE_DIR/root-plain   the plain layout of NVIDIA's own installer: every library and its SONAME
                           link in usr/lib/x86_64-linux-gnu, binaries in usr/bin, ld.so.cache.

Any failure exits non-zero with the reason: the tests that need these roots must fail, not skip.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SUITE = "bookworm"
VERSION = "535.261.03"
# Pinned: docs/reference/real-driver.md describes exactly these. When Debian moves on (a point release
# replaces them, and the archive keeps only the newest), the pinned download fails; the archive's current
# 535 packages are fetched instead, with a warning, and REALDRIVER_VERSION says which version the roots
# hold (the goldens write the driver version as {driverVersion}). Then raise the pins here.
DEB_VERSION = VERSION + "-1"
DEV_VERSION = "11.8.86~11.8.0-5~deb12u1"  # libnvidia-ml-dev comes from nvidia-cuda-toolkit
# Packages not built from the driver carry their own versions (main: NVIDIA's open EGL platform library).
OWN_VERSIONS = {"libnvidia-ml-dev": DEV_VERSION, "libnvidia-egl-wayland1": "1:1.1.10-1"}
ARCH_DIR = "usr/lib/x86_64-linux-gnu"
# What the tests use, nothing more (docs/reference/real-driver.md lists each package's files).
PACKAGES = [
    "libnvidia-ml1",  # libnvidia-ml.so: the NVML loader's peer
    "libnvidia-ml-dev",  # nvml.h (CUDA 11.8): the ABI conformance test
    "nvidia-alternative",  # postinst: the links an installed Debian system has
    "libcuda1",  # the rest: what `cdi generate` should find (nvidia-ctk's lists)
    "libcudadebugger1",
    "libnvidia-ptxjitcompiler1",
    "libnvidia-nvvm4",
    "libnvidia-cfg1",
    "libnvidia-allocator1",
    "libnvidia-pkcs11-openssl3",
    "nvidia-opencl-icd",
    "nvidia-opencl-common",
    "libnvidia-encode1",
    "libnvcuvid1",
    "libnvidia-opticalflow1",
    "nvidia-vdpau-driver",
    "libnvidia-fbc1",
    "libegl-nvidia0",
    "libglx-nvidia0",
    "libgles-nvidia2",
    "nvidia-egl-common",
    "nvidia-vulkan-common",
    "nvidia-smi",
    "nvidia-cuda-mps",
    "libnvidia-egl-wayland1",  # (main) libnvidia-egl-wayland.so.1.1.10 + its EGL external platform file
]
SYSTEM_SOURCES = "/etc/apt/sources.list.d/debian.sources"


def pinned(pkg):
    return f"{pkg}={OWN_VERSIONS.get(pkg, DEB_VERSION)}"


def die(msg):
    sys.exit(f"realdriver: {msg}")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        die(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def system_archive():
    """URI and keyring of the system's main Debian archive: the deb822 stanza of debian.sources,
    else the first `deb` line of the one-line sources.list format for the suite."""
    try:
        text = open(SYSTEM_SOURCES).read()
    except OSError as e:
        try:
            for line in open("/etc/apt/sources.list"):
                m = re.match(r"deb\s+(?:\[(.*?)\]\s+)?(\S+)\s+(\S+)\s", line)
                if m and m.group(3) == SUITE:
                    keyring = re.search(r"signed-by=(\S+)", m.group(1) or "")
                    return m.group(2), keyring.group(1) if keyring else ""
        except OSError:
            pass
        die(f"cannot read {SYSTEM_SOURCES} ({e}) and /etc/apt/sources.list has no {SUITE} line")
    for stanza in re.split(r"\n\s*\n", text):
        fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
        if SUITE in fields.get("Suites", "").split():
            return fields["URIs"].split()[0], fields.get("Signed-By", "").strip()
    die(f"no stanza with suite {SUITE} in {SYSTEM_SOURCES}")


def apt_options(apt):
    return ["-o", "Dir::Etc::sourcelist=/dev/null", "-o", f"Dir::Etc::sourceparts={apt}/sources",
            "-o", f"Dir::State::Lists={apt}/lists", "-o", f"Dir::Cache={apt}/cache",
            "-o", "Dir::State::status=/dev/null", "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=root" if os.geteuid() == 0 else "Debug::NoDropPrivs=1"]


def fetch(cache):
    """Download PACKAGES into cache/debs unless a previous run left all of them there."""
    debs = os.path.join(cache, "debs")
    stamp = os.path.join(debs, "PACKAGES")
    want = "\n".join(map(pinned, PACKAGES)) + "\n"
    if os.path.exists(stamp) and open(stamp).read() == want and os.path.exists(os.path.join(debs, "VERSION")):
        return False
    uri, keyring = system_archive()
    apt = os.path.join(cache, "apt")
    shutil.rmtree(apt, ignore_errors=True)
    for d in ("sources", "lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(apt, d))
    with open(os.path.join(apt, "sources", "nonfree.sources"), "w") as f:
        f.write(f"Types: deb\nURIs: {uri}\nSuites: {SUITE}\nComponents: main non-free\n")
        if keyring:
            f.write(f"Signed-By: {keyring}\n")
    opts = apt_options(apt)
    t0 = time.monotonic()
    run(["apt-get", *opts, "update"])
    tmp = tempfile.mkdtemp(dir=cache)
    p = subprocess.run(["apt-get", *opts, "download", *map(pinned, PACKAGES)], cwd=tmp, capture_output=True,
                       text=True)
    if p.returncode != 0:
        print(f"realdriver: WARNING: the pinned {DEB_VERSION} packages are not in the archive any more "
              f"({p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}); fetching the "
              "archive's current ones: raise the pins in tests/lib/realdriver.py")
        run(["apt-get", *opts, "download", *PACKAGES], cwd=tmp)
    cuda = [n for n in os.listdir(tmp) if n.startswith("libcuda1_")]
    if len(cuda) != 1:
        die(f"no single libcuda1 package among the downloads: {sorted(os.listdir(tmp))}")
    with open(os.path.join(tmp, "VERSION"), "w") as f:
        f.write(cuda[0].split("_")[1].split("-")[0] + "\n")
    shutil.rmtree(debs, ignore_errors=True)
    shutil.rmtree(os.path.join(cache, "files"), ignore_errors=True)
    os.rename(tmp, debs)
    size = sum(os.path.getsize(os.path.join(debs, n)) for n in os.listdir(debs) if n.endswith(".deb"))
    print(f"realdriver: fetched {len(PACKAGES)} packages, {size / 1e6:.1f} MB, in {time.monotonic() - t0:.1f} s")
    with open(stamp, "w") as f:
        f.write(want)
    return True


def extract_all(cache, root):
    """Every package unpacked once into cache/files (dpkg-deb -x), then linked into root."""
    files = os.path.join(cache, "files")
    if not os.path.isdir(files):
        tmp = files + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        for name in sorted(os.listdir(os.path.join(cache, "debs"))):
            if name.endswith(".deb"):
                run(["dpkg-deb", "-x", os.path.join(cache, "debs", name), tmp])
        os.rename(tmp, files)
    run(["cp", "-al", files + "/.", root])  # hard links: the roots only add and rename entries


def alternative_links(cache):
    """(link, name, target) of nvidia-alternative's postinst, for this architecture only."""
    deb = [n for n in os.listdir(os.path.join(cache, "debs")) if n.startswith("nvidia-alternative_")]
    if not deb:
        die("nvidia-alternative was not downloaded")
    with tempfile.TemporaryDirectory() as ctl:
        run(["dpkg-deb", "-e", os.path.join(cache, "debs", deb[0]), ctl])
        script = open(os.path.join(ctl, "postinst")).read()
    links = []
    for m in re.finditer(r"\$\(add_slave (\S+) (\S+) (\S+)\)", script):
        links.append(m.groups())
    # add_multiarch_slave TARGET_DIR SUB FILE SOURCE_DIR SOURCE_SUB: one slave per triplet.
    for m in re.finditer(r'\$\(add_multiarch_slave (\S+) ("[^"]*"|\S+) (\S+) (\S+) (\S+)\)', script):
        tdir, sub, file, sdir, ssub = m.groups()
        sub = sub.strip('"')
        links.append((f"{tdir}/x86_64-linux-gnu/{sub}{file}", f"{file}-x86_64-linux-gnu",
                      f"{sdir}/x86_64-linux-gnu/{ssub}{file}"))
    if not links:
        die("no update-alternatives slaves found in nvidia-alternative's postinst")
    return links


def under(root, path):
    return os.path.join(root, path.lstrip("/"))


def write_ldconfig(root):
    """ld.so.conf as Debian ships it (libc-bin, x86_64-linux-gnu.conf), then `ldconfig -r`."""
    os.makedirs(under(root, "/etc/ld.so.conf.d"), exist_ok=True)
    with open(under(root, "/etc/ld.so.conf"), "w") as f:
        f.write("include /etc/ld.so.conf.d/*.conf\n")
    with open(under(root, "/etc/ld.so.conf.d/x86_64-linux-gnu.conf"), "w") as f:
        f.write("/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n")
    run(["ldconfig", "-r", root])


def assemble_debian(cache, root):
    extract_all(cache, root)
    # update-alternatives: LINK -> /etc/alternatives/nvidia--NAME -> TARGET, when TARGET is a file
    # and LINK's directory exists (the postinst's add_slave test), plus the master link.
    slaves = [("/usr/lib/nvidia/nvidia", "nvidia", "/usr/lib/nvidia/current")]
    for link, name, target in alternative_links(cache):
        if os.path.isfile(under(root, target)) and os.path.isdir(os.path.dirname(under(root, link))):
            slaves.append((link, "nvidia--" + name, target))
    os.makedirs(under(root, "/etc/alternatives"), exist_ok=True)
    for link, name, target in slaves:
        alt = "/etc/alternatives/" + name
        os.symlink(target, under(root, alt))
        if os.path.lexists(under(root, link)):
            os.unlink(under(root, link))
        os.symlink(alt, under(root, link))
    write_ldconfig(root)


def assemble_plain(cache, root):
    """What NVIDIA's .run installer leaves: one library dir, binaries in /usr/bin."""
    extract_all(cache, root)
    cur = under(root, f"/{ARCH_DIR}/nvidia/current")
    for name in os.listdir(cur):
        src = os.path.join(cur, name)
        if os.path.isfile(src) or os.path.islink(src):
            os.rename(src, under(root, f"/{ARCH_DIR}/{name}"))
    shutil.rmtree(under(root, f"/{ARCH_DIR}/nvidia"))
    os.makedirs(under(root, "/usr/bin"), exist_ok=True)
    for name in os.listdir(under(root, "/usr/lib/nvidia/current")):
        src = under(root, f"/usr/lib/nvidia/current/{name}")
        if os.access(src, os.X_OK) and os.path.isfile(src):
            os.rename(src, under(root, f"/usr/bin/{name}"))
    shutil.rmtree(under(root, "/usr/lib/nvidia"))
    write_ldconfig(root)


def setup(cache):
    os.makedirs(cache, exist_ok=True)
    t0 = time.monotonic()
    fresh = fetch(cache)
    for name, fn in (("root-debian", assemble_debian), ("root-plain", assemble_plain)):
        root = os.path.join(cache, name)
        shutil.rmtree(root, ignore_errors=True)
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        fn(cache, tmp)
        os.rename(tmp, root)
    for name in ("root-debian", "root-plain"):
        lib = os.path.join(cache, name, ARCH_DIR, "libnvidia-ml.so.1")
        if not os.path.lexists(lib):
            die(f"{lib} missing after assembly")
    print(f"realdriver: roots ready in {time.monotonic() - t0:.1f} s ({'fetched' if fresh else 'cached'})")


def env(cache):
    deb = os.path.join(cache, "root-debian")
    with open(os.path.join(cache, "debs", "VERSION")) as f:
        print(f"REALDRIVER_VERSION={f.read().strip()}")
    print(f"REALDRIVER_ROOT_DEBIAN={deb}")
    print(f"REALDRIVER_ROOT_PLAIN={os.path.join(cache, 'root-plain')}")
    print(f"REALDRIVER_NVML={deb}/{ARCH_DIR}/nvidia/current/libnvidia-ml.so.1")
    print(f"REALDRIVER_NVML_H={deb}/usr/include/nvml.h")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("setup", "env"):
        die("usage: realdriver.py setup|env CACHE_DIR")
    {"setup": setup, "env": env}[sys.argv[1]](os.path.abspath(sys.argv[2]))
