// proxy/server/fd_limit.cc: the start-up check of limits.max_connections against
// RLIMIT_NOFILE (issue #10, finding 4).

#include "proxy/server/fd_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace ferry::server {
namespace {

TEST(FdLimitTest, TwoDescriptorsPerConnectionPlusFixedOnes) {
  EXPECT_EQ(descriptorsNeeded(100, 2, 16), 200u + 8u + 16u + 32u);
}

TEST(FdLimitTest, NoWarningWhenTheLimitFits) {
  EXPECT_EQ(fdBudgetWarning({4096, 4096, false}, descriptorsNeeded(100, 1, 16), 100), "");
}

TEST(FdLimitTest, WarningNamesTheKeyTheLimitAndWhatFits) {
  const std::string w = fdBudgetWarning({64, 64, false}, descriptorsNeeded(100, 1, 16), 100);
  EXPECT_NE(w.find("limits.max_connections is 100"), std::string::npos) << w;
  EXPECT_NE(w.find("RLIMIT_NOFILE is 64"), std::string::npos) << w;
  EXPECT_NE(w.find("only about 6 connections"), std::string::npos) << w;  // (64 - 52) / 2
}

TEST(FdLimitTest, RaisesTheSoftLimitToTheHardLimit) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  FdLimits limits = raiseFdLimit();
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, after.rlim_max);
  EXPECT_EQ(limits.soft, limits.hard);
}

}  // namespace
}  // namespace ferry::server
