# Resolves ONNX_AMP_CUDA (AUTO|ON|OFF) into ONNX_AMP_WITH_CUDA.
set(ONNX_AMP_WITH_CUDA OFF)
if(NOT ONNX_AMP_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(ONNX_AMP_NVCC nvcc HINTS "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin)
    if(ONNX_AMP_NVCC)
      set(CMAKE_CUDA_COMPILER "${ONNX_AMP_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)  # Ampere and Hopper Tensor Cores
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # the newest dialect CMake 3.25 knows for nvcc
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    # cuDNN 9 sits next to the toolkit's libraries (it has no CMake package of its own).
    find_library(ONNX_AMP_CUDNN_LIBRARY cudnn HINTS "${CUDAToolkit_LIBRARY_DIR}" REQUIRED)
    find_path(ONNX_AMP_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)
    add_library(onnx_amp_cudnn INTERFACE)
    target_link_libraries(onnx_amp_cudnn INTERFACE "${ONNX_AMP_CUDNN_LIBRARY}")
    target_include_directories(onnx_amp_cudnn SYSTEM INTERFACE "${ONNX_AMP_CUDNN_INCLUDE}")
    # Every CUDA source and the C++ sources of the CUDA libraries build with warnings as
    # errors. --expt-relaxed-constexpr lets device code call the constexpr std::
    # functions the shared per-element math uses (numeric_limits).
    set(ONNX_AMP_CUDA_OPTIONS
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings --expt-relaxed-constexpr
        -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter,-Werror>
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Werror>)
    set(ONNX_AMP_WITH_CUDA ON)
  elseif(ONNX_AMP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ONNX_AMP_CUDA=ON but no CUDA compiler was found (set CUDA_HOME or CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "onnx-amp: CUDA backend ${ONNX_AMP_WITH_CUDA}")

# Makes executable `target` a host of the CUDA backend library (runtime/exec/cuda_backend.h),
# which it loads with dlopen instead of linking the CUDA libraries. The library resolves its
# undefined symbols against the executable, so the executable exports its symbols and
# carries every object of the layers the CUDA code builds on, including the host-side parts
# only the CUDA code calls (the caching pool, the GEMM and convolution cache keys). It builds
# with the library, which lands next to it in bin/.
function(onnx_amp_host_cuda_backend target)
  set_target_properties(${target} PROPERTIES ENABLE_EXPORTS ON)
  target_link_options(${target} PRIVATE "LINKER:--whole-archive"
    "$<TARGET_FILE:onnx_amp_core>" "$<TARGET_FILE:onnx_amp_exec>" "$<TARGET_FILE:onnx_amp_ops>"
    "LINKER:--no-whole-archive")
  add_dependencies(${target} onnx_amp_cuda_backend)
endfunction()
