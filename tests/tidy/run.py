#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""clang-tidy over src/ at zero findings (`make tidy`; the checks and why some are off: .clang-tidy).

Usage: run.py [-j N] [BUILD_DIR] [FILE...]

Reads BUILD_DIR/compile_commands.json (cmake writes it), keeps one entry per file under src/ (the
probe and the serving modules compile some files twice with the same flags), and runs clang-tidy on
each with -UNDEBUG so that the analyzer sees the assert()s the release build compiles out. Prints
every finding with its notes and exits 1 if there is any.

One class of report is dropped here, because it is false by construction: clang's static analyzer
(LLVM 14) does not model __attribute__((cleanup)), so a buffer held by a _cleanup_free_ /
_cleanup_(x_freep) local looks leaked on every return. A "Potential leak of memory pointed to by
'NAME'" is dropped only when, in the function of the report, NAME (or the struct it is a field of)
is declared with a _cleanup_ attribute or is assigned from such a local (host = h; v.file = p); a
leak of any other variable is still reported.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

# Findings in files other work is changing at the same time, left for after that work lands.
# Each row: (path under the repository, check, text the message contains, why). Remove each row once
# that work has landed; keep this list empty.
KNOWN = []

HEAD = re.compile(r"^(/[^:]+):(\d+):(\d+): (warning|error): (.*) \[([\w.,-]+)\]$")
LEAK = re.compile(r"^Potential leak of memory pointed to by '([\w.>-]+)'$")


def compile_db(build):
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    seen, out = set(), []
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if not path.startswith(os.path.join(SRC, "src") + "/") or path in seen:
            continue
        seen.add(path)
        out.append(dict(e, file=path))
    tdir = os.path.join(build, "tidy")
    os.makedirs(tdir, exist_ok=True)
    with open(os.path.join(tdir, "compile_commands.json"), "w") as f:
        json.dump(out, f, indent=1)
    return tdir, [e["file"] for e in out]


def run_one(tdir, path):
    p = subprocess.run(["clang-tidy", "-p", tdir, "--quiet", "--use-color=false", "--extra-arg=-UNDEBUG",
                        "--extra-arg=-Wno-unknown-warning-option", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        # a compiler error (findings alone exit 0: WarningsAsErrors is empty)
        return [("%s: clang-tidy failed (exit %d)" % (path, p.returncode), p.stdout + p.stderr, None)]
    findings, cur = [], None
    for line in p.stdout.splitlines():
        m = HEAD.match(line)
        if m:
            cur = [line, [], m]
            findings.append(cur)
        elif cur is not None:
            cur[1].append(line)
    return [(f[0], "\n".join(f[1]), f[2]) for f in findings]


_lines = {}


def source_lines(path):
    if path not in _lines:
        with open(path, errors="replace") as f:
            _lines[path] = f.read().split("\n")
    return _lines[path]


def function_body(path, line):
    """The lines of the function enclosing LINE (1-based): from its '{' to its '}' in column 0."""
    lines = source_lines(path)
    lo = hi = min(line, len(lines)) - 1
    while lo > 0 and not lines[lo].startswith("{"):
        lo -= 1
    while hi < len(lines) - 1 and not lines[hi].startswith("}"):
        hi += 1
    return " ".join(l.strip() for l in lines[lo:hi + 1])


def cleanup_declared(path, line, name):
    """NAME is held by a _cleanup_ local of the function enclosing LINE: declared with the attribute, or
    assigned from such a local (an alias: host = h; v.file = p; char *s = line,; name = base_name(target);)."""
    body = function_body(path, line)
    held = set()
    for stmt in re.findall(r"_cleanup_\w*(?:\([^)]*\))?\s[^;]*;", body):
        held.update(re.findall(r"[\s*,(](\w+)\s*(?:=|,|;|\[|\))", stmt))
    if name in held or re.split(r"\.|->", name)[0] in held:
        return True
    # name = var; or name = fn(var); (a pointer into it, e.g. its base name)
    aliased = re.findall(r"\b" + re.escape(name) + r"\s*=\s*(?:\w+\()?(\w+)\)?\s*[;,]", body)
    return any(src in held for src in aliased)


def known(path, check, msg):
    rel = os.path.relpath(path, SRC)
    return any(rel == k[0] and check == k[1] and k[2] in msg for k in KNOWN)


def main():
    ap = argparse.ArgumentParser(description="clang-tidy over src/ at zero findings")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1, help="parallel clang-tidy runs")
    ap.add_argument("build", nargs="?", default=os.path.join(SRC, "build"), help="build dir with compile_commands.json")
    ap.add_argument("files", nargs="*", help="only these files")
    a = ap.parse_args()
    args, jobs, build = a.files, a.j, a.build
    tdir, files = compile_db(build)
    if args:
        want = {os.path.realpath(a) for a in args}
        files = [f for f in files if f in want]
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda f: run_one(tdir, f), files))
    shown, dropped, waiting, failed = set(), 0, set(), False
    for res in results:
        for head, notes, m in res:
            if m is None:
                print(head + "\n" + notes)
                failed = True
                continue
            path, line, msg, check = m.group(1), int(m.group(2)), m.group(5), m.group(6)
            leak = LEAK.match(msg)
            if "clang-analyzer-unix.Malloc" in check and leak and cleanup_declared(path, line, leak.group(1)):
                dropped += 1
                continue
            if known(path, check, msg):
                waiting.add(head)
                continue
            if head in shown:
                continue
            shown.add(head)
            print(head.replace(SRC + "/", "") + ("\n" + notes if notes else ""))
    for head in sorted(waiting):
        print("left for other work (KNOWN): " + head.replace(SRC + "/", ""))
    print("clang-tidy: %d files, %d findings, %d cleanup-attribute leak reports dropped, %d left for other work, "
          "%.0f s with -j%d" % (len(files), len(shown), dropped, len(waiting), time.monotonic() - start, jobs))
    return 1 if shown or failed else 0


if __name__ == "__main__":
    sys.exit(main())
