#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""SIGHUP reloads the config file (replicas 4 -> renamed shared resource with 2 replicas: the
old resource gets an empty list, the new one registers); a broken file on SIGHUP leaves the
running plugin alone and logs file:line:col. SIGTERM/SIGINT: every open ListAndWatch stream
gets an empty device list before it ends, the sockets are removed, exit code 0. A SIGHUP that
comes while the config is still being read (config-manager sends one at its first sync) is a
reload once the plugin serves, not the end of the process."""
import os
import signal
import threading
import time

from plugin_lib import check, run


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def test_sighup_reload(h):
    g = [x["uuid"] for x in h.fixture_data()["gpus"]]
    cfg = os.path.join(h.tmp, "config.yaml")
    write(cfg, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
    h.start_standin()
    h.start_plugin(env={"CONFIG_FILE": cfg})  # the helm chart passes it through the env var
    devs = h.wait_list("nvidia.com/gpu", pred=lambda d: len(d) == 4 * len(g))["devices"]
    check(devs[0]["id"] == g[0] + "::0", "replica ids %r" % devs[:2])
    pid = h.plugin.pid

    mark = h.events.mark()
    write(cfg, "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
               "    - name: nvidia.com/gpu\n      replicas: 2\n")
    t0 = time.time()
    h.plugin.send_signal(signal.SIGHUP)
    reg = h.events.wait(lambda e: e["event"] == "register", start=mark, what="registration after SIGHUP")
    check(reg["resource"] == "nvidia.com/gpu.shared" and reg["endpoint"] == "nvidia-gpu.shared.sock", "%r" % reg)
    shared = h.wait_list("nvidia.com/gpu.shared", start=mark)["devices"]
    check([d["id"] for d in shared] == ["%s::%d" % (u, k) for u in g for k in range(2)], "shared list %r" % shared)
    h.wait_list("nvidia.com/gpu", start=mark, pred=lambda d: d == [])  # stale capacity dropped (upstream #240)
    check(not os.path.exists(h.sock("nvidia.com/gpu")), "old socket left behind")
    print("SIGHUP -> new resource registered in %.1f ms" % ((reg["t"] - t0) * 1e3))
    check(h.plugin.pid == pid, "SIGHUP must not restart the process")

    # a broken file: logged with file:line:col and key, the running plugin untouched
    mark = h.events.mark()
    write(cfg, "version: v1\nflags:\n  migStrategy: sometimes\n")
    h.plugin.send_signal(signal.SIGHUP)
    h.wait_log(r'Config reload failed.*%s:3:16: flags\.migStrategy: .*none\|single\|mixed' % cfg.replace(".", r"\."))
    time.sleep(0.3)
    check(not [e for e in h.events.items[mark:] if e["event"] in ("register", "list")], "reload with a bad file "
          "touched the plugins: %r" % h.events.items[mark:])
    r = h.allocate("nvidia.com/gpu.shared", [g[1] + "::1"])
    check(dict(r.container_responses[0].envs)["NVIDIA_VISIBLE_DEVICES"] == g[1], "still serving")
    h.check_alive()


def stop_and_check(h, sig):
    resources = ("nvidia.com/gpu", "nvidia.com/mig-1g.5gb")
    mark = h.start_plugin("--mig-strategy=mixed", wait_resources=resources)
    socks = [f for f in os.listdir(h.dp) if f != "kubelet.sock"]
    check(len(socks) >= 2, "sockets %r" % socks)
    t0 = time.time()
    rc = h.stop_plugin(sig)
    took = time.time() - t0
    check(rc == 0, "exit code %r after %s" % (rc, sig))
    for res in resources:
        empty = h.wait_list(res, start=mark, pred=lambda d: d == [])
        end = h.events.wait(lambda e, r=res: e["event"] == "stream_end" and e["resource"] == r, start=mark)
        check(empty["t"] <= end["t"], "empty list after the stream ended")
    left = [f for f in os.listdir(h.dp) if f != "kubelet.sock"]
    check(left == [], "sockets left after %s: %r" % (sig, left))
    print("%s: empty lists sent, sockets removed, exit 0 in %.1f ms" % (signal.Signals(sig).name, took * 1e3))


def test_sigterm(h):
    h.start_standin()
    stop_and_check(h, signal.SIGTERM)
    stop_and_check(h, signal.SIGINT)
    h.wait_log(r'msg="Stopped"')


def test_sighup_while_reading_config(h):
    # a FIFO as the config file holds the plugin in its first read of it for as long as we like
    fifo = os.path.join(h.tmp, "config.fifo")
    os.mkfifo(fifo)
    h.start_standin()
    mark = h.start_plugin("--config-file", fifo, wait_resources=())
    time.sleep(0.5)
    h.plugin.send_signal(signal.SIGHUP)
    time.sleep(0.2)
    h.check_alive()

    def feed():
        with open(fifo, "w") as f:
            f.write("version: v1\n")

    threading.Thread(target=feed, daemon=True).start()  # the first read
    h.wait_list("nvidia.com/gpu", start=mark)
    h.wait_log("SIGHUP: reloading the config")
    # the reload's read, once the first reader has closed the FIFO (a writer opening before would
    # feed that reader and leave the reload waiting)
    threading.Thread(target=feed, daemon=True).start()
    h.wait_log(r'(?s)msg="Running with config".*msg="Running with config"')
    h.check_alive()
    check(h.stop_plugin() == 0, "exit code after SIGTERM")


if __name__ == "__main__":
    run(test_sighup_reload)
    run(test_sigterm)
    run(test_sighup_while_reading_config)
