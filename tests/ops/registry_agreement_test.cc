// The three registries of op knowledge agree: ops/ops.def (what each op is: its
// precision class and facts), the CPU kernel registry (ops/cpu_kernels.cc) and the
// gradient registry (ops/gradients.cc), and the ONNX schemas of our domain
// (ops/onnx_amp_schemas.cc) match our kernels. Each test names every op that breaks its
// rule, so one run shows everything a new op still misses.
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include "ops/gradients.h"
#include "ops/kernel_registry.h"
#include "ops/onnx_amp_schemas.h"
#include "ops/op_def.h"
#include "runtime/core/onnx_domain.h"

namespace onnx_amp {
namespace {

using OpKey = std::pair<std::string, std::string>;  // (canonical domain, op type)

std::string Name(const OpKey& op) { return std::string(DisplayDomain(op.first)) + ":" + op.second; }

std::string Names(const std::vector<OpKey>& ops) {
  std::string names;
  for (const OpKey& op : ops) names += (names.empty() ? "" : ", ") + Name(op);
  return names;
}

std::set<OpKey> CpuKernelOps() {
  std::set<OpKey> ops;
  for (const KernelDef* def : CpuKernelRegistry().All()) {
    ops.emplace(std::string(CanonicalDomain(def->domain)), std::string(def->op_type));
  }
  return ops;
}

// The ops.def rows by op, with their facts.
std::map<OpKey, uint32_t> OpsDefRows() {
  std::map<OpKey, uint32_t> rows;
  for (const OpFactsDef& def : AllOpFacts()) rows[{std::string(def.domain), std::string(def.name)}] = def.facts;
  return rows;
}

TEST(RegistryAgreement, OpsDefHasOneRowPerOp) {
  std::vector<OpKey> repeated;
  std::set<OpKey> seen;
  for (const OpFactsDef& def : AllOpFacts()) {
    OpKey op{std::string(def.domain), std::string(def.name)};
    if (!seen.insert(op).second) repeated.push_back(op);
  }
  EXPECT_TRUE(repeated.empty()) << "ops.def rows repeated: " << Names(repeated);
}

TEST(RegistryAgreement, EveryKernelHasAPrecisionClass) {
  std::vector<OpKey> unclassified;
  for (const OpKey& op : CpuKernelOps()) {
    if (FindOpPrecision(op.first, op.second) == nullptr) unclassified.push_back(op);
  }
  EXPECT_TRUE(unclassified.empty()) << "CPU kernels of ops without an ops.def row (add one, with its precision "
                                       "class and the numeric reason): "
                                    << Names(unclassified);
}

TEST(RegistryAgreement, EveryClassifiedOpHasAKernelUnlessMarkedNoKernel) {
  const std::set<OpKey> kernels = CpuKernelOps();
  std::vector<OpKey> missing, wrongly_marked;
  for (const auto& [op, facts] : OpsDefRows()) {
    const bool has_kernel = kernels.count(op) != 0;
    const bool marked = (facts & op_facts::kNoKernel) != 0;
    if (!has_kernel && !marked) missing.push_back(op);
    if (has_kernel && marked) wrongly_marked.push_back(op);
  }
  EXPECT_TRUE(missing.empty()) << "ops.def rows without a CPU kernel (register one in the family's "
                                  "Register<Family>CpuKernels, or mark the row kNoKernel): "
                               << Names(missing);
  EXPECT_TRUE(wrongly_marked.empty()) << "ops.def rows marked kNoKernel that have a CPU kernel: "
                                      << Names(wrongly_marked);
}

TEST(RegistryAgreement, EveryTrainableOpHasAGradientRuleAndNoOtherDoes) {
  std::set<OpKey> rules;
  for (const OpKey& op : AllGradientRules().Ops()) rules.insert(op);
  const std::map<OpKey, uint32_t> rows = OpsDefRows();
  std::vector<OpKey> without_rule, unmarked, unknown;
  for (const auto& [op, facts] : rows) {
    const bool trainable = (facts & op_facts::kTrainable) != 0;
    if (trainable && rules.count(op) == 0) without_rule.push_back(op);
    if (!trainable && rules.count(op) != 0) unmarked.push_back(op);
  }
  for (const OpKey& op : rules) {
    if (rows.count(op) == 0) unknown.push_back(op);
  }
  EXPECT_TRUE(without_rule.empty()) << "ops.def rows marked kTrainable without a gradient rule (write it in "
                                       "ops/<family>/<family>_grad.cc): "
                                    << Names(without_rule);
  EXPECT_TRUE(unmarked.empty()) << "gradient rules of ops.def rows not marked kTrainable: " << Names(unmarked);
  EXPECT_TRUE(unknown.empty()) << "gradient rules of ops without an ops.def row: " << Names(unknown);
}

TEST(RegistryAgreement, EveryOnnxAmpKernelHasASchemaAndEverySchemaAKernel) {
  RegisterOnnxAmpOpSchemas();
  const std::string domain(kOnnxAmpDomain);
  const std::set<OpKey> kernels = CpuKernelOps();
  std::vector<OpKey> without_schema, without_kernel;
  for (const OpKey& op : kernels) {
    if (op.first == domain && onnx::OpSchemaRegistry::Schema(op.second, 1, domain) == nullptr) {
      without_schema.push_back(op);
    }
  }
  for (const onnx::OpSchema& schema : onnx::OpSchemaRegistry::get_all_schemas()) {
    OpKey op{schema.domain(), schema.Name()};
    if (op.first == domain && kernels.count(op) == 0) without_kernel.push_back(op);
  }
  EXPECT_TRUE(without_schema.empty()) << "kernels of domain " << domain << " without a schema (list it in the "
                                         "family's <Family>OnnxAmpSchemas): "
                                      << Names(without_schema);
  EXPECT_TRUE(without_kernel.empty()) << "schemas of domain " << domain << " without a CPU kernel: "
                                      << Names(without_kernel);
}

}  // namespace
}  // namespace onnx_amp
