// NameMap (runtime/onnx/name_map.h) against std::unordered_map: the same entries after
// insertions that grow it and erasures that shift probe runs back.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/onnx/name_map.h"

namespace onnx_amp {
namespace {

TEST(NameMapTest, FindsWhatItHoldsAfterGrowingAndErasing) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("value_" + std::to_string(i));
  names.push_back("");  // an empty name is a name too
  NameMap<int> map;
  std::map<std::string_view, int> expected;
  std::mt19937 random(7);
  for (int step = 0; step < 40000; ++step) {
    const std::string_view name = names[random() % names.size()];
    if (random() % 3 == 0) {
      auto it = map.find(name);
      ASSERT_EQ(it != map.end(), expected.count(name) > 0) << name;
      if (it != map.end()) map.erase(it);
      expected.erase(name);
      continue;
    }
    auto [it, added] = map.try_emplace(name);
    ASSERT_EQ(added, expected.count(name) == 0) << name;
    if (added) it->second = step;
    expected.try_emplace(name, step);
  }
  ASSERT_EQ(map.size(), expected.size());
  for (const std::string& name : names) {
    auto it = map.find(name);
    ASSERT_EQ(it != map.end(), expected.count(name) > 0) << name;
    if (it != map.end()) {
      EXPECT_EQ(it->second, expected.at(name)) << name;
    }
  }
  std::map<std::string_view, int> iterated;
  for (const auto& [name, value] : map) iterated.emplace(name, value);
  EXPECT_EQ(iterated, expected);
}

TEST(NameMapTest, EmptyMapFindsNothingAndAtThrows) {
  NameMap<int> map;
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.find("x"), map.end());
  EXPECT_EQ(map.count("x"), 0u);
  EXPECT_THROW(map.at("x"), std::out_of_range);
  map.reserve(100);
  EXPECT_EQ(map.begin(), map.end());
  map.try_emplace("x").first->second = 3;
  EXPECT_EQ(map.at("x"), 3);
  EXPECT_EQ(map.count("x"), 1u);
}

}  // namespace
}  // namespace onnx_amp
