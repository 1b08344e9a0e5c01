# Instrumented builds, each in a build folder of its own (tools/run-tests --sanitize and
# tools/fuzz use build-sanitize/):
#   ONNX_AMP_SANITIZE  AddressSanitizer + UndefinedBehaviorSanitizer on every target, at
#                      -O0: clang compiles the template-heavy kernels 3.5x faster than at
#                      -O1 (7.0 s vs 24.6 s of CPU for ops/elementwise/compare_cpu.cc; g++
#                      -O3 takes 9.6 s), which keeps the CI run in budget; any report
#                      aborts the process, so a test with one fails.
#   ONNX_AMP_FUZZ      the libFuzzer targets of tests/fuzz (clang only; implies SANITIZE):
#                      every target also gets libFuzzer's coverage instrumentation.
option(ONNX_AMP_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(ONNX_AMP_FUZZ "Build the libFuzzer targets (clang; implies ONNX_AMP_SANITIZE)" OFF)

if(ONNX_AMP_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ONNX_AMP_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(ONNX_AMP_SANITIZE ON)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(ONNX_AMP_SANITIZE)
  set(onnx_amp_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all)
  add_compile_options(${onnx_amp_sanitizers} -fno-omit-frame-pointer -O0 -g)
  add_link_options(${onnx_amp_sanitizers})
endif()
