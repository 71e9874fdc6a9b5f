#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""fakenvml_pyhelper: tests/lib/fakenvml.py changes what the fake NVML answers (checked over ctypes)."""
import ctypes as C, os, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import fakenvml  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


class EventData(C.Structure):
    _fields_ = [("device", C.c_void_p), ("eventType", C.c_ulonglong), ("eventData", C.c_ulonglong),
                ("gpuInstanceId", C.c_uint), ("computeInstanceId", C.c_uint)]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        node = fakenvml.FakeNode(tmp, "dgx-a100")
        os.environ.update(node.env())
        nv = C.CDLL(fakenvml.LIBRARY)
        check(nv.nvmlInit_v2() == 0, "init")

        def handle(i):
            h = C.c_void_p()
            return nv.nvmlDeviceGetHandleByIndex_v2(i, C.byref(h)), h

        _, h3 = handle(3)
        u = C.c_uint()
        node.lose(3)
        check(nv.nvmlDeviceGetMinorNumber(h3, C.byref(u)) == 15, "lose(3): GPU_IS_LOST")
        node.recover(3)
        check(nv.nvmlDeviceGetMinorNumber(h3, C.byref(u)) == 0 and u.value == 3, "recover(3)")

        node.fail(1, "nvmlDeviceGetPowerUsage", "NOT_SUPPORTED")
        check(nv.nvmlDeviceGetPowerUsage(handle(1)[1], C.byref(u)) == 3, "fail(1, power)")
        node.telemetry(2, temperature_c=91)
        check(nv.nvmlDeviceGetTemperature(handle(2)[1], 0, C.byref(u)) == 0 and u.value == 91, "telemetry(2)")

        node.repartition(6, [node.mig_instance(7 + k, 0x0, [k, 1], "MIG-%08x-1111-4222-8333-444455556666" % k)
                             for k in range(7)])
        mig, n = C.c_void_p(), 0
        for i in range(7):
            n += nv.nvmlDeviceGetMigDeviceHandleByIndex(handle(6)[1], i, C.byref(mig)) == 0
        check(n == 7, "repartition(6): %d MIG devices" % n)

        s = C.c_void_p()
        nv.nvmlEventSetCreate(C.byref(s))
        check(nv.nvmlDeviceRegisterEvents(handle(0)[1], C.c_ulonglong(0x8), s) == 0, "register XID")
        node.xid(0, 79)
        e = EventData()
        check(nv.nvmlEventSetWait_v2(s, C.byref(e), 1000) == 0 and e.eventData == 79
              and e.gpuInstanceId == 0xFFFFFFFF, "xid(0, 79)")
        nv.nvmlEventSetFree(s)
        check(nv.nvmlShutdown() == 0, "shutdown")

        node.init_error("NO_PERMISSION")
        check(nv.nvmlInit_v2() == 4, "init_error(NO_PERMISSION)")
        node.init_error(None)
        check(nv.nvmlInit_v2() == 0, "init_error cleared")
        nv.nvmlShutdown()

        root = node.mkroot(os.path.join(tmp, "root"), "--no-sockets")
        check(os.path.exists(os.path.join(root, "etc/ld.so.cache")), "mkroot")
    print("fakenvml_pyhelper: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
