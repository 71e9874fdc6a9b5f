#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Narrowing helper for soak finding F10: a lost GPU after a kubelet restart, without a SIGHUP reload
# (delivered on main 15:40). The soak fails when the same follows a reload to time-slicing replicas 2.
import sys, time
sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__import__("os").path.abspath(__file__)), "..", "integration"))
import plugin_lib
from plugin_lib import check
h = plugin_lib.Harness("dgx-a100")
try:
    h.start_standin()
    h.start_plugin("--rescan-interval=1")
    for restart in (False, True):
        if restart:
            h.kill_standin(); h.start_standin()
            h.events.wait(lambda e: e["event"] == "register", what="register")
            time.sleep(0.1)
        fx = h.fixture_data(); fx["gpus"][3]["lost"] = True; mark = h.events.mark(); h.write_fixture(fx)
        try:
            h.wait_list("nvidia.com/gpu", start=0, timeout=10, pred=lambda d: any(x["health"] == "Unhealthy" for x in d))
            print("restart=%s: Unhealthy delivered" % restart)
        except AssertionError as e:
            print("restart=%s: NOT delivered in 10 s" % restart)
        fx["gpus"][3]["lost"] = False; h.write_fixture(fx); time.sleep(3)
finally:
    h.close()
