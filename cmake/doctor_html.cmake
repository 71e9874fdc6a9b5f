# The doctor's verdict as a page (src/doctor/html.c): escaping and link states, then the page drawn by a real
# headless Chromium (Debian's chromium) with its links' colours read back from the screenshot.
gpulet_unit_test(doctor_html_unit tests/unit/test_doctor_html.c)
gpulet_script_test(doctor_html /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tests/integration/test_doctor_html.py)
set_tests_properties(doctor_html PROPERTIES TIMEOUT 300)
