// Tests filters/live_feeds/query_parameters.h: a target's query parameters as a Streams instance
// reads them (names percent-decoded, the first of repeats) and a target with some set, replaced
// or removed, every other parameter kept in order.

#include "filters/live_feeds/query_parameters.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace ferry::filters {
namespace {

std::vector<std::pair<std::string, std::string>> visited(std::string_view target) {
  std::vector<std::pair<std::string, std::string>> out;
  forEachQueryParameter(target, [&out](const std::string& name, std::string_view param) {
    out.emplace_back(name, std::string(param));
  });
  return out;
}

TEST(QueryParametersTest, EachParameterIsVisitedInOrderWithItsNameDecoded) {
  using V = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(visited("/p?a=1&of%66set=2&b"),
            (V{{"a", "a=1"}, {"offset", "of%66set=2"}, {"b", "b"}}));
  EXPECT_EQ(visited("/p"), V{});
  EXPECT_EQ(visited("/p?"), (V{{"", ""}}));
  EXPECT_EQ(visited("/p?a&"), (V{{"a", "a"}, {"", ""}}));
  EXPECT_EQ(queryParameterValue("a=x%20y=z"), "x y=z");
  EXPECT_EQ(queryParameterValue("a"), "");
}

TEST(QueryParametersTest, SettingsReplaceAtTheFirstPlaceDropRepeatsRemoveOrAppend) {
  EXPECT_EQ(withQueryParameters("/p?a=1&x=2&a=3&b=4", {{"a", "9"}}), "/p?a=9&x=2&b=4");
  EXPECT_EQ(withQueryParameters("/p?x=2", {{"a", "9"}, {"b", "8"}}), "/p?x=2&a=9&b=8");
  EXPECT_EQ(withQueryParameters("/p?a=1&x=2", {{"a", std::nullopt}}), "/p?x=2");
  EXPECT_EQ(withQueryParameters("/p", {{"a", std::nullopt}}), "/p");
  EXPECT_EQ(withQueryParameters("/p?&x=2&&%61=1", {{"a", "9"}}), "/p?x=2&a=9");
}

}  // namespace
}  // namespace ferry::filters
