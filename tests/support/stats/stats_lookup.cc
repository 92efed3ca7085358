#include "tests/support/stats/stats_lookup.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

namespace ferry::testing {
namespace {

// Each line of `text`, without its '\n'.
template <typename F>
void forEachLine(std::string_view text, F&& f) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    if (f(text.substr(pos, end - pos))) return;
    pos = end + 1;
  }
}

// The type of `family` from its `# TYPE` line, "" when there is none.
std::string familyType(std::string_view text, std::string_view family) {
  std::string type;
  const std::string prefix = "# TYPE " + std::string(family) + " ";
  forEachLine(text, [&](std::string_view line) {
    if (line.substr(0, prefix.size()) != prefix) return false;
    type = std::string(line.substr(prefix.size()));
    return true;
  });
  return type;
}

bool exportsFamilyOf(std::string_view text, std::string_view name) {
  if (!familyType(text, name).empty()) return true;
  // A histogram's series carry a suffix its family name does not.
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix &&
        familyType(text, name.substr(0, name.size() - suffix.size())) == "histogram") {
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<int64_t> seriesValue(std::string_view text, std::string_view series) {
  std::optional<int64_t> value;
  forEachLine(text, [&](std::string_view line) {
    if (line.size() <= series.size() || line.substr(0, series.size()) != series ||
        line[series.size()] != ' ') {
      return false;
    }
    value = std::strtoll(std::string(line.substr(series.size() + 1)).c_str(), nullptr, 10);
    return true;
  });
  if (value) return *value;
  const std::string_view name = series.substr(0, series.find('{'));
  if (exportsFamilyOf(text, name)) return int64_t{0};
  return notFound("ferry exports no metric family \"" + std::string(name) + "\" (series " +
                  std::string(series) + "): a misspelt name?");
}

int64_t expectSeries(std::string_view text, std::string_view series) {
  auto value = seriesValue(text, series);
  if (value.isOk()) return *value;
  ADD_FAILURE() << value.status().message();
  return kNoSuchSeries;
}

int64_t statOf(const stats::Store& store, const std::string& name, const stats::Labels& labels) {
  return expectSeries(store.renderPrometheus(), name + stats::renderLabels(labels));
}

}  // namespace ferry::testing
