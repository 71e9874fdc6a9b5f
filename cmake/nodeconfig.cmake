# src/nodeconfig: per-node configs as NVIDIA's config-manager has them (issue 32 item 2): the choice,
# the symlink, the process signalled, the kept command line's file chosen per parse (unit); the plugin,
# labels and config-manager on the real API server are tests/k8s/test_k8s_node_config.py.
gpulet_unit_test(nodeconfig tests/unit/test_nodeconfig.c)
