#!/usr/bin/python3
"""The real programs of a Kubernetes node, built (or fetched) by the tests, cached outside the clone.

    peers.py [NAME...]     build the named peers (all by default) and print their binaries

kubelet and kube-apiserver (and kube-scheduler and kube-controller-manager) come from k8s.io/kubernetes 1.34 (the last release that runs on cgroup v1,
which our CI machines have), built through a throwaway module that requires it and replaces every
staging module k8s.io/* by the same release's v0.34 tag (k8s.io/kubernetes points them at local
directories, and a dependency's replace lines are ignored by Go). etcd and containerd (with its CRI
plugin and CDI) are their own Go modules; crictl comes from cri-tools. runc is Debian's (.ci/packages.txt).
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import gopeers  # noqa: E402

K8S_VERSION = "v1.34.4"
STAGING_VERSION = "v0.34.4"
STAGING = ("api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider "
           "cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api "
           "cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms "
           "kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics "
           "mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller").split()


def _k8s_ldflags():
    major, minor = K8S_VERSION[1:].split(".")[:2]
    v = "k8s.io/component-base/version"
    return " ".join(["-s", "-w", "-X %s.gitVersion=%s" % (v, K8S_VERSION), "-X %s.gitMajor=%s" % (v, major),
                     "-X %s.gitMinor=%s" % (v, minor), "-X %s.gitTreeState=clean" % v])


def _k8s_replace():
    return [("k8s.io/" + m, "k8s.io/%s %s" % (m, STAGING_VERSION)) for m in STAGING]


def kubernetes():
    return gopeers.build("kubernetes", "k8s.io/kubernetes", K8S_VERSION,
                         ["k8s.io/kubernetes/cmd/kubelet", "k8s.io/kubernetes/cmd/kube-apiserver"],
                         replace=_k8s_replace(), ldflags=_k8s_ldflags())


def kubernetes_control():
    """kube-scheduler (its DynamicResources plugin is DRA's only allocator) and kube-controller-manager
    (the resourceclaim controller makes claims from templates), from the same release as kubelet and
    kube-apiserver; their own cache entry, so adding them rebuilds nothing of the others."""
    return gopeers.build("kubernetes-control", "k8s.io/kubernetes", K8S_VERSION,
                         ["k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes/cmd/kube-controller-manager"],
                         replace=_k8s_replace(), ldflags=_k8s_ldflags())


def etcd():
    return gopeers.build("etcd", "go.etcd.io/etcd/server/v3", "v3.6.17", ["go.etcd.io/etcd/server/v3"],
                         ldflags="-s -w")


def containerd():
    return gopeers.build("containerd", "github.com/containerd/containerd/v2", "v2.2.9",
                         ["github.com/containerd/containerd/v2/cmd/containerd",
                          "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
                          "github.com/containerd/containerd/v2/cmd/ctr"],
                         tags=["no_btrfs", "no_devmapper", "no_zfs"], ldflags="-s -w")


def crictl():
    return gopeers.build("crictl", "sigs.k8s.io/cri-tools", "v1.34.0", ["sigs.k8s.io/cri-tools/cmd/crictl"])


def runc():
    path = shutil.which("runc")
    if not path:
        raise gopeers.GoBuildError("runc is not installed (Debian package runc, .ci/packages.txt)")
    return {"runc": path}


PEERS = {"kubernetes": kubernetes, "kubernetes-control": kubernetes_control, "etcd": etcd, "containerd": containerd, "crictl": crictl, "runc": runc}


def all_peers():
    bins = {}
    for f in PEERS.values():
        bins.update(f())
    return bins


def main(argv):
    bins = {}
    for name in argv[1:] or list(PEERS):
        bins.update(PEERS[name]())
    for b, path in sorted(bins.items()):
        print("%s\t%s" % (b, path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
