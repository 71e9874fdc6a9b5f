# SPDX-License-Identifier: Apache-2.0
"""Python helpers for tests that drive gpulet against the fake NVML (tests/fakenvml/README.md).

    import sys; sys.path.insert(0, os.path.join(SRC, "tests", "lib")); import fakenvml
    node = fakenvml.FakeNode(tmpdir, "dgx-a100")          # private copy of the fixture + event file
    subprocess.Popen([gpulet, "plugin", ...], env=node.env())
    node.xid(3, 79)                                       # append "xid 3 79" to the event file
    node.lose(3); node.recover(3)                         # rewrite the fixture atomically
    node.repartition(6, [node.mig_instance(9, 0x0, [2, 1], "MIG-...")])
    root = node.mkroot(os.path.join(tmpdir, "root"))      # tests/lib/mkroot.sh for this fixture
"""
import copy, json, os, subprocess

SRC = os.environ.get("GPULET_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(SRC, "build")
FIXTURES = os.path.join(SRC, "tests", "fixtures")
LIBRARY = os.environ.get("FAKE_NVML_LIB") or os.path.join(BUILD, "fakenvml", "libnvidia-ml.so.1")


def load(name):
    """A committed fixture as a dict (name without .json, or a path)."""
    path = name
    for d in (FIXTURES, os.path.join(FIXTURES, "extra")):
        if not os.path.exists(path):
            path = os.path.join(d, name + ".json")
    with open(path) as f:
        return json.load(f)


def write_atomic(path, doc):
    """Replace a fixture the way the fake expects: temp file in the same dir, then rename."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


class FakeNode:
    """A fixture copy and an event file under tmpdir that a test changes while gpulet runs."""

    def __init__(self, tmpdir, fixture="dgx-a100"):
        self.doc = copy.deepcopy(load(fixture))
        self.fixture = os.path.join(tmpdir, "fixture.json")
        self.events = os.path.join(tmpdir, "nvml-events")
        write_atomic(self.fixture, self.doc)
        open(self.events, "a").close()

    def env(self, base=None):
        """Environment for a gpulet process: fixture, event file, library."""
        e = dict(os.environ if base is None else base)
        e.update(FAKE_NVML_FIXTURE=self.fixture, FAKE_NVML_EVENTS=self.events, GPULET_NVML_LIBRARY=LIBRARY)
        return e

    # -- fixture changes (each is written at once) --
    def gpu(self, index):
        return self.doc["gpus"][index]

    def update(self, fn):
        """fn(doc) edits the fixture dict; the result is written atomically."""
        fn(self.doc)
        write_atomic(self.fixture, self.doc)

    def set_gpu(self, index, **fields):
        self.update(lambda d: d["gpus"][index].update(fields))

    def lose(self, index):
        self.set_gpu(index, lost=True)

    def recover(self, index):
        self.set_gpu(index, lost=False)

    def fail(self, index, function, code="UNKNOWN"):
        self.update(lambda d: d["gpus"][index].setdefault("fail", {}).__setitem__(function, code))

    def delay(self, index, function, ms):
        self.update(lambda d: d["gpus"][index].setdefault("delay_ms", {}).__setitem__(function, ms))

    def telemetry(self, index, **fields):
        self.update(lambda d: d["gpus"][index].setdefault("telemetry", {}).update(fields))

    def init_error(self, code):
        """code: a return name such as "DRIVER_NOT_LOADED", or None to clear."""
        def edit(d):
            d.pop("init_error", None)
            if code:
                d["init_error"] = code
        self.update(edit)

    @staticmethod
    def mig_instance(gi, gi_profile, placement, uuid, ci=0, ci_slices=None):
        c = dict(ci=ci, uuid=uuid)
        if ci_slices:
            c["ci_slices"] = ci_slices
        return dict(gi=gi, gi_profile=gi_profile, placement=placement, cis=[c])

    def repartition(self, index, instances, mig_mode=1):
        """Replace GPU index's MIG instances (a list of mig_instance() dicts)."""
        self.set_gpu(index, mig=instances, mig_mode=mig_mode)

    # -- events --
    def event(self, line):
        with open(self.events, "a") as f:
            f.write(line.rstrip("\n") + "\n")

    def xid(self, gpu, xid, gi=None, ci=None):
        self.event("xid %s %d" % (gpu, xid) + ("" if gi is None else " %d %d" % (gi, ci)))

    def dbe(self, gpu):
        self.event("dbe %s" % gpu)

    def sbe(self, gpu):
        self.event("sbe %s" % gpu)

    def migchange(self, gpu):
        self.event("migchange %s" % gpu)

    # -- node root --
    def mkroot(self, dest, *args):
        """tests/lib/mkroot.sh DEST <this fixture> args...; returns dest."""
        r = subprocess.run([os.path.join(SRC, "tests", "lib", "mkroot.sh"), dest, self.fixture, *args],
                           capture_output=True, text=True, env=dict(os.environ, GPULET_BUILD=BUILD))
        if r.returncode != 0:
            raise RuntimeError("mkroot failed: " + r.stderr)
        return dest
