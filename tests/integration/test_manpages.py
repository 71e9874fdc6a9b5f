#!/usr/bin/python3
"""`gpulet manpages DIR` writes a page for gpulet and for every verb, and real groff and man-db read them.

The verbs come from the verb tables in the source (as cmd_help reads them), each verb's flags from its
own --help rows. Every page must pass groff's warnings (-ww), man-db's lexgrog must read its NAME line
(what whatis and apropos index), `man -l` must render every flag of the verb's --help and its synopsis,
and after `cmake --install --component doc` with a DESTDIR, `man -M` finds the pages by name. The pages
the build wrote (build/share/man/man1) are the ones the verb writes now.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from test_cdi_testlib import BUILD, GPULET, check, finish
from test_help import listed, run, verbs

HIDDEN = {"cdi-hook noop"}  # a row without a summary: not listed, no page (verb_cdihook.c)
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"}


def page(path):
    return "gpulet" + "".join("-" + w for w in path.split()) + ".1"


def render(args):
    r = subprocess.run(["man", *args], capture_output=True, text=True, env=ENV, timeout=60)
    # groff's UTF-8 output may draw \- as a minus sign and break words with a hyphen
    return r, r.stdout.replace("\u2212", "-").replace("\u2010", "-")


def check_page(d, path):
    f = os.path.join(d, page(path))
    if not os.path.isfile(f):
        check(False, f"no page {page(path)} for gpulet {path}")
        return
    r = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", f], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and not r.stderr, f"groff -ww {page(path)}: {r.stderr}")
    r = subprocess.run(["lexgrog", f], capture_output=True, text=True, timeout=60)
    name = page(path)[:-2]
    check(r.returncode == 0 and f'"{name} - ' in r.stdout, f"lexgrog reads the NAME of {name}: {r.stdout} {r.stderr}")
    r, text = render(["-l", f])
    check(r.returncode == 0, f"man -l {page(path)}: exit {r.returncode} {r.stderr}")
    check(re.search(r"^SYNOPSIS\n\s+gpulet " + re.escape(path) + r"\b", text, re.M),
          f"{page(path)}: SYNOPSIS names gpulet {path}")
    longs, shorts = listed(run([*path.split(), "--help"]).stdout)
    for l in sorted(longs):
        check(re.search(rf"(^|[\s,])--{re.escape(l)}\b", text, re.M), f"{page(path)}: --{l} of --help is in the page")
    for s in sorted(shorts):
        check(re.search(rf"^\s+-{s}, --", text, re.M), f"{page(path)}: -{s} of --help is in the page")


def main():
    for tool in ("groff", "man", "lexgrog"):
        check(shutil.which(tool), f"{tool} is installed (.ci/packages.txt: groff-base, man-db)")
    paths = [" ".join(v) for v in verbs() if " ".join(v) not in HIDDEN] + ["cdi", "cdi-hook"]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "man1")
        os.mkdir(out)
        r = subprocess.run([GPULET, "manpages", out], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0 and not r.stderr, f"gpulet manpages: exit {r.returncode} {r.stderr}")
        r = subprocess.run([GPULET, "manpages"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "DIR" in r.stderr, f"gpulet manpages without DIR: exit {r.returncode} {r.stderr}")
        written = set(os.listdir(out))
        check("gpulet.1" in written, "gpulet.1 is written")
        for path in paths:
            check_page(out, path)
        # gpulet.1 lists each command and names each page
        r, text = render(["-l", os.path.join(out, "gpulet.1")])
        for path in paths:
            if " " not in path:
                check(re.search(rf"^\s+{re.escape(path)}\b", text, re.M), f"gpulet.1 lists the command {path}")
        for name in written - {"gpulet.1"}:
            check(name[:-2] + "(1)" in text, f"gpulet.1's SEE ALSO names {name[:-2]}(1)")
        check("manpages" not in " ".join(written), "the hidden manpages verb has no page")
        built = os.path.join(BUILD, "share", "man", "man1")
        check(set(os.listdir(built)) == written, f"the build's pages are the verb's: {sorted(os.listdir(built))}")
        for name in written & set(os.listdir(built)):
            check(open(os.path.join(built, name)).read() == open(os.path.join(out, name)).read(),
                  f"build/share/man/man1/{name} is what gpulet manpages writes now")
        # installed: man finds a page by name under the prefix
        dest = os.path.join(tmp, "dest")
        r = subprocess.run(["cmake", "--install", BUILD, "--prefix", "/usr", "--component", "doc"], capture_output=True,
                           text=True, env={**os.environ, "DESTDIR": dest}, timeout=120)
        check(r.returncode == 0, f"cmake --install --component doc: {r.stderr}")
        mandir = os.path.join(dest, "usr", "share", "man")
        check(set(os.listdir(os.path.join(mandir, "man1"))) == written, "make install installs every page")
        r, text = render(["-M", mandir, "gpulet-cdi-generate"])
        check(r.returncode == 0 and "gpulet-cdi-generate - write the CDI spec" in text,
              f"man -M PREFIX/share/man gpulet-cdi-generate: {r.stderr} {text[:300]}")
    print(f"{len(written)} pages, {len(paths)} verbs checked with groff -ww, lexgrog and man -l")
    return finish("every verb has a man page that man and groff read, with every flag of its --help")


if __name__ == "__main__":
    sys.exit(main())
