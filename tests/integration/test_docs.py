#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/HACKING.md cannot drift from src/ (test docs_hacking):

1. Section 2's table "what each folder may use" equals the real `#include "folder/..."` lines: an
   include the table does not allow fails, and so does a folder the table allows but nothing includes.
   Every folder of src/ has a row and every row names a folder (or file) that exists.
2. Section 1's rules: only the files the section names print to stdout/stderr, and only the daemon
   files it names log above debug (log_info/log_warn/log_error).
3. Every function `name()` and table `name[]` the document mentions exists in src/ (or, for test
   helpers and cmake functions, in tests/ and cmake/).
"""
import os
import re
import sys

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
HACKING = os.path.join(SRC, "docs", "HACKING.md")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def sources(under):
    for dirpath, _, files in os.walk(os.path.join(SRC, under)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(dirpath, f)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def section(text, number):
    m = re.search(r"^## %d\. .*?(?=^## \d+\. |\Z)" % number, text, re.S | re.M)
    if not m:
        fail("docs/HACKING.md has no section %d" % number)
        return ""
    return m.group(0)


def unit_of(path):
    """'src/plugin/dp.c' -> 'plugin'; 'src/main.c' -> 'main.c'."""
    rel = os.path.relpath(path, os.path.join(SRC, "src"))
    return rel.split("/")[0]


def include_target(inc, path):
    """The folder an include line names; None for a header next to the including file."""
    if "/" in inc:
        return inc.split("/")[0]
    if inc.endswith(".pb-c.h"):
        return "gen"  # protobuf-c code the build generates from proto/
    if os.path.exists(os.path.join(os.path.dirname(path), inc)):
        return None
    return "?" + inc


def table_rows(sec2):
    rows = {}
    for line in sec2.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`src/"):
            continue
        unit = cells[0].strip("`")[len("src/"):].rstrip("/")
        uses = re.sub(r"\([^()]*(\([^()]*\)[^()]*)*\)", "", cells[2])  # remarks in parentheses
        allowed = {w.strip() for w in uses.split(",") if w.strip()}
        if allowed == {"libc only"}:
            allowed = set()
        rows[unit] = allowed
    return rows


def check_layers(text):
    rows = table_rows(section(text, 2))
    units = sorted({unit_of(p) for p in sources("src")})
    for u in units:
        if u not in rows:
            fail("HACKING §2 has no row for src/%s" % u)
    for u in rows:
        if u not in units:
            fail("HACKING §2 has a row for src/%s, which does not exist" % u)
    used = {u: {} for u in units}
    for path in sources("src"):
        u = unit_of(path)
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', read(path), re.M):
            t = include_target(inc, path)
            if t is not None and t != u:
                used[u].setdefault(t, os.path.relpath(path, SRC))
    for u in units:
        allowed = rows.get(u, set())
        for t, where in sorted(used[u].items()):
            if t not in allowed:
                fail("%s includes %s/ (src/%s may use: %s)" % (where, t, u, ", ".join(sorted(allowed)) or "libc only"))
        for t in sorted(allowed - set(used[u])):
            fail("HACKING §2 says src/%s uses %s, but nothing in src/%s includes it" % (u, t, u))


def files_named(sentence):
    """The src/ paths a sentence names in backticks: files, or folders ending in '/'."""
    return re.findall(r"`(src/[\w./]+)`", sentence)


def allowed_by(paths, path):
    rel = os.path.relpath(path, SRC)
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in paths)


def check_rules(text):
    sec1 = section(text, 1)
    prints = re.search(r"Printing:[^\n]*(\n[^\n]+)*", sec1)
    logs = re.search(r"Logging:[^\n]*(\n[^\n]+)*", sec1)
    if not prints or not logs:
        fail("HACKING §1 must state the rules as 'Printing:' and 'Logging:' paragraphs")
        return
    may_print, may_log = files_named(prints.group(0)), files_named(logs.group(0))
    out = re.compile(r"(^|[^\w.])(printf|puts|putchar|perror|vprintf)\(|\b(stdout|stderr)\b")
    above_debug = re.compile(r"\blog_(info|warn|error)\(|\blog_emit\(")
    for path in sources("src"):
        # comments and strings out, line numbers kept
        code = re.sub(r'/\*.*?\*/|//[^\n]*|"(\\.|[^"\\\n])*"',
                      lambda m: "\n" * m.group(0).count("\n") if m.group(0)[0] == "/" else '""', read(path), flags=re.S)
        for n, l in enumerate(code.splitlines(), 1):
            if out.search(l) and not allowed_by(may_print, path):
                fail("%s:%d prints (HACKING §1 Printing: only %s)" % (os.path.relpath(path, SRC), n, ", ".join(may_print)))
            if above_debug.search(l) and not allowed_by(may_log, path) and "/src/util/log." not in path:
                fail("%s:%d logs above debug (HACKING §1 Logging: only %s)" % (os.path.relpath(path, SRC), n,
                                                                                ", ".join(may_log)))
    for p in may_print + may_log:
        if not os.path.exists(os.path.join(SRC, p)):
            fail("HACKING §1 names %s, which does not exist" % p)


def check_one_parser():
    """Options are parsed by the one engine (util/optspec.c over util/argv.c): no other file calls getopt, and no
    comment says a verb parses with it (cmd.h did, after every verb had moved to the engine)."""
    engine = {os.path.join(SRC, "src", "util", f) for f in ("optspec.c", "optspec.h", "argv.c", "argv.h")}
    call = re.compile(r"\bgetopt(_long)?\s*\(|(?:parse|read)s? (?:its|their|the) options with getopt")
    for path in sources("src"):
        for n, line in enumerate(read(path).splitlines(), 1):
            if path not in engine and call.search(line):
                fail("%s:%d: options parsed beside the engine (util/optspec.c): %s" % (path, n, line.strip()))


def check_names(text):
    """Functions and tables live in src/; a few the text names are test helpers or cmake functions."""
    paths = list(sources("src")) + [os.path.join(SRC, "CMakeLists.txt")]
    for under in ("cmake", "tests"):
        for dirpath, _, files in os.walk(os.path.join(SRC, under)):
            paths += [os.path.join(dirpath, f) for f in files if f.endswith((".cmake", ".py", ".c", ".h"))]
    src_text = "\n".join(read(p) for p in paths)
    idents = set(re.findall(r"\b[A-Za-z_]\w*\b", src_text))
    names = set(re.findall(r"\b([A-Za-z_]\w*)\(\)", text)) | set(re.findall(r"\b([A-Za-z_]\w*)\[\]", text))
    for name in sorted(names):
        if name not in idents:
            fail("HACKING names %s, which is nowhere in src/" % name)
    check_used(re.findall(r"\b([A-Za-z_]\w*)\(\)", text))
    return len(names)


def check_used(functions):
    """A function HACKING points readers to is used: some line of src/ or tests/ names it other than its
    declarations and definition (which start at column 0 with the name followed by '('), e.g. a call, a table row,
    a callback, a test's call of a library function nothing else calls yet."""
    lines = [line for under in ("src", "tests") for p in sources(under) for line in read(p).splitlines()]
    for name in sorted(set(functions)):
        word = re.compile(r"\b%s\b" % re.escape(name))
        declared = re.compile(r"^\S.*\b%s\(" % re.escape(name))
        if any(word.search(line) for line in lines) and not any(
                word.search(line) and not declared.match(line) for line in lines):
            fail("HACKING names %s, which nothing in src/ or tests/ uses (dead code, or the text is stale)" % name)


def main():
    text = read(HACKING)
    check_layers(text)
    check_rules(text)
    check_one_parser()
    n = check_names(text)
    if failures:
        print("%d problem(s): fix the code or docs/HACKING.md, whichever is wrong" % len(failures))
        return 1
    print("ok: HACKING §2 table matches the includes of src/, §1 printing and logging rules hold, %d names exist" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
