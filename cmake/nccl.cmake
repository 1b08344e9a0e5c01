# NCCL for the GPU all-reduce (runtime/dist/nccl_communicator.*), in CUDA builds only.
# tools/install-deps unpacks the pinned PyPI wheel nvidia-nccl-cu13 into
# ${ONNX_AMP_DEPS_DIR}/nccl-<version>; an NCCL next to the CUDA toolkit is the fallback.
# Sets ONNX_AMP_WITH_NCCL and the imported target onnx_amp::nccl.
set(ONNX_AMP_NCCL_VERSION 2.28.9)  # tools/install-deps pins the same
set(ONNX_AMP_WITH_NCCL OFF)
if(ONNX_AMP_WITH_CUDA)
  set(_nccl_wheel "${ONNX_AMP_DEPS_DIR}/nccl-${ONNX_AMP_NCCL_VERSION}/nvidia/nccl")
  find_path(ONNX_AMP_NCCL_INCLUDE_DIR nccl.h HINTS "${_nccl_wheel}/include" ${CUDAToolkit_INCLUDE_DIRS})
  # The wheel ships only libnccl.so.2: NAMES_PER_DIR keeps its folder ahead of a system libnccl.so.
  find_library(ONNX_AMP_NCCL_LIBRARY NAMES libnccl.so.2 nccl NAMES_PER_DIR
               HINTS "${_nccl_wheel}/lib" ${CUDAToolkit_LIBRARY_DIR})
  if(NOT ONNX_AMP_NCCL_INCLUDE_DIR OR NOT ONNX_AMP_NCCL_LIBRARY)
    message(FATAL_ERROR "The CUDA build needs NCCL ${ONNX_AMP_NCCL_VERSION}: run tools/install-deps "
                        "(or configure with -DONNX_AMP_CUDA=OFF)")
  endif()
  add_library(onnx_amp::nccl UNKNOWN IMPORTED)
  set_target_properties(onnx_amp::nccl PROPERTIES
    IMPORTED_LOCATION "${ONNX_AMP_NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ONNX_AMP_NCCL_INCLUDE_DIR}")
  set(ONNX_AMP_WITH_NCCL ON)
  message(STATUS "onnx-amp: NCCL ${ONNX_AMP_NCCL_LIBRARY}")
endif()
