// The case tables (case_table.cpp) as value-parameterised tests: Table/Forward.<case> and Table/Backward.<case>,
// each on every backend this binary was built for.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "case_table.h"
#include "checks.h"

namespace ort {
namespace {

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name(); }

class Forward : public ::testing::TestWithParam<Case> {};
class Backward : public ::testing::TestWithParam<Case> {};

TEST_P(Forward, MatchesReference) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  std::string why;
  if (!check_forward_case(GetParam(), &why)) GTEST_SKIP() << why;
}

TEST_P(Backward, MatchesReferenceAndFiniteDifferences) {
  SCOPED_TRACE(::testing::PrintToString(GetParam()));
  std::string why;
  if (!check_backward_case(GetParam(), &why)) GTEST_SKIP() << why;
}

INSTANTIATE_TEST_SUITE_P(Table, Forward, ::testing::ValuesIn(forward_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Table, Backward, ::testing::ValuesIn(backward_cases()), case_name);

}  // namespace
}  // namespace ort

namespace ort {
namespace {

bool no_1_with_2(int f1, int v1, int f2, int v2) {
  // factor 0 value 1 never meets factor 2 value 2 (a constraint like "projection needs an LSTM")
  return !(f1 == 0 && v1 == 1 && f2 == 2 && v2 == 2);
}

TEST(CaseTable, AllPairsCoverEveryAdmissiblePair) {
  const std::vector<int> domains = {2, 4, 3, 5, 2, 3};
  const auto rows = all_pairs(domains, no_1_with_2, 7);
  for (const auto& r : rows) EXPECT_FALSE(r[0] == 1 && r[2] == 2) << "a row breaks the constraint";
  for (size_t f1 = 0; f1 < domains.size(); ++f1)
    for (size_t f2 = f1 + 1; f2 < domains.size(); ++f2)
      for (int v1 = 0; v1 < domains[f1]; ++v1)
        for (int v2 = 0; v2 < domains[f2]; ++v2) {
          if (!no_1_with_2(static_cast<int>(f1), v1, static_cast<int>(f2), v2)) continue;
          bool seen = false;
          for (const auto& r : rows) seen = seen || (r[f1] == v1 && r[f2] == v2);
          EXPECT_TRUE(seen) << "pair (" << f1 << "=" << v1 << ", " << f2 << "=" << v2 << ") not covered";
        }
  // A greedy cover is far smaller than the product (4 * 5 = 20 is the floor here).
  EXPECT_LE(rows.size(), 30u);
}

TEST(CaseTable, SizesAndUniqueNames) {
  const auto f = forward_cases(), b = backward_cases();
  const size_t nb = compiled_backends().size();
  std::printf("case tables: %zu forward, %zu backward (%zu backend(s))\n", f.size(), b.size(), nb);
  EXPECT_GE(f.size() / nb, 600u);
  EXPECT_GE(b.size() / nb, 150u);
  std::set<std::string> names;
  for (const auto& c : f) EXPECT_TRUE(names.insert("F" + c.name()).second) << c.name();
  for (const auto& c : b) EXPECT_TRUE(names.insert("B" + c.name()).second) << c.name();
  // Every cell, bias mode, dtype, layout, 1-3 layers, both directions, projection and H = 1, 3, 17, 255 appear.
  std::set<int> cells, biases, types, layouts, layers, dirs, hs;
  int proj = 0;
  for (const auto& c : f) {
    cells.insert(c.cell);
    biases.insert(c.bias);
    types.insert(c.dtype);
    layouts.insert(c.layout);
    layers.insert(c.L);
    dirs.insert(c.D);
    hs.insert(c.H);
    proj += c.P > 0;
  }
  EXPECT_EQ(cells.size(), 5u);
  EXPECT_EQ(biases.size(), 4u);
  EXPECT_EQ(types.size(), 4u);
  EXPECT_EQ(layouts.size(), 2u);
  EXPECT_EQ(layers.size(), 3u);
  EXPECT_EQ(dirs.size(), 2u);
  for (int h : {1, 3, 17, 255}) EXPECT_TRUE(hs.count(h)) << "H = " << h;
  EXPECT_GT(proj, 20);
}

}  // namespace
}  // namespace ort
