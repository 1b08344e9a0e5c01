# Tests owned by one area of the converter; included from CMakeLists.txt.
# Streaming conversion of external-data models (converter-anchors (d) pain 8). The
# large test writes a 2.5 GiB model into the temp folder, converts it with the CLI in a
# child process and reads both back (about 10-30 s, mostly disk); label "large", so
# `ctest -LE large` skips it.
add_executable(converter_streaming_tests streaming_test.cc)
target_link_libraries(converter_streaming_tests PRIVATE onnx_amp_converter GTest::gtest_main)
target_compile_options(converter_streaming_tests PRIVATE ${ONNX_AMP_WARNINGS})
target_compile_definitions(converter_streaming_tests PRIVATE ONNX_AMP_CLI="$<TARGET_FILE:onnx-amp>")
add_dependencies(converter_streaming_tests onnx-amp)
gtest_discover_tests(converter_streaming_tests TEST_PREFIX "converter_streaming." DISCOVERY_TIMEOUT 60
  TEST_FILTER "-ConverterPains.*")
gtest_discover_tests(converter_streaming_tests TEST_PREFIX "converter_streaming." DISCOVERY_TIMEOUT 60
  TEST_FILTER "ConverterPains.*" PROPERTIES LABELS large TIMEOUT 300)
