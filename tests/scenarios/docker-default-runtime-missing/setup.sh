# daemon.json was hand-edited to make nvidia the default but its runtimes entry was left out: dockerd
# does not start, and no pod starts on this node.
. "$NODE_LIB"
docker_node '{"default-runtime": "nvidia", "exec-opts": ["native.cgroupdriver=systemd"]}'
