# NVIDIA's shared v1 config file (src/nvconfig): the walker over a reader's own rows, what one reader
# passes over that another takes, the sharing rules, places in messages.
gpulet_unit_test(nvconfig_unit tests/unit/test_nvconfig.c)
