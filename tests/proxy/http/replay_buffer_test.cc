// Tests proxy/http/replay_buffer.cc: the kept body is shared with what was sent (not copied),
// kept up to the limit and dropped past it, and its gauge follows what is held.

#include "proxy/http/replay_buffer.h"

#include <gtest/gtest.h>

#include "tests/support/stats/stats_lookup.h"

namespace ferry::http {
namespace {

class ReplayBufferTest : public ::testing::Test {
 protected:
  ReplayBufferTest() : stats_(store_) {}
  void keep(ReplayBuffer& replay, const std::string& bytes) {
    Buffer sent;
    sent.add(bytes);
    replay.keep(sent);
    EXPECT_EQ(sent.toString(), bytes) << "what goes upstream is left as it was";
  }
  int64_t stat(const std::string& name) { return ferry::testing::statOf(store_, name); }

  stats::Store store_;
  stats::ProxyStats stats_;
};

TEST_F(ReplayBufferTest, KeepsWhatWasSentUpToTheLimit) {
  ReplayBuffer replay(8, stats_);
  keep(replay, "abc");
  keep(replay, "defgh");
  EXPECT_TRUE(replay.replayable());
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 8);
  Buffer first;
  ASSERT_TRUE(replay.copyTo(first));
  Buffer second;
  ASSERT_TRUE(replay.copyTo(second));
  EXPECT_EQ(first.toString(), "abcdefgh");
  EXPECT_EQ(second.toString(), "abcdefgh") << "a copy leaves the kept body for the next one";
}

TEST_F(ReplayBufferTest, PastTheLimitNothingIsKept) {
  ReplayBuffer replay(8, stats_);
  keep(replay, "abcde");
  keep(replay, "fghij");
  EXPECT_FALSE(replay.replayable());
  EXPECT_EQ(stat("ferry_replay_buffer_overflows_total"), 1);
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 0);
  Buffer out;
  EXPECT_FALSE(replay.copyTo(out));
  keep(replay, "k");
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 0) << "nothing more is kept";
  EXPECT_EQ(stat("ferry_replay_buffer_overflows_total"), 1) << "counted once";
}

TEST_F(ReplayBufferTest, TheGaugeGoesBackWhenItIsLetGo) {
  {
    ReplayBuffer replay(64, stats_);
    keep(replay, "abc");
    EXPECT_EQ(stat("ferry_replay_held_bytes"), 3);
    replay.clear();
    EXPECT_EQ(stat("ferry_replay_held_bytes"), 0);
    keep(replay, "de");
    EXPECT_EQ(stat("ferry_replay_held_bytes"), 2);
  }
  EXPECT_EQ(stat("ferry_replay_held_bytes"), 0) << "the destructor lets go";
}

}  // namespace
}  // namespace ferry::http
