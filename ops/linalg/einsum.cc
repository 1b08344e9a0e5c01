// Einsum. Two-operand contractions of the batched-matmul kind (attention's
// "bhqd,bhkd->bhqk", "ij,jk", "bij,bkj->bik", ...) run as one oneDNN matrix product;
// everything else takes the general rule: every label is a loop, the output sums the
// product of the inputs over the labels it does not keep (explicit and implicit
// outputs, "..." with numpy broadcasting, repeated labels for diagonals, transposes,
// reductions), with float32 accumulation (float64 for float64).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ops/common/float_compute.h"
#include "ops/common/matmul_problem.h"
#include "ops/linalg/linalg_kernels.h"

namespace onnx_amp {
namespace {

// Labels are letters; the dims under "..." get labels 0, 1, ... (ellipsis_rank of them).
struct Term {
  std::vector<int> labels;
};

constexpr int kEllipsisBase = 0;
constexpr int kLetterBase = 64;

// Parses one term ("ab...c"); the ellipsis expands to `ellipsis_rank` labels, counted
// from the right as numpy does. Returns false on a malformed term.
bool ParseTerm(const std::string& text, int64_t rank, int& ellipsis_rank, Term& term, bool is_output) {
  int letters = 0;
  size_t dots = text.find("...");
  for (char ch : text) letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
  if (dots == std::string::npos) {
    if (!is_output && letters != rank) return false;
  } else if (!is_output) {
    const int this_rank = static_cast<int>(rank) - letters;
    if (this_rank < 0) return false;
    ellipsis_rank = std::max(ellipsis_rank, this_rank);
  }
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '.') {
      if (text.compare(i, 3, "...") != 0 || i != dots) return false;
      const int count = is_output ? ellipsis_rank : static_cast<int>(rank) - letters;
      // Right-aligned: an input with fewer ellipsis dims takes the last labels.
      for (int e = ellipsis_rank - count; e < ellipsis_rank; ++e) term.labels.push_back(kEllipsisBase + e);
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(ch))) {
      term.labels.push_back(kLetterBase + ch);
    } else if (ch != ' ') {
      return false;
    }
  }
  return true;
}

template <typename T>
Status RunEinsum(KernelContext& context, const std::vector<const Tensor*>& inputs, const std::vector<Term>& terms,
                 const Term& output, const std::map<int, int64_t>& sizes) {
  using Acc = ComputeType<T>;
  Shape out_shape;
  for (int label : output.labels) out_shape.push_back(sizes.at(label));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, inputs[0]->dtype(), out_shape));

  // Loop order: output labels, then the summed ones.
  std::vector<int> loop_labels = output.labels;
  for (const auto& [label, size] : sizes) {
    if (std::find(loop_labels.begin(), loop_labels.end(), label) == loop_labels.end()) loop_labels.push_back(label);
  }
  const size_t num_loops = loop_labels.size(), num_out = output.labels.size();
  std::vector<int64_t> extents(num_loops);
  for (size_t l = 0; l < num_loops; ++l) extents[l] = sizes.at(loop_labels[l]);
  // Element stride of each input along each loop label (repeated labels add up, which
  // walks the diagonal; broadcast dims of size 1 stay at stride 0).
  std::vector<std::vector<int64_t>> strides(inputs.size(), std::vector<int64_t>(num_loops, 0));
  for (size_t t = 0; t < inputs.size(); ++t) {
    const Shape& shape = inputs[t]->shape();
    int64_t stride = 1;
    for (int axis = static_cast<int>(shape.size()) - 1; axis >= 0; --axis) {
      const size_t l = std::find(loop_labels.begin(), loop_labels.end(), terms[t].labels[axis]) - loop_labels.begin();
      if (shape[axis] != 1) strides[t][l] += stride;
      stride *= shape[axis];
    }
  }
  int64_t out_count = 1, sum_count = 1;
  for (size_t l = 0; l < num_loops; ++l) (l < num_out ? out_count : sum_count) *= extents[l];

  T* out = y->data<T>();
  std::vector<int64_t> index(num_loops);
  for (int64_t o = 0; o < out_count; ++o) {
    int64_t rest = o;
    for (int l = static_cast<int>(num_out) - 1; l >= 0; --l) {
      index[l] = rest % extents[l];
      rest /= extents[l];
    }
    Acc sum = 0;
    for (int64_t s = 0; s < sum_count; ++s) {
      rest = s;
      for (int l = static_cast<int>(num_loops) - 1; l >= static_cast<int>(num_out); --l) {
        index[l] = rest % extents[l];
        rest /= extents[l];
      }
      Acc product = 1;
      for (size_t t = 0; t < inputs.size(); ++t) {
        int64_t offset = 0;
        for (size_t l = 0; l < num_loops; ++l) offset += index[l] * strides[t][l];
        product *= LoadValue(inputs[t]->data<T>()[offset]);
      }
      sum += product;
    }
    out[o] = StoreValue<T>(sum);
  }
  return Status::Ok();
}

// Copies `tensor` (axes labelled `labels`, each label once) into a dense tensor whose
// axes follow `order`; element bytes are moved as they are.
Tensor PermuteToLabels(const Tensor& tensor, const std::vector<int>& labels, const std::vector<int>& order,
                       const std::map<int, int64_t>& sizes) {
  Shape shape;
  for (int label : order) shape.push_back(sizes.at(label));
  Tensor out = Tensor::Empty(tensor.dtype(), shape);
  const size_t element = DTypeSize(tensor.dtype());
  std::vector<int64_t> in_strides(labels.size());
  for (int64_t axis = static_cast<int64_t>(labels.size()) - 1, stride = 1; axis >= 0; --axis) {
    in_strides[axis] = stride;
    stride *= tensor.shape()[axis];
  }
  std::vector<int64_t> strides(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    strides[i] = in_strides[std::find(labels.begin(), labels.end(), order[i]) - labels.begin()];
  }
  const char* src = static_cast<const char*>(tensor.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const int64_t count = out.num_elements();
  for (int64_t e = 0; e < count; ++e) {
    int64_t rest = e, offset = 0;
    for (int64_t i = static_cast<int64_t>(order.size()) - 1; i >= 0; --i) {
      offset += (rest % shape[i]) * strides[i];
      rest /= shape[i];
    }
    std::memcpy(dst + e * element, src + offset * element, element);
  }
  return out;
}

// Two-operand contractions in which every label is a batch label (both inputs and the
// output), an M label (A and output), an N label (B and output) or a K label (both
// inputs, summed), with no repeated or broadcast labels, run as one batched matrix
// product: A and B are permuted to [batch, M, K] and [batch, K, N], the product goes
// through ComputeMatMul (oneDNN, float32 accumulation), and C is permuted to the
// output order. Returns false, leaving everything untouched, for other equations.
Expected<bool> TryEinsumAsMatMul(KernelContext& context, const std::vector<const Tensor*>& inputs,
                                 const std::vector<Term>& terms, const Term& output,
                                 const std::map<int, int64_t>& sizes) {
  if (inputs.size() != 2) return false;
  const auto has = [](const std::vector<int>& labels, int label) {
    return std::find(labels.begin(), labels.end(), label) != labels.end();
  };
  const auto distinct = [](std::vector<int> labels) {
    std::sort(labels.begin(), labels.end());
    return std::adjacent_find(labels.begin(), labels.end()) == labels.end();
  };
  const std::vector<int>& a = terms[0].labels;
  const std::vector<int>& b = terms[1].labels;
  if (!distinct(a) || !distinct(b) || !distinct(output.labels)) return false;
  for (size_t t = 0; t < 2; ++t) {
    for (size_t axis = 0; axis < terms[t].labels.size(); ++axis) {
      if (inputs[t]->dim(static_cast<int64_t>(axis)) != sizes.at(terms[t].labels[axis])) return false;
    }
  }
  std::vector<int> batch, m, n, k;
  for (const auto& [label, size] : sizes) {
    const bool in_a = has(a, label), in_b = has(b, label), in_out = has(output.labels, label);
    if (in_a && in_b && in_out) batch.push_back(label);
    else if (in_a && in_out) m.push_back(label);
    else if (in_b && in_out) n.push_back(label);
    else if (in_a && in_b) k.push_back(label);
    else return false;  // summed over one input only
  }
  const auto product = [&](const std::vector<int>& labels) {
    int64_t total = 1;
    for (int label : labels) total *= sizes.at(label);
    return total;
  };
  const int64_t batches = product(batch), rows = product(m), cols = product(n), depth = product(k);
  std::vector<int> a_order = batch, b_order = batch, c_order = batch;
  a_order.insert(a_order.end(), m.begin(), m.end());
  a_order.insert(a_order.end(), k.begin(), k.end());
  b_order.insert(b_order.end(), k.begin(), k.end());
  b_order.insert(b_order.end(), n.begin(), n.end());
  c_order.insert(c_order.end(), m.begin(), m.end());
  c_order.insert(c_order.end(), n.begin(), n.end());
  const Tensor a_dense = PermuteToLabels(*inputs[0], a, a_order, sizes);
  const Tensor b_dense = PermuteToLabels(*inputs[1], b, b_order, sizes);
  MatMulProblem problem;
  problem.a_dims = {batches, rows, depth};
  problem.b_dims = {batches, depth, cols};
  problem.c_dims = {batches, rows, cols};
  problem.a_strides = DenseStrides(problem.a_dims);
  problem.b_strides = DenseStrides(problem.b_dims);
  Tensor c = Tensor::Empty(inputs[0]->dtype(), {batches, rows, cols});
  ONNX_AMP_RETURN_IF_ERROR(ComputeMatMul(context, problem, a_dense, b_dense, c, {}));
  Shape c_shape;
  for (int label : c_order) c_shape.push_back(sizes.at(label));
  const Tensor permuted = PermuteToLabels(c.Reshaped(c_shape), c_order, output.labels, sizes);
  Shape out_shape;
  for (int label : output.labels) out_shape.push_back(sizes.at(label));
  ONNX_AMP_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, inputs[0]->dtype(), out_shape));
  if (y->bytes() > 0) std::memcpy(y->raw_data(), permuted.raw_data(), y->bytes());
  return true;
}

}  // namespace

Status EinsumCpu(KernelContext& context) {
  std::string equation = context.attr_string("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < context.num_inputs(); ++i) {
    const Tensor* input = context.input(i);
    if (input == nullptr) return context.Error(ErrorCode::kInvalidModel, "Einsum input " + std::to_string(i) + " is absent");
    if (input->dtype() != context.input(0)->dtype()) return context.Error(ErrorCode::kInvalidModel, "inputs have different dtypes");
    inputs.push_back(input);
  }
  if (inputs.empty()) return context.Error(ErrorCode::kInvalidModel, "Einsum needs inputs");

  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> input_texts;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    input_texts.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (input_texts.size() != inputs.size()) {
    return context.Error(ErrorCode::kInvalidModel, "equation '" + equation + "' names " +
                                                       std::to_string(input_texts.size()) + " inputs, node has " +
                                                       std::to_string(inputs.size()));
  }
  int ellipsis_rank = 0;
  std::vector<Term> terms(inputs.size());
  // First pass finds the widest ellipsis, second pass labels it right-aligned.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t t = 0; t < inputs.size(); ++t) {
      terms[t].labels.clear();
      if (!ParseTerm(input_texts[t], inputs[t]->rank(), ellipsis_rank, terms[t], false)) {
        return context.Error(ErrorCode::kInvalidModel, "equation term '" + input_texts[t] + "' does not match input rank " +
                                                           std::to_string(inputs[t]->rank()));
      }
    }
  }
  std::map<int, int64_t> sizes;
  std::map<int, int> counts;
  for (size_t t = 0; t < inputs.size(); ++t) {
    for (size_t axis = 0; axis < terms[t].labels.size(); ++axis) {
      const int label = terms[t].labels[axis];
      const int64_t size = inputs[t]->dim(static_cast<int64_t>(axis));
      ++counts[label];
      auto [it, inserted] = sizes.emplace(label, size);
      if (inserted || it->second == size) continue;
      // Ellipsis dims broadcast; letters must agree.
      if (label < kLetterBase && (it->second == 1 || size == 1)) {
        it->second = std::max(it->second, size);
        continue;
      }
      return context.Error(ErrorCode::kInvalidModel, "equation '" + equation + "': a label has sizes " +
                                                         std::to_string(it->second) + " and " + std::to_string(size));
    }
  }
  Term output;
  if (arrow != std::string::npos) {
    if (!ParseTerm(equation.substr(arrow + 2), 0, ellipsis_rank, output, true)) {
      return context.Error(ErrorCode::kInvalidModel, "malformed output term in '" + equation + "'");
    }
    std::vector<int> seen;
    for (int label : output.labels) {
      if (!sizes.count(label)) return context.Error(ErrorCode::kInvalidModel, "output label not in any input: '" + equation + "'");
      if (std::find(seen.begin(), seen.end(), label) != seen.end()) {
        return context.Error(ErrorCode::kInvalidModel, "output repeats a label: '" + equation + "'");
      }
      seen.push_back(label);
    }
  } else {
    // Implicit output: the ellipsis dims, then the letters seen once, alphabetically.
    for (int e = 0; e < ellipsis_rank; ++e) output.labels.push_back(kEllipsisBase + e);
    for (const auto& [label, count] : counts) {
      if (label >= kLetterBase && count == 1) output.labels.push_back(label);
    }
  }
  if (inputs[0]->num_elements() > 0 && inputs.size() == 2 && inputs[1]->num_elements() > 0) {
    ONNX_AMP_ASSIGN_OR_RETURN(const bool done, TryEinsumAsMatMul(context, inputs, terms, output, sizes));
    if (done) return Status::Ok();
  }
  return DispatchFloat(context, inputs[0]->dtype(),
                       [&](auto tag) { return RunEinsum<decltype(tag)>(context, inputs, terms, output, sizes); });
}

}  // namespace onnx_amp
