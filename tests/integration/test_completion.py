#!/usr/bin/python3
"""`gpulet completion bash|zsh` completes every verb, sub-verb, flag and choice, in a real bash and a real zsh.

The truth is read without the scripts: the verbs from the verb tables in the source (as cmd_help reads
them), each verb's flags from its own --help rows, the choices of a few flags from upstream's documented
values. Bash runs the script's completion function as bash's `complete -F` would (COMP_LINE, COMP_POINT,
COMP_WORDBREAKS), and bash-completion 2's own loader must find the installed script (DESTDIR install)
for gpulet and for each upstream program name. Zsh runs the function with compadd/_describe/_files
standing in for the completion system's builtins (they exist only inside a widget), and compinit must
register it for every name.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from test_cdi_testlib import BUILD, GPULET, SRC, check, finish
from test_help import listed, run, verbs

# upstream's program names and the verb each runs (src/main.c's programs[] less the image-only sh, bash and
# config-manager, docs/reference/device-plugin.md §10)
ALIASES = {"nvidia-device-plugin": "plugin", "gpu-feature-discovery": "labels",
           "mps-control-daemon": "mps-control-daemon", "nvidia-cdi-hook": "cdi-hook", "dcgm-exporter": "exporter",
           "gpu-kubelet-plugin": "dra", "config-manager": "config-manager"}
# the names make install links to gpulet (cmake/install.cmake), so bash-completion finds their script
INSTALLED = [n for n in ALIASES if n != "gpu-kubelet-plugin"]
# choices as upstream documents them (docs/reference/)
CHOICES = {
    "gpulet cdi generate --format ": {"json", "yaml"},
    "gpulet cdi generate -f ": {"json", "yaml"},
    "gpulet plugin --mig-strategy ": {"none", "single", "mixed"},
    "gpulet labels --mig-strategy=s": {"single"},
    "gpulet plugin --device-id-strategy ": {"uuid", "index"},
    "gpulet plugin --device-list-strategy envvar,cdi-": {"envvar,cdi-annotations", "envvar,cdi-cri"},
    "gpulet plugin --fail-on-init-error=": {"true", "false"},
    "gpulet labels --sharing-strategy ": {"none", "time-slicing", "mps"},
}


def top_verbs():
    """The listed verbs of main.c's table: a summary string, not NULL (manpages is hidden)."""
    main = open(os.path.join(SRC, "src", "main.c")).read()
    return set(re.findall(r'\{"([a-z-]+)", [a-z_]+,\s*"', main))


def sub_verbs():
    cdi = open(os.path.join(SRC, "src", "cmd", "verb_cdi.c")).read()
    hook = open(os.path.join(SRC, "src", "cmd", "verb_cdihook.c")).read()
    return {"cdi": set(re.findall(r'\{"([a-z]+)", cdi_[a-z]+_cmd,', cdi)),
            "cdi-hook": set(re.findall(r'\{"([a-z-]+)", HOOK_[A-Z]+, "', hook))}


def flags_of(path):
    """A verb's flags as its --help rows name them: --long and -s."""
    longs, shorts = listed(run([*path.split(), "--help"]).stdout)
    return {"--" + l for l in longs} | {"-" + s for s in shorts}


BASH_DRIVER = r"""
source "$1"
shift
fn=$(complete -p gpulet | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
for name in gpulet %s; do complete -p "$name" >/dev/null || echo "NOT REGISTERED $name"; done
for line in "$@"; do
	COMP_LINE=$line COMP_POINT=${#line}
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *' ' ]] && COMP_WORDS+=('')
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
	printf '%%s\n' "${COMPREPLY[@]}"
	echo @@@
done
"""

# the completion system's builtins, standing in: each prints the words it was given
ZSH_DRIVER = r"""
compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -l -- "$@"; }
compset() { return 0; }
_files() { print -- "FILES $*"; }
_describe() { local e; for e in "${(@P)4}"; do print -- "${e%%:*}"; done; }
compdef() { print -- "COMPDEF $*"; }
source "$1"
shift
for line in "$@"; do
	words=("${(@s: :)line}")
	[[ $line == *' ' ]] && words[-1]=''
	CURRENT=${#words}
	_gpulet
	print @@@
done
"""


def answers(out):
    return [set(filter(None, block.split("\n"))) for block in out.split("@@@\n")[:-1]]


def bash_cases():
    cases = {"gpulet ": top_verbs(), "gpulet help ": top_verbs(), "gpulet c": {v for v in top_verbs() if v[0] == "c"},
             "gpulet completion ": {"bash", "zsh"}}
    for verb, subs in sub_verbs().items():
        cases[f"gpulet {verb} "] = subs
        cases[f"gpulet help {verb} "] = subs
    hidden = {"cdi-hook noop"}  # a row without a summary: not listed, not completed (verb_cdihook.c)
    for path in [" ".join(v) for v in verbs() if " ".join(v) not in hidden]:
        cases[f"gpulet {path} -"] = flags_of(path)
        cases[f"gpulet {path} --"] = {f for f in flags_of(path) if f.startswith("--")}
    for program, verb in ALIASES.items():
        cases[f"{program} --"] = {f for f in flags_of(verb) if f.startswith("--")}
        cases[f"/usr/bin/{program} --"] = cases[f"{program} --"]
    cases.update(CHOICES)
    # a flag's value is not a word of the path; a boolean flag takes no separate value
    cases["gpulet cdi generate --vendor cdi --for"] = {"--format", "--force"}
    cases["gpulet plugin --pass-device-specs --mig"] = {"--mig-strategy"}
    cases["gpulet devices --json --r"] = {"--root"}
    return cases


def check_bash(script, tmp):
    cases = bash_cases()
    for name in ("a.json", "b.yaml"):
        open(os.path.join(tmp, name), "w").close()
    os.mkdir(os.path.join(tmp, "sub"))
    files = {"gpulet cdi validate ": {"a.json", "b.yaml", "sub"}, "gpulet cdi generate --output ": {"a.json", "b.yaml", "sub"},
             "gpulet devices --root ": {"sub"}, "gpulet cdi list --dir=s": {"sub"}}
    lines = list(cases) + list(files)
    driver = BASH_DRIVER % " ".join(ALIASES)
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", driver, "bash", script, *lines], capture_output=True,
                       text=True, cwd=tmp, timeout=120)
    check(r.returncode == 0 and "NOT REGISTERED" not in r.stdout, f"bash: exit {r.returncode} {r.stdout[:300]} {r.stderr}")
    got = answers(r.stdout)
    check(len(got) == len(lines), f"bash answered {len(got)} of {len(lines)} lines: {r.stderr}")
    for line, ans in zip(lines, got):
        want = {**cases, **files}[line]
        check(ans == want, f"bash '{line}<TAB>': got {sorted(ans)}, want {sorted(want)}")
    check(len(cases) > 40, f"bash: {len(cases)} lines checked")
    print(f"bash: {len(lines)} command lines completed as the verb tables and --help rows say")


def check_bash_completion_loader(tmp):
    """bash-completion 2's own loader finds the installed script by the command's name (make install, DESTDIR)."""
    dest = os.path.join(tmp, "dest")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", "/usr", "--component", "doc"], capture_output=True,
                       text=True, env={**os.environ, "DESTDIR": dest}, timeout=120)
    check(r.returncode == 0, f"cmake --install --component doc: {r.stderr}")
    share = os.path.join(dest, "usr", "share")
    probe = ('source /usr/share/bash-completion/bash_completion; for n in gpulet %s; do __load_completion "$n"; '
             'complete -p "$n"; done' % " ".join(INSTALLED))
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "XDG_DATA_DIRS": share, "HOME": tmp})
    for name in ["gpulet", *INSTALLED]:
        check(re.search(rf"-F _gpulet {re.escape(name)}$", r.stdout, re.M),
              f"bash-completion loads the installed script for {name}: {r.stdout} {r.stderr}")
    zfile = os.path.join(share, "zsh", "vendor-completions", "_gpulet")
    check(os.path.isfile(zfile), "make install puts _gpulet in zsh's vendor-completions")
    return zfile


def check_zsh(script, installed, tmp):
    r = subprocess.run(["zsh", "-n", script], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"zsh -n: {r.stderr}")
    lines = ["gpulet ", "gpulet cdi ", "gpulet cdi-hook ", "gpulet help cdi ", "gpulet doctor --",
             "gpulet cdi generate --format ", "gpulet cdi validate ", "gpulet devices --root ",
             "nvidia-device-plugin --", "gpulet cdi generate --vendor cdi --"]
    want = [top_verbs(), sub_verbs()["cdi"], sub_verbs()["cdi-hook"], sub_verbs()["cdi"], flags_of("doctor"),
            {"json", "yaml"}, {"FILES "}, {"FILES -/"}, flags_of("plugin"), flags_of("cdi generate")]
    r = subprocess.run(["zsh", "-f", "-c", ZSH_DRIVER, "zsh", script, *lines], capture_output=True, text=True,
                       timeout=60)
    got = answers(r.stdout.split("\n", 1)[1] if r.stdout.startswith("COMPDEF") else r.stdout)
    first = r.stdout.split("\n", 1)[0].split()
    check(first[:3] == ["COMPDEF", "_gpulet", "gpulet"] and set(first[3:]) == set(ALIASES),
          f"zsh: sourced, it registers: {r.stdout[:200]}")
    check(len(got) == len(lines), f"zsh answered {len(got)} of {len(lines)}: {r.stderr}")
    for line, ans, w in zip(lines, got, want):
        check(ans == w, f"zsh '{line}<TAB>': got {sorted(ans)}, want {sorted(w)}")
    # compinit finds the installed file in $fpath and registers it for every name
    fdir = os.path.dirname(installed)
    r = subprocess.run(["zsh", "-f", "-c", f"fpath=({fdir} $fpath); autoload -Uz compinit; compinit -u -d {tmp}/zcd; "
                        f"for n in gpulet {' '.join(ALIASES)}; do print $n=$_comps[$n]; done"],
                       capture_output=True, text=True, timeout=60, env={"HOME": tmp, "PATH": "/usr/bin:/bin"})
    for name in ["gpulet", *ALIASES]:
        check(f"{name}=_gpulet" in r.stdout.split(), f"zsh compinit registers _gpulet for {name}: {r.stdout} {r.stderr}")
    print(f"zsh: {len(lines)} command lines completed, compinit registers {len(ALIASES) + 1} names")


def main():
    for shell in ("bash", "zsh"):
        check(shutil.which(shell), f"{shell} is installed (.ci/packages.txt)")
    with tempfile.TemporaryDirectory() as tmp:
        scripts = {}
        for shell in ("bash", "zsh"):
            r = subprocess.run([GPULET, "completion", shell], capture_output=True, text=True, timeout=60)
            check(r.returncode == 0 and r.stdout, f"gpulet completion {shell}: exit {r.returncode} {r.stderr}")
            scripts[shell] = os.path.join(tmp, shell)
            with open(scripts[shell], "w") as f:
                f.write(r.stdout)
        r = subprocess.run([GPULET, "completion", "fish"], capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "unknown shell 'fish'" in r.stderr, f"gpulet completion fish: {r.stderr}")
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        check_bash(scripts["bash"], work)
        zfile = check_bash_completion_loader(tmp)
        check_zsh(scripts["zsh"], zfile, tmp)
    return finish("bash and zsh complete every verb, flag and choice")


if __name__ == "__main__":
    sys.exit(main())
