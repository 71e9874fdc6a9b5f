# gpulet labels (GPU Feature Discovery compatible), issue 15.
# Unit tests: the label rules on hand-made nodes, the vGPU PCI capability reader.
gpulet_unit_test(labels_unit tests/unit/test_labels.c)

# Black-box: goldens per fixture x MIG strategy x sharing mode, each line checked against an
# independent model of GFD's rules; the config file, GFD's flags and env vars, the feature file.
gpulet_script_test(labels_golden /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_labels.py)
