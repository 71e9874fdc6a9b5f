#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The doctor's verdict as a picture, drawn by a real browser (Debian's chromium, headless):

  * `gpulet doctor --format html` on scenario nodes (healthy, CDI off in containerd, driver not loaded)
    is screenshot; in the PNG each link's box has the colour of the state the test expects for that
    node (green ok, amber warn, red fail, grey not checked): the red one where the scenario breaks, the
    links behind a failed driver grey;
  * the same page served at / by `gpulet doctor --serve-metrics` (text/html, the node's name) renders
    with the same colours;
  * the page is self-contained: no script, nothing fetched (no URL but the SVG namespace);
  * the README's chain diagram (docs/pictures/chain.svg) is what docs/pictures/chain.py writes, and
    renders with its boxes where the generator put them.
Screenshots are kept in $GPULET_BUILD/pictures for a look."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "scenarios"))
import chromium  # noqa: E402
import run as scen  # noqa: E402  (the scenario nodes)

OUT = os.path.join(os.environ.get("GPULET_BUILD") or os.path.join(scen.SRC, "build"), "pictures")
# the colours a reader is promised (the README, docs): the test's own table, not the page's
COLOURS = {"ok": "#2e7d32", "warn": "#f9a825", "fail": "#c62828", "unchecked": "#9e9e9e"}
LINKS = ["driver", "devnode", "nvml", "gpu", "toolkit", "runtime", "cdi", "kubelet", "plugin", "mig", "alloc",
         "versions"]
# scenario -> {link: state} the picture must show (links not named: anything)
NODES = {
    "healthy-dgx-a100": {link: "ok" for link in LINKS if link not in ("toolkit",)},
    "runtime-cdi-disabled": {"driver": "ok", "nvml": "ok", "runtime": "fail", "cdi": "warn", "plugin": "ok"},
    "driver-not-loaded": {"driver": "fail", "devnode": "unchecked", "nvml": "unchecked", "mig": "unchecked"},
}
RECT = re.compile(r'<rect class="link" data-link="(\w+)" data-state="(\w+)" x="(\d+)" y="(\d+)" '
                  r'width="(\d+)" height="(\d+)"')
failures = []


def check(ok, what):
    print("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failures.append(what)


def boxes(page):
    return {m.group(1): (m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5)), int(m.group(6)))
            for m in RECT.finditer(page)}


def self_contained(name, page):
    urls = set(re.findall(r"https?://[^\s\"'<>]+", page)) - {"http://www.w3.org/2000/svg"}
    check("<script" not in page.lower() and not urls and "default-src 'none'" in page,
          "%s: no script, nothing to fetch (%s)" % (name, sorted(urls)))


def judge(name, page, want, tmp):
    """Screenshot PAGE and compare each link's box with the state WANT says (and the page claims)."""
    html = os.path.join(tmp, name + ".html")
    with open(html, "w") as f:
        f.write(page)
    png = os.path.join(OUT, name + ".png")
    chromium.screenshot(html, png, 1000, 700)
    width, height, px = chromium.read_png(png)
    got = boxes(page)
    check(sorted(got) == sorted(LINKS), "%s: a box per link (%s)" % (name, sorted(got)))
    for link, (state, x, y, w, h) in sorted(got.items()):
        if link in want:
            check(state == want[link], "%s: %s is %s (want %s)" % (name, link, state, want[link]))
        # inside the box, clear of its border and its words: the fill Chromium drew
        at = [px[y + 8][x + 8], px[y + h - 8][x + w - 8]] if y + h < height and x + w < width else []
        col = chromium.hex_rgb(COLOURS[state])
        check(at and all(chromium.near(p, col) for p in at), "%s: %s drawn %s, %s wants %s" % (name, link, at, state,
                                                                                             COLOURS[state]))
    # the page's background is white and the words are drawn: not a blank or a broken render
    check(px[2][width - 3] == (255, 255, 255) and any(p[0] < 80 for p in px[20][:400]),
          "%s: white page with the heading drawn" % name)


def served_page(root, nvml, tmp):
    """GET / of --serve-metrics once the first walk ended: (content type, page)."""
    log = open(os.path.join(tmp, "serve.log"), "w+")
    p = subprocess.Popen([scen.GPULET, "doctor", "--root", root, "--nvml-library", scen.FAKE, "--serve-metrics",
                          "127.0.0.1:0", "--node-name", "gpu-node-7", "--interval", "3600"],
                         env=dict(os.environ, FAKE_NVML_FIXTURE=nvml), stdout=subprocess.DEVNULL, stderr=log)
    try:
        for _ in range(300):
            log.seek(0)
            m = re.search(r'msg="Serving doctor metrics" .*port=(\d+)', log.read())
            if m:
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%s/" % m.group(1), timeout=5) as r:
                        return r.headers.get("Content-Type"), r.read().decode()
                except urllib.error.HTTPError as e:
                    if e.code != 503:  # 503: the first walk is running
                        raise
            time.sleep(0.1)
        raise AssertionError("no page served: %s" % log.read()[-2000:])
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=15)


def chain_picture(tmp):
    """docs/pictures/chain.svg: the generator's output, drawn with its boxes where it says."""
    sys.path.insert(0, os.path.join(scen.SRC, "docs", "pictures"))
    import chain  # noqa: E402
    svg = os.path.join(scen.SRC, "docs", "pictures", "chain.svg")
    with open(svg) as f:
        committed = f.read()
    check(committed == chain.svg(), "docs/pictures/chain.svg is what chain.py writes (run it after a change)")
    png = os.path.join(OUT, "chain.png")
    chromium.screenshot(svg, png, chain.WIDTH, chain.HEIGHT)
    _, _, px = chromium.read_png(png)
    for name, x, y, fill in chain.boxes():
        check(chromium.near(px[y + 6][x + 6], chromium.hex_rgb(fill)), "chain.svg: the %s box drawn %s at %d,%d"
              % (name, px[y + 6][x + 6], x, y))


def main():
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gpulet-doctor-html-")
    try:
        for name, want in NODES.items():
            d = os.path.join(tmp, name)
            os.makedirs(d)
            root, nvml, _ = scen.build_node(name, d)
            r = subprocess.run([scen.GPULET, "doctor", "--root", root, "--nvml-library", scen.FAKE, "--format", "html"],
                               env=dict(os.environ, FAKE_NVML_FIXTURE=nvml), capture_output=True, text=True)
            fails = any(v == "fail" for v in want.values())
            check(r.returncode == (1 if fails else 0) and r.stdout.startswith("<!DOCTYPE html>"),
                  "%s: --format html exit %d %s" % (name, r.returncode, r.stderr.strip()))
            self_contained(name, r.stdout)
            judge(name, r.stdout, want, tmp)
            if name == "runtime-cdi-disabled":
                check("<h2>Root cause: inject.cdi-disabled (runtime link)</h2>" in r.stdout, "the root cause named")
                ctype, page = served_page(root, nvml, d)
                check(ctype == "text/html; charset=utf-8" and "gpulet doctor: gpu-node-7<" in page,
                      "served at /: %s" % ctype)
                judge(name + "-served", page, want, tmp)
        chain_picture(tmp)
        r = subprocess.run([scen.GPULET, "doctor", "--format", "html", "--json"], capture_output=True, text=True)
        check(r.returncode == 2 and "give one format" in r.stderr, "--format html --json: usage error")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failures; screenshots in %s" % (len(failures), OUT))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
