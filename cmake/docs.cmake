# Docs that cannot drift: docs/HACKING.md's layer table, printing/logging rules and the names it mentions
# against src/ (tests/integration/test_docs.py).
gpulet_script_test(docs_hacking /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_docs.py)
