#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""How long a correct client waits for a scrape of `gpulet exporter` while each attack of
tests/security/test_http_attacks.py runs (issue 30 items 6 and 7): p50/p99 of the good client's
latency, as a ratio to the floor measured in the same run without any attack (a scrape on a new
connection; for basic auth, a first scrape whose password is not yet known good, i.e. one bcrypt).
Timeouts count as the timeout. The figures in docs/reference/alerts.md ("HTTP") come from here.

usage: bench/bench_http_attacks.py [SAMPLES] [OTHER_GPULET]
  SAMPLES: good-client requests per row (default 20; the rows whose attack holds every slot take 5,
  each may wait for the 10 s header deadline). OTHER_GPULET: a second binary (e.g. a build of main)
  measured by the same rows afterwards, marked "other". Env GPULET, FAKE_NVML_LIB as for the tests.
  Prints; asserts nothing."""
import os
import statistics
import sys
import tempfile
import time
import shutil

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "security"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import exporter_lib  # noqa: E402
import test_http_attacks as atk  # noqa: E402

SAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 20
OTHER = sys.argv[2] if len(sys.argv) > 2 else None
TIMEOUT = 30


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def samples(n, one):
    """n requests (fewer when two in a row fail: the attack holds, and each failure costs TIMEOUT)."""
    out, bad = [], 0
    for i in range(n):
        status, secs = one(i)
        out.append(secs if status == 200 else max(secs, TIMEOUT))
        bad += status != 200
        if bad >= 2 and out[-2:] == [max(out[-2], TIMEOUT), max(out[-1], TIMEOUT)]:
            break
        time.sleep(0.2)
    return out, bad


def rows(tmp, label):
    tls, ctx = atk.make_cert(tmp)
    n_users = 3 * SAMPLES + 3
    users = ["u%d" % i for i in range(n_users)]
    cfg = os.path.join(tmp, "auth.yml")
    with open(cfg, "w") as f:
        f.write(tls + "basic_auth_users:\n" + "".join("  %s: '%s'\n" % (u, atk.bcrypt("pw-" + u)) for u in users))
    out = []
    # basic auth over TLS: first scrapes of fresh users, without and with the two lock-out floods
    ex = atk.exporter(["--web-config-file", cfg])
    try:
        nxt = iter(users)

        def first(_):
            u = next(nxt)
            return atk.request(ex.port, ctx=ctx, auth=atk.basic(u, "pw-" + u), timeout=TIMEOUT)
        floor_auth, _ = samples(SAMPLES, first)
        out.append(("auth floor: first scrape, no attack", floor_auth, 0, floor_auth))
        for name, src, per_conn in (("auth: 24 clients, other address, connection per guess", "127.0.2.1", True),
                                    ("auth: 24 keep-alive clients, scraper's address", "127.0.0.1", False)):
            flood = atk.PasswordFlood(ex.port, ctx, src, users[-1], per_conn)
            try:
                time.sleep(3)
                got, bad = samples(SAMPLES, first)
            finally:
                flood.stop()
            out.append((name, got, bad, floor_auth))
    finally:
        ex.cleanup()
    # slowloris, plain HTTP and TLS, 192 slots
    for tls_on in (False, True):
        args = []
        if tls_on:
            with open(os.path.join(tmp, "tls.yml"), "w") as f:
                f.write(tls)
            args = ["--web-config-file", os.path.join(tmp, "tls.yml")]
        ex = atk.exporter(args, nofile=256)
        c = ctx if tls_on else None
        tag = "TLS" if tls_on else "plain"
        stream, first_n, step = (atk.client_hello(ctx), 5, 1) if tls_on else (atk.http_stream(), 25, 12)
        try:
            floor, _ = samples(SAMPLES, lambda _: atk.request(ex.port, ctx=c, timeout=TIMEOUT))
            out.append(("%s floor: scrape on a new connection, no attack" % tag, floor, 0, floor))
            for name, srcs, per, n in (("one address, 250 trickling", ["127.0.3.1"], 250, SAMPLES),
                                       ("24 addresses, 288 trickling", atk.sources("127.0.4", 24), 12, 5)):
                tr = atk.Trickle(ex.port, srcs, per, stream, first_n, step).start()
                try:
                    time.sleep(3)
                    got, bad = samples(n, lambda _: atk.request(ex.port, ctx=c, timeout=TIMEOUT))
                finally:
                    tr.stop()
                time.sleep(2)
                out.append(("%s: %s" % (tag, name), got, bad, floor))
        finally:
            ex.cleanup()
    for name, got, bad, floor in out:
        f50 = statistics.median(floor)
        print("%-6s %-58s p50 %8.1f ms  p99 %8.1f ms  x%-8.1f x%-8.1f failed %d/%d" %
              (label, name, pct(got, 50) * 1e3, pct(got, 99) * 1e3, pct(got, 50) / f50, pct(got, 99) / f50, bad,
               len(got)), flush=True)


def main():
    print("good client's latency under attack; ratios: p50 and p99 / the row's floor p50 (same run)")
    for label, binary in (("this", exporter_lib.GPULET), ("other", OTHER)):
        if not binary:
            continue
        exporter_lib.GPULET = binary
        tmp = tempfile.mkdtemp(prefix="bench-httpatk-")
        try:
            rows(tmp, label)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
