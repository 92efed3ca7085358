#include "proxy/http/http2/flood_guard.h"

#include <gtest/gtest.h>

namespace ferry::http::http2 {
namespace {

TEST(FloodGuard, NothingBeforeTheMinimumStreamCount) {
  FloodGuard guard(100);
  for (int i = 0; i < 99; ++i) {
    guard.onStreamOpened();
    guard.onClientReset(true);
  }
  EXPECT_FALSE(guard.flooded());
  guard.onStreamOpened();
  guard.onClientReset(true);
  EXPECT_TRUE(guard.flooded());
}

TEST(FloodGuard, HalfIsStillFine) {
  FloodGuard guard(10);
  for (int i = 0; i < 100; ++i) {
    guard.onStreamOpened();
    guard.onClientReset(i % 2 == 0);
  }
  EXPECT_FALSE(guard.flooded());  // 50 of 100
  guard.onClientReset(true);
  EXPECT_TRUE(guard.flooded());  // 51 of 100
}

TEST(FloodGuard, ResetsAfterTheResponseHeadDoNotCount) {
  FloodGuard guard(10);
  for (int i = 0; i < 100; ++i) {
    guard.onStreamOpened();
    guard.onClientReset(false);
  }
  EXPECT_FALSE(guard.flooded());
  EXPECT_EQ(guard.clientResets(), 100u);
}

}  // namespace
}  // namespace ferry::http::http2
