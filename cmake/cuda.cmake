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
