# Tests owned by one area of the converter; included from CMakeLists.txt.

# The ONNX backend test data converted under every policy (checker, I/O, idempotence).
add_executable(converter_backend_suite_tests backend_suite_test.cc)
target_link_libraries(converter_backend_suite_tests PRIVATE onnx_amp_converter GTest::gtest_main)
target_compile_options(converter_backend_suite_tests PRIVATE ${ONNX_AMP_WARNINGS})
target_compile_definitions(converter_backend_suite_tests PRIVATE
  ONNX_AMP_BACKEND_TEST_DATA="${ONNX_AMP_BACKEND_TEST_DATA}"
  ONNX_AMP_BACKEND_SUITE_FLOOR="${CMAKE_CURRENT_SOURCE_DIR}/backend_suite_floor.json")
gtest_discover_tests(converter_backend_suite_tests DISCOVERY_TIMEOUT 60 TEST_PREFIX "converter_backend."
  PROPERTIES TIMEOUT 300)

# The same models converted by the CLI and run in ONNX Runtime against float32.
add_test(NAME converter_backend_ort
  COMMAND ${ONNX_AMP_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/backend_ort_test.py
          --cli $<TARGET_FILE:onnx-amp>
          --data ${ONNX_AMP_BACKEND_TEST_DATA})
set_tests_properties(converter_backend_ort PROPERTIES TIMEOUT 900)
