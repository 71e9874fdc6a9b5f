#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Print the AllocResp kubelet keeps in kubelet_internal_checkpoint for one container: Go's
encoding/json writes the []byte of a marshalled v1beta1.ContainerAllocateResponse as base64.
Protobuf wire format written by hand here (independent of the protobuf-c decoder under test):
envs = 1 (map<string,string>, entries key = 1 / value = 2), mounts = 2 (container_path = 1,
host_path = 2), annotations = 4 (map), cdi_devices = 5 (CDIDevice name = 1).
usage: allocresp.py [env KEY=VALUE] [mount CONTAINER_PATH] [annotation KEY=VALUE] [cdi NAME] ..."""
import base64, sys


def ld(field, payload):
    n, out = len(payload), bytearray([field << 3 | 2])
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out) + payload


def kv(field, text):
    k, v = text.split("=", 1)
    return ld(field, ld(1, k.encode()) + ld(2, v.encode()))


def main(argv):
    msg = b""
    for what, val in zip(argv[::2], argv[1::2]):
        if what == "env":
            msg += kv(1, val)
        elif what == "mount":
            msg += ld(2, ld(1, val.encode()) + ld(2, b"/dev/null"))
        elif what == "annotation":
            msg += kv(4, val)
        elif what == "cdi":
            msg += ld(5, ld(1, val.encode()))
        else:
            sys.exit(f"allocresp.py: unknown field {what}")
    print(base64.b64encode(msg).decode())


if __name__ == "__main__":
    main(sys.argv[1:])
