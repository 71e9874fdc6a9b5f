# The GPU pod uses runtimeClassName nvidia but containerd has no nvidia runtime (removed from the
# CRI config). Every sandbox fails: FailedCreatePodSandBox "failed to get sandbox runtime: no runtime
# for \"nvidia\" is configured" (containerd's CRI plugin). The node check names the missing handler
# as the root cause; the event maps onto the same runtime link.
python3 - "$ROOT/etc/containerd/config.toml" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p).read().split('\n')
out, skip = [], False
for l in lines:
    if l.strip().startswith('[') and 'runtimes.nvidia' in l:
        skip = True
    elif l.strip().startswith('['):
        skip = False
    if not skip:
        out.append(l)
open(p, 'w').write('\n'.join(out))
EOF
