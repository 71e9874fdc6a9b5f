#!/usr/bin/python3
"""Device-by-device and file-by-file differences between two CDI specs (nvidia-ctk's and gpulet's
for the same node), as keys an allow-list matches. Each device is compared by what a container
requesting it alone receives: the spec-level edits plus its own. Keys name the difference without
the node's paths (<root> for the root, <ver> for the driver version), details keep them."""

KEYS = ("env", "deviceNodes", "mounts", "hooks")


def effective(spec, dev):
    out = {k: list(spec.get("containerEdits", {}).get(k) or []) for k in KEYS}
    for k in KEYS:
        out[k] += dev.get("containerEdits", {}).get(k) or []
    return out


def hook_action(h):
    args = h.get("args") or []
    return args[2] if args[:2] == ["nvidia-ctk", "hook"] and len(args) > 2 else (args[1] if len(args) > 1 else "?")


def hook_parts(h):
    """(action, links or flags): create-symlinks by its set of links, others by their argument list."""
    args = h.get("args") or []
    rest = args[3:] if args[:2] == ["nvidia-ctk", "hook"] else args[2:]
    return hook_action(h), rest


class Diff:
    def __init__(self, root, version):
        self.root, self.version, self.items = root, version, []

    def norm(self, s):
        s = str(s).replace(self.root, "<root>")
        return s.replace(self.version, "<ver>") if self.version else s

    def add(self, where, key, detail):
        self.items.append((self.norm(key), where, self.norm(detail)))

    def by(self, where, what, ours, theirs, fields):
        """Two lists of dicts keyed by `what`; fields compared for the shared keys."""
        a = {x.get(what): x for x in theirs}
        b = {x.get(what): x for x in ours}
        for k in sorted(set(a) - set(b)):
            self.add(where, "%s-missing:%s" % (what, k), a[k])
        for k in sorted(set(b) - set(a)):
            self.add(where, "%s-extra:%s" % (what, k), b[k])
        for k in sorted(set(a) & set(b)):
            for f in fields:
                if a[k].get(f) != b[k].get(f):
                    self.add(where, "%s.%s:%s" % (what, f, k), "nvidia-ctk %r, gpulet %r" % (a[k].get(f), b[k].get(f)))

    def edits(self, where, ours, theirs):
        env_a = dict(e.split("=", 1) for e in theirs["env"])
        env_b = dict(e.split("=", 1) for e in ours["env"])
        for k in sorted(set(env_a) | set(env_b)):
            if env_a.get(k) != env_b.get(k):
                kind = "env-missing" if k not in env_b else "env-extra" if k not in env_a else "env-value"
                self.add(where, "%s:%s" % (kind, k), "nvidia-ctk %r, gpulet %r" % (env_a.get(k), env_b.get(k)))
        self.by(where, "path", ours["deviceNodes"], theirs["deviceNodes"],
                ("hostPath", "type", "major", "minor", "fileMode", "permissions", "uid", "gid"))
        self.by(where, "containerPath", ours["mounts"], theirs["mounts"], ("hostPath", "options", "type"))
        self.hooks(where, ours["hooks"], theirs["hooks"])

    def hooks(self, where, ours, theirs):
        def split(hooks):
            links, other = set(), {}
            for h in hooks:
                action, rest = hook_parts(h)
                if action == "create-symlinks":
                    links |= {rest[i + 1] for i in range(0, len(rest) - 1, 2) if rest[i] == "--link"}
                else:
                    other[action] = h
            return links, other

        la, ha = split(theirs)
        lb, hb = split(ours)
        for link in sorted(la - lb):
            self.add(where, "link-missing:" + link, link)
        for link in sorted(lb - la):
            self.add(where, "link-extra:" + link, link)
        # a hook one side lacks, with the OCI lifecycle the other runs it in (oracles.md H1: createRuntime)
        for k in sorted(set(ha) - set(hb)):
            self.add(where, "hook-missing:%s@%s" % (k, ha[k].get("hookName")), " ".join(ha[k]["args"]))
        for k in sorted(set(hb) - set(ha)):
            self.add(where, "hook-extra:%s@%s" % (k, hb[k].get("hookName")), " ".join(hb[k]["args"]))
        for k in sorted(set(ha) & set(hb)):
            for f in ("hookName", "path", "args", "env"):
                if ha[k].get(f) != hb[k].get(f):
                    self.add(where, "hook.%s:%s" % (f, k), "nvidia-ctk %r, gpulet %r" % (ha[k].get(f), hb[k].get(f)))
        if [hook_action(h) for h in theirs if hook_action(h) in hb] != [hook_action(h) for h in ours
                                                                        if hook_action(h) in ha]:
            self.add(where, "hook-order", "nvidia-ctk %s, gpulet %s" % ([hook_action(h) for h in theirs],
                                                                      [hook_action(h) for h in ours]))


def compare(theirs, ours, root, version):
    """[(key, where, detail)] for spec nvidia-ctk `theirs` vs gpulet `ours`."""
    d = Diff(root, version)
    for f in ("cdiVersion", "kind"):
        if theirs.get(f) != ours.get(f):
            d.add("spec", "spec." + f, "nvidia-ctk %r, gpulet %r" % (theirs.get(f), ours.get(f)))
    devs_a = {x["name"]: x for x in theirs.get("devices", [])}
    devs_b = {x["name"]: x for x in ours.get("devices", [])}
    for n in sorted(set(devs_a) - set(devs_b)):
        d.add("spec", "device-missing:" + n, n)
    for n in sorted(set(devs_b) - set(devs_a)):
        d.add("spec", "device-extra:" + n, n)
    for n in sorted(set(devs_a) & set(devs_b)):
        d.edits("device " + n, effective(ours, devs_b[n]), effective(theirs, devs_a[n]))
    # where an edit sits (spec level or device level) changes nothing a container sees; the device
    # order neither (a runtime resolves names): neither is compared.
    return d.items
