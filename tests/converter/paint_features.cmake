# Painting features: colour matching across Loop/Scan/If, overflow seeds (pain 9) and
# the hardware-aware policy with the Cast budget (pain 13). Included from CMakeLists.txt.
add_executable(converter_paint_features_tests
  paint_features_test.cc
)
target_link_libraries(converter_paint_features_tests PRIVATE onnx_amp_converter onnx_amp_executor GTest::gtest_main)
target_compile_definitions(converter_paint_features_tests PRIVATE
  ONNX_AMP_MODELS_DIR="${PROJECT_SOURCE_DIR}/models")
target_compile_options(converter_paint_features_tests PRIVATE ${ONNX_AMP_WARNINGS})
gtest_discover_tests(converter_paint_features_tests DISCOVERY_TIMEOUT 60)

# `convert --hardware`: no float16 arithmetic on the target, so nothing is converted and
# no Cast is added; an unknown value names the flag.
add_test(NAME converter_hardware_flag
  COMMAND onnx-amp convert ${PROJECT_SOURCE_DIR}/models/resnet_block.onnx
          -o ${CMAKE_CURRENT_BINARY_DIR}/resnet_block_cpu_no_fp16.onnx --hardware cpu-no-fp16)
set_tests_properties(converter_hardware_flag PROPERTIES PASS_REGULAR_EXPRESSION "0 of 11 float nodes.*, 0 Casts inserted")
add_test(NAME converter_hardware_flag_error
  COMMAND onnx-amp convert ${PROJECT_SOURCE_DIR}/models/resnet_block.onnx
          -o ${CMAKE_CURRENT_BINARY_DIR}/resnet_block_bad_hardware.onnx --hardware gpu)
set_tests_properties(converter_hardware_flag_error PROPERTIES PASS_REGULAR_EXPRESSION "--hardware: unknown hardware 'gpu'")
