#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Build a fake NVIDIA node root for tests: tests/lib/mkroot.sh DEST FIXTURE [options]
# (device nodes, /proc/driver/nvidia, mig-minors, sysfs, driver libraries + ld.so.cache, firmware,
# sockets). See tests/lib/mkroot.py --help and tests/fakenvml/README.md.
exec /usr/bin/python3 "$(dirname "$0")/mkroot.py" "$@"
