#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes chain.svg beside it: the chain a GPU pod depends on, driver -> toolkit -> runtime -> CDI ->
device plugin -> kubelet -> pod, what each link is, and the gpulet command for it. The README shows the
SVG; edit this file and run it (/usr/bin/python3 docs/pictures/chain.py) instead of editing the SVG:
test doctor_html checks that the two agree and that Chromium draws it."""
import os
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 980, 250
BOX_W, BOX_H, GAP, TOP, LEFT = 124, 84, 18, 52, 3
FILL, LINE, INK = "#e3f2fd", "#1565c0", "#0d2a4a"
LINKS = [  # name, what it is (two lines), the gpulet command for it
    ("driver", ("kernel module,", "libnvidia-ml.so"), "gpulet devices"),
    ("toolkit", ("nvidia-ctk,", "the CDI hook"), "gpulet cdi-hook"),
    ("runtime", ("containerd, CRI-O", "with CDI on"), "gpulet doctor"),
    ("CDI", ("/etc/cdi,", "/var/run/cdi"), "gpulet cdi"),
    ("device plugin", ("Allocate answers", "CDI device names"), "gpulet plugin"),
    ("kubelet", ("Allocatable:", "nvidia.com/gpu"), "gpulet exporter"),
    ("pod", ("the container", "sees its GPU"), "gpulet probe"),
]


def boxes():
    """(name, x, y, fill) of each link's box, left to right."""
    return [(name, LEFT + i * (BOX_W + GAP), TOP, FILL) for i, (name, _, _) in enumerate(LINKS)]


def svg():
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">' % (WIDTH, HEIGHT, WIDTH, HEIGHT),
           '<title>The chain a GPU pod depends on, and the gpulet command for each link</title>',
           '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto">'
           '<path d="M0 0 L8 4 L0 8 z" fill="%s"/></marker></defs>' % LINE,
           '<rect width="%d" height="%d" fill="#ffffff"/>' % (WIDTH, HEIGHT),
           '<text x="%d" y="30" font-size="18" font-weight="bold" fill="%s">A GPU reaches a pod through '
           'seven links; gpulet runs or checks each one</text>' % (LEFT, INK)]
    for i, (name, x, y, fill) in enumerate(boxes()):
        _, what, cmd = LINKS[i]
        cx = x + BOX_W // 2
        out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="%s" stroke="%s" stroke-width="2"/>'
                   % (x, y, BOX_W, BOX_H, fill, LINE))
        out.append('<text x="%d" y="%d" text-anchor="middle" font-size="15" font-weight="bold" fill="%s">%s</text>'
                   % (cx, y + 28, INK, escape(name)))
        for k, line in enumerate(what):
            out.append('<text x="%d" y="%d" text-anchor="middle" font-size="11" fill="%s">%s</text>'
                       % (cx, y + 50 + 16 * k, INK, escape(line)))
        out.append('<text x="%d" y="%d" text-anchor="middle" font-size="12" font-family="DejaVu Sans Mono, '
                   'monospace" fill="%s">%s</text>' % (cx, y + BOX_H + 24, INK, escape(cmd)))
        if i + 1 < len(LINKS):
            out.append('<path d="M%d %d H%d" stroke="%s" stroke-width="2" marker-end="url(#a)"/>'
                       % (x + BOX_W, y + BOX_H // 2, x + BOX_W + GAP - 2, LINE))
    last = boxes()[-1][1] + BOX_W
    y = TOP + BOX_H + 44
    out.append('<path d="M%d %d V%d H%d V%d" fill="none" stroke="%s" stroke-width="2"/>'
               % (LEFT + 4, y - 6, y, last - 4, y - 6, LINE))
    out.append('<text x="%d" y="%d" text-anchor="middle" font-size="13" fill="%s"><tspan font-family="DejaVu Sans '
               'Mono, monospace">gpulet doctor</tspan> walks them in this order and names the first broken link, '
               'its evidence and the fix</text>' % ((LEFT + last) // 2, y + 22, INK))
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "chain.svg"), "w") as f:
        f.write(svg())
