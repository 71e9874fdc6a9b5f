#!/usr/bin/python3
"""Every verb's --help lists exactly the options the verb accepts; every verb takes its long options with
one dash as well (-mig-strategy=mixed, as upstream's urfave/cli) and --version.

What a verb accepts is found without reading its help: every word spelled as a string in the
command-line sources (and every letter, for short options) is tried as `gpulet VERB --WORD 1 --help`.
getopt rejects an unknown option before it reaches --help ("unrecognized option", exit 2; the plugin
says "unknown option"); a known one is taken, with 1 as its value or as an operand, and --help then
ends the run. The option rows of `VERB --help` must name the same set: an option that is accepted and
not listed (doctor --runtime-user once) or listed and not accepted fails the test.
"""
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys

from test_cdi_testlib import GPULET, SRC, check, finish  # paths from CTest's environment, failure bookkeeping

REJECTED = re.compile(r"unrecognized option|invalid option|unknown option|ambiguous")
# a clean environment: env fallbacks (LOG_LEVEL=bogus, ...) must not decide the outcome
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def run(args):
    return subprocess.run([GPULET, *args], capture_output=True, text=True, env=ENV, timeout=30,
                          stdin=subprocess.DEVNULL)


def verbs():
    """Verbs from the verb tables in the source (main.c, cdi's sub-verbs, cdi-hook's actions), not from any help."""
    main = open(os.path.join(SRC, "src", "main.c")).read()
    cdi = open(os.path.join(SRC, "src", "cmd", "verb_cdi.c")).read()
    hook = open(os.path.join(SRC, "src", "cmd", "verb_cdihook.c")).read()
    # entrypoint has no options: its arguments are the command's or the operand's it runs (test_image.py); a
    # hidden verb (summary NULL) is gpulet's own, run by gpulet, with no help
    out = [[v] for v in re.findall(r'\{"([a-z-]+)", cmd_[a-z_]+,(?!\s*NULL)', main)
           if v not in ("cdi", "cdi-hook", "entrypoint")]
    out += [["cdi", v] for v in re.findall(r'\{"([a-z]+)", cdi_[a-z]+_cmd[,}]', cdi)]
    out += [["cdi-hook", v] for v in re.findall(r'\{"([a-z-]+)", HOOK_[A-Z]+,', hook)]
    return out


def candidates():
    """Option-like string literals of the command-line sources ("json", "--root ...") and their --words."""
    words = set()
    files = glob.glob(os.path.join(SRC, "src", "cmd", "*.[ch]")) + glob.glob(os.path.join(SRC, "src", "plugin", "config*.[ch]"))
    files.append(os.path.join(SRC, "src", "main.c"))
    for path in files:
        for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', open(path).read()):
            m = re.fullmatch(r"-{0,2}([a-z][a-z0-9-]*)", lit)
            if m:
                words.add(m.group(1))
            words |= set(re.findall(r"--([a-z][a-z0-9-]*)", lit))
    return words


def listed(help_text):
    """Options named in the option rows of a --help text: lines that start with two spaces and a dash."""
    longs, shorts = set(), set()
    for line in help_text.splitlines():
        if not re.match(r"^  -", line):
            continue
        left = re.split(r"\s{2,}", line.strip())[0]
        # a dot inside a name is upstream's too (nvidia-ctk's --csv.file)
        longs |= set(re.findall(r"--([a-z0-9](?:[a-z0-9-]|\.(?=[a-z]))*)", left))
        shorts |= set(re.findall(r"(?:^|\s)-([a-zA-Z])\b(?!-)", left))
    return longs, shorts


def accepted(verb, arg):
    r = run([*verb, arg, "1", "--help"])
    out = r.stderr + r.stdout
    if REJECTED.search(out):
        check(r.returncode == 2, f"{' '.join(verb)} {arg}: rejected but exit {r.returncode}, not 2")
        return False
    return True


# verbs that stand in for an upstream program, and that program (docs/reference/device-plugin.md §10)
UPSTREAM = {"plugin": "nvidia-device-plugin", "labels": "gpu-feature-discovery", "exporter": "dcgm-exporter",
            "cdi": "nvidia-ctk cdi", "mps-control-daemon": "mps-control-daemon", "cdi-hook": "nvidia-cdi-hook",
            "config-manager": "config-manager"}


# upstream programs built on urfave/cli v2 (docs/reference/go-parsing.md)
URFAVE = {"plugin", "labels", "mps-control-daemon", "exporter", "config-manager"}


def check_version(verb):
    """VERB --version (and -version): gpulet's version, and the upstream program and version it matches."""
    name = " ".join(verb)
    version = re.search(r'set\(GPULET_VERSION "([^"]+)"\)', open(os.path.join(SRC, "CMakeLists.txt")).read()).group(1)
    # -v is --version on every verb (urfave/cli's VersionFlag alias, and the usual manners elsewhere)
    flags = ("--version", "-version", "-v")
    for flag in flags:
        r = run([*verb, flag])
        check(r.returncode == 0, f"{name} {flag}: exit {r.returncode}")
        lines = r.stdout.splitlines()
        check(lines[:1] == [f"gpulet version {version}"], f"{name} {flag}: first line {lines[:1]}")
        up = UPSTREAM.get(verb[0])
        if up:
            check(any(f"replaces {up}, matching " in line for line in lines), f"{name} {flag}: names {up}: {lines}")
        else:
            check(len(lines) == 1, f"{name} {flag}: no upstream to name: {lines}")


def check_json_errors(verb, longs):
    """A --json run that fails prints {"error": {command, message, exit_code}} on stdout, and exits non-zero."""
    name = " ".join(verb)
    cases = [(["--json", "--no-such-option"], 2, "no-such-option")]
    if "root" in longs and verb[0] in ("devices", "versions", "probe", "labels"):
        cases.append((["--json", "--root", "/a/../b"], 2, "'..'"))
    if verb == ["devices"]:  # a run that fails after its options: no driver under the root
        cases.append((["--json", "--root", "/nonexistent-gpulet-root"], 1, "libnvidia-ml.so.1"))
    for args, code, said in cases:
        r = run([*verb, *args])
        try:
            err = json.loads(r.stdout)["error"]
        except (ValueError, KeyError, TypeError):
            check(False, f"{name} {' '.join(args)}: stdout is not an error document: {r.stdout!r}")
            continue
        check(r.returncode == code and err.get("exit_code") == code and err.get("command") == f"gpulet {name}"
              and said in err.get("message", "") and err["message"] in r.stderr,
              f"{name} {' '.join(args)}: exit {r.returncode}, {err}, stderr {r.stderr!r}")
        plain = run([*verb, *args[1:]])
        check(plain.returncode == code and not plain.stdout, f"{name} {' '.join(args[1:])} without --json: stdout {plain.stdout!r}")


def main():
    words = candidates()
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    all_verbs = verbs()
    json_verbs = []
    check(len(all_verbs) >= 11, f"verb tables found: {all_verbs}")
    for verb in all_verbs:
        name = " ".join(verb)
        h = run([*verb, "--help"])
        check(h.returncode == 0, f"{name} --help: exit {h.returncode}")
        check("Example:" in h.stdout, f"{name} --help has an example")
        longs, shorts = listed(h.stdout)
        check(len(longs) >= 2, f"{name} --help lists options: {sorted(longs)}")
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            tried = sorted(words | longs)
            acc_long = {w for w, ok in zip(tried, pool.map(lambda w: accepted(verb, "--" + w), tried)) if ok}
            acc_short = {c for c, ok in zip(letters, pool.map(lambda c: accepted(verb, "-" + c), letters)) if ok}
        for w in sorted(longs - acc_long):
            check(False, f"{name}: --{w} is in --help but not accepted")
        for w in sorted(acc_long - longs):
            # a unique beginning of a long name is refused as Go's flag package refuses it, not taken for it
            check(False, f"{name}: --{w} is accepted but not in --help")
        for w in sorted(l for l in longs if len(l) > 3)[:3]:
            check(not accepted(verb, "--" + w[:-1]), f"{name}: --{w[:-1]} (a beginning of --{w}) is accepted")
        for flag in ("driver-root", "root"):
            if flag in longs:
                r = run([*verb, f"--{flag}=/a/../b"])
                check(r.returncode != 0 and "'..'" in r.stderr, f"{name}: --{flag}=/a/../b: exit {r.returncode} {r.stderr!r}")
        check(acc_short == shorts, f"{name}: short options accepted {sorted(acc_short)}, listed {sorted(shorts)}")
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            one_dash = sorted(longs)
            for w, ok in zip(one_dash, pool.map(lambda w: accepted(verb, "-" + w), one_dash)):
                check(ok, f"{name}: -{w} (one dash) is not accepted like --{w}")
        check(not accepted(verb, "-no-such-option"), f"{name}: -no-such-option is accepted")
        check_version(verb)
        if "json" in longs:
            check_json_errors(verb, longs)
            json_verbs.append(name)
        print(f"{name}: {len(longs)} long, {len(shorts)} short options, all listed and accepted (also with one dash)")
    top = run(["--version"])
    check(top.returncode == 0 and all(f"replaces {p}," in top.stdout for p in UPSTREAM.values()),
          f"gpulet --version names every upstream program: {top.stdout}")
    check(run(["cdi", "--version"]).stdout.startswith("gpulet version "), "gpulet cdi --version")
    check(len(json_verbs) >= 6, f"verbs with --json: {json_verbs}")
    # gpulet's own -v and the verbs help and version (issue 36: unknown commands before)
    for args, same in ((["-v"], ["--version"]), (["version"], ["--version"]), (["cdi", "-v"], ["cdi", "--version"]),
                       (["cdi-hook", "-v"], ["cdi-hook", "--version"])):
        r, want = run(args), run(same)
        check(r.returncode == 0 and r.stdout == want.stdout and "replaces" in r.stdout,
              f"gpulet {' '.join(args)} is gpulet {' '.join(same)}: {r.stdout!r}")
    for verb in all_verbs + [["cdi"], ["cdi-hook"]]:
        want, got = run([*verb, "--help"]), run(["help", *verb])
        check(got.returncode == 0 and got.stdout == want.stdout and want.stdout,
              f"gpulet help {' '.join(verb)} is gpulet {' '.join(verb)} --help (exit {got.returncode})")
    r = run(["help", "no-such-verb"])
    check(r.returncode == 2 and "unknown command 'no-such-verb'" in r.stderr, f"gpulet help no-such-verb: {r.stderr!r}")
    # the command table is aligned: every summary starts in one column
    rows = [l for l in run(["--help"]).stdout.split("Commands:\n")[1].split("\n\n")[0].splitlines() if l.startswith("  ") and l[2] != " "]
    cols = {len(re.match(r"  \S+\s+", l).group(0)) for l in rows}
    check(len(rows) >= 12 and len(cols) == 1, f"gpulet --help's commands in one column: {cols} {rows}")
    # the known bug this test was written for
    check("--runtime-user" in run(["doctor", "--help"]).stdout, "doctor --help lists --runtime-user")
    return finish("every verb's --help lists exactly the options it accepts")


if __name__ == "__main__":
    sys.exit(main())
