#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""oci.py LAYOUT ROOTFS REF CREATED [LABEL=VALUE...]: an OCI image layout (image-spec v1.1) of images of one
uncompressed layer each, written so that the same rootfs tars and arguments give the same bytes, hence the
same config digests (podman's image ID), manifest and index digests: JSON with sorted keys and no spaces,
the config's `created` and its history's from CREATED (SOURCE_DATE_EPOCH as RFC 3339), nothing from the
build host. ROOTFS is a tar (amd64) or ARCH=TAR[,ARCH=TAR...]: with more than one, REF names an image
index of them, each manifest with its platform. Prints the first image's manifest and config digests,
then the index's. deploy/image/build.sh runs it; `podman pull oci:LAYOUT:REF` loads the host's image and
`skopeo copy --all oci:LAYOUT:REF docker://...` pushes the index."""
import hashlib
import json
import os
import shutil
import sys

# gpulet's chart names its verb (command: /usr/bin/gpulet VERB); manifests written for NVIDIA's images
# start the image without a command or with flags only, which `gpulet entrypoint` maps to the operand
# (docs/reference/operator.md §2). The NVIDIA_* variables are those NVIDIA's device-plugin and
# dcgm-exporter images carry, so the nvidia runtime gives NVML to a container that does not set them
# (the GPU Operator's GFD and exporter containers); no shell.
ENTRYPOINT = ["/usr/bin/gpulet", "entrypoint"]
CMD = []
ENV = ["PATH=/usr/bin", "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
       "NVIDIA_DISABLE_REQUIRE=true"]


def dumps(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def blob(layout, data=None, path=None):
    """Store bytes (or a file) as a blob; returns (digest, size)."""
    h = hashlib.sha256()
    if path:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        size = os.path.getsize(path)
    else:
        h.update(data)
        size = len(data)
    digest = "sha256:" + h.hexdigest()
    dst = os.path.join(layout, "blobs", "sha256", h.hexdigest())
    if path:
        shutil.copyfile(path, dst)
    else:
        with open(dst, "wb") as f:
            f.write(data)
    return digest, size


# OCI image-spec platforms of the architectures built (Go's GOARCH names; arm64 images say variant v8)
PLATFORMS = {"amd64": {"architecture": "amd64", "os": "linux"},
             "arm64": {"architecture": "arm64", "os": "linux", "variant": "v8"}}


def image(layout, arch, rootfs, created, labels):
    """One image: its layer, config and manifest blobs; returns (manifest descriptor, config digest)."""
    layer, layer_size = blob(layout, path=rootfs)
    config = dict(PLATFORMS[arch], created=created,
                  config={"Entrypoint": ENTRYPOINT, "Cmd": CMD, "Env": ENV, "Labels": labels},
                  rootfs={"type": "layers", "diff_ids": [layer]},
                  history=[{"created": created, "created_by": "deploy/image/build.sh"}])
    cfg, cfg_size = blob(layout, dumps(config))
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": cfg_size},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer,
                            "size": layer_size}],
                "annotations": {k: v for k, v in labels.items() if k.startswith("org.opencontainers.image.")}}
    man, man_size = blob(layout, dumps(manifest))
    return {"mediaType": manifest["mediaType"], "digest": man, "size": man_size, "platform": PLATFORMS[arch]}, cfg


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    layout, rootfs, ref, created = argv[:4]
    labels = dict(a.split("=", 1) for a in argv[4:])
    tars = [part.split("=", 1) if "=" in part else ("amd64", part) for part in rootfs.split(",")]
    shutil.rmtree(layout, ignore_errors=True)
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    images = [image(layout, arch, path, created, labels) for arch, path in tars]
    out = [images[0][0]["digest"], images[0][1]]
    if len(images) == 1:  # one image: the layout names its manifest, as before there was an index
        top = dict(images[0][0])
        del top["platform"]
    else:
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                 "manifests": [desc for desc, _ in images],
                 "annotations": {k: v for k, v in labels.items() if k.startswith("org.opencontainers.image.")}}
        digest, size = blob(layout, dumps(index))
        top = {"mediaType": index["mediaType"], "digest": digest, "size": size}
        out.append(digest)
    top["annotations"] = {"org.opencontainers.image.ref.name": ref}
    layout_index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [top]}
    with open(os.path.join(layout, "index.json"), "wb") as f:
        f.write(dumps(layout_index))
    with open(os.path.join(layout, "oci-layout"), "wb") as f:
        f.write(dumps({"imageLayoutVersion": "1.0.0"}))
    print(*out)


if __name__ == "__main__":
    main(sys.argv[1:])
