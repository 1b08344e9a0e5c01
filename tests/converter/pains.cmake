# Tests owned by one area of the converter; included from CMakeLists.txt.
# The known failures of existing converters (converter-anchors (d)), one test each,
# named P01_... after the pain they pin down.
add_executable(converter_pains_tests pains_test.cc)
target_link_libraries(converter_pains_tests PRIVATE onnx_amp_converter onnx_amp_search GTest::gtest_main)
target_compile_options(converter_pains_tests PRIVATE ${ONNX_AMP_WARNINGS})
gtest_discover_tests(converter_pains_tests TEST_PREFIX "converter_pains." DISCOVERY_TIMEOUT 60)

# The pains whose test runs the converted model in ONNX Runtime against float32.
add_test(NAME converter_pains_ort
  COMMAND ${ONNX_AMP_TEST_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/pains_ort_test.py
          --cli $<TARGET_FILE:onnx-amp>)
set_tests_properties(converter_pains_ort PROPERTIES TIMEOUT 600)
