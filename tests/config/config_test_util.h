#pragma once
// Helpers shared by the config tests. They load through app::loadConfigString() (config/
// parses, app/config_check.h checks what only building can): the errors ferry prints.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/config_check.h"
#include "config/config_loader.h"

namespace ferry::config {

// Every error of `yaml`, as "path: message" lines.
inline std::vector<std::string> errorsOf(const std::string& yaml) {
  const LoadResult result = app::loadConfigString(yaml);
  EXPECT_FALSE(result.ok()) << "expected errors for:\n" << yaml;
  EXPECT_FALSE(result.config.has_value());
  std::vector<std::string> out;
  for (const auto& e : result.errors) {
    out.push_back(e.toString());
  }
  return out;
}

// The config of `yaml`, failing the test when it has errors.
inline FerryConfig configOf(const std::string& yaml) {
  const LoadResult result = app::loadConfigString(yaml);
  for (const auto& e : result.errors) {
    ADD_FAILURE() << "unexpected error: " << e.toString() << "\nin:\n" << yaml;
  }
  EXPECT_TRUE(result.ok());
  return result.config.value_or(FerryConfig{});
}

// Exactly one error, starting with `expected` (which includes the path).
#define EXPECT_ONE_ERROR(yaml, expected) \
  EXPECT_THAT(errorsOf(yaml), ::testing::ElementsAre(::testing::StartsWith(expected)))

}  // namespace ferry::config
