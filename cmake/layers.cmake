# The layers of the tree and what each may use, bottom to top (README, "Architecture").
# A layer may include the headers of, and link, only the layers it names after USES and
# theirs in turn. CMake checks every library's links and sources against this table
# (onnx_amp_check_layers, called last by the top-level CMakeLists.txt) and
# `tools/check-structure layers`, run by the tests, checks every #include. Tests,
# benchmarks and fuzz targets sit above everything and may use any layer.
#
#   onnx_amp_layer(NAME PATHS folders-or-files... [USES layers...])
# The library of layer NAME is onnx_amp_NAME (the CLI's is the onnx-amp executable); a
# path is a folder or a file, and the longest path that holds a file names its layer.
onnx_amp_layer(core PATHS runtime/core)
onnx_amp_layer(op_defs PATHS ops/ops.def ops/op_def.h USES core)
onnx_amp_layer(onnx PATHS runtime/onnx USES core)
onnx_amp_layer(io PATHS runtime/io USES onnx)
onnx_amp_layer(graph PATHS runtime/graph USES onnx op_defs)
onnx_amp_layer(cuda PATHS runtime/cuda USES exec)
onnx_amp_layer(exec PATHS runtime/exec USES core)
onnx_amp_layer(ops PATHS ops USES exec cuda graph io op_defs)
onnx_amp_layer(executor PATHS runtime/executor USES ops)
onnx_amp_layer(autodiff PATHS runtime/autodiff USES ops)
onnx_amp_layer(validate PATHS runtime/validate USES executor)
onnx_amp_layer(train PATHS runtime/train USES executor autodiff)
onnx_amp_layer(converter PATHS converter USES graph io op_defs)
onnx_amp_layer(search PATHS converter/search USES converter validate)
onnx_amp_layer(dist PATHS runtime/dist USES train)
# The CUDA backend library (runtime/exec/cuda_backend.h): the CUDA device, kernels and NCCL.
onnx_amp_layer(cuda_backend PATHS runtime/cuda/backend USES ops cuda dist)
onnx_amp_layer(cli PATHS tools/onnx-amp USES search train dist)
