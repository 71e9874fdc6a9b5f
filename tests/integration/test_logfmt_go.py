#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpulet's log lines read back by go-logfmt itself (test util_log_golang).

util_log (tests/unit/test_log.c) logs values with spaces, quotes, backslashes, '=', control bytes and
UTF-8 under a bare, a quoted and a two-part key, and with GPULET_LOGFMT_SAMPLES set writes each line
and the value it logged. A small Go program, built here in GOPATH mode against Debian's
golang-github-go-logfmt-logfmt-dev (the decoder Go log pipelines use; docs/reference/logging.md),
decodes every line and must get each value back exactly.
"""
import os
import shutil
import subprocess
import sys
import tempfile

GOPATH = "/usr/share/gocode"
PKG = "github.com/go-logfmt/logfmt"
BUILD = os.environ.get("GPULET_BUILD") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")

GO_MAIN = r'''package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/go-logfmt/logfmt"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "L ")
		if !sc.Scan() {
			fmt.Println("sample without its value")
			os.Exit(1)
		}
		want, err := hex.DecodeString(strings.TrimPrefix(sc.Text(), "W "))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		got := map[string]string{}
		d := logfmt.NewDecoder(strings.NewReader(line))
		for d.ScanRecord() {
			for d.ScanKeyval() {
				got[string(d.Key())] = string(d.Value())
			}
		}
		if d.Err() != nil {
			fmt.Printf("go-logfmt cannot read %q: %v\n", line, d.Err())
			os.Exit(1)
		}
		w := string(want)
		exp := map[string]string{"msg": "round trip", "uuid": "GPU-1", "index": "3", "bare": w, "quoted": w,
			"mixed": w + "/" + w}
		for k, v := range exp {
			if got[k] != v {
				fmt.Printf("%s: go-logfmt reads %q, gpulet logged %q\n  line: %s\n", k, got[k], v, line)
				os.Exit(1)
			}
		}
		n++
	}
	fmt.Printf("%d lines read back exactly\n", n)
}
'''


def main():
    if not shutil.which("go"):
        print("FAIL: go not found: install golang-go")
        return 1
    if not os.path.isdir(os.path.join(GOPATH, "src", PKG)):
        print("FAIL: go-logfmt is missing: install golang-github-go-logfmt-logfmt-dev")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        samples = os.path.join(tmp, "samples.txt")
        r = subprocess.run([os.path.join(BUILD, "util_log")], env=dict(os.environ, GPULET_LOGFMT_SAMPLES=samples),
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or not os.path.exists(samples):
            print("FAIL: util_log:", r.stdout, r.stderr)
            return 1
        src = os.path.join(tmp, "gosrc")
        os.makedirs(src)
        with open(os.path.join(src, "main.go"), "w") as f:
            f.write(GO_MAIN)
        exe = os.path.join(tmp, "logfmt-read")
        env = dict(os.environ, GO111MODULE="off", GOPATH=GOPATH, GOCACHE=os.path.join(tmp, "gocache"), GOFLAGS="")
        r = subprocess.run(["go", "build", "-o", exe, "main.go"], cwd=src, env=env, capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            print("FAIL: building the go-logfmt reader:", r.stderr)
            return 1
        r = subprocess.run([exe, samples], capture_output=True, text=True, timeout=60)
        print(r.stdout.strip())
        if r.returncode != 0 or "read back exactly" not in r.stdout:
            print("FAIL")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
