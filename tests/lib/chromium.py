# SPDX-License-Identifier: Apache-2.0
"""Pages and pictures judged by a real browser: Debian's chromium, headless, takes a screenshot (PNG) of
a file, and read_png() gives its pixels back. Chromium starts with a fresh profile in a temp dir, no
sandbox (tests run as root), no GPU, nothing fetched in the background. A missing chromium fails the
test: it never skips."""
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--force-device-scale-factor=1"]


def screenshot(path, png, width=1000, height=800, timeout=90):
    """Render file PATH at WIDTHxHEIGHT into PNG; raises with chromium's output when it fails."""
    if not os.access(CHROMIUM, os.X_OK):
        raise AssertionError("chromium is not installed (apt-get install chromium; .ci/packages.txt lists it)")
    profile = tempfile.mkdtemp(prefix="gpulet-chromium-")
    try:
        r = subprocess.run([CHROMIUM, *FLAGS, "--user-data-dir=" + profile, "--window-size=%d,%d" % (width, height),
                            "--screenshot=" + os.path.abspath(png), "file://" + os.path.abspath(path)],
                           capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if r.returncode != 0 or not os.path.exists(png):
        raise AssertionError("chromium could not render %s (exit %d):\n%s" % (path, r.returncode, r.stderr[-3000:]))


def read_png(path):
    """(width, height, rows): rows[y][x] is (r, g, b) of an 8-bit RGB or RGBA, non-interlaced PNG (what
    chromium writes)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG" % path)
    pos, idat, head = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, ctype, _, _, interlace = head
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise AssertionError("%s: PNG depth %d colour type %d interlace %d not read here" % (path, depth, ctype,
                                                                                              interlace))
    bpp = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def hex_rgb(s):
    return tuple(int(s[i:i + 2], 16) for i in (1, 3, 5))


def near(rgb, want, tol=10):
    return all(abs(a - b) <= tol for a, b in zip(rgb, want))
