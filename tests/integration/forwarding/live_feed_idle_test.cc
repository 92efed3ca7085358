// Contract ("When all hold"): waiting reads and live feeds are forwarded with no idle timeout
// below 60 s. A forwarded SSE feed stays silent for just over a minute (the emulator's
// keep-alive comments are turned off), then an append still reaches the client through both
// ferries. This test waits 61 s on purpose: the silence is the behaviour under test.
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

class LiveFeedIdleFixture : public ForwardingTest {
 protected:
  CellOptions cellOptions() const override {
    CellOptions options;
    options.emulator_args = {"--sse-keepalive-ms", "600000"};  // no bytes while idle
    return options;
  }
};
using LiveFeedIdleTest = OverTransports<LiveFeedIdleFixture>;
FORWARDING_OVER_TRANSPORTS(LiveFeedIdleTest);

constexpr size_t kEntry = 0;
constexpr size_t kOwner = 1;

TEST_P(LiveFeedIdleTest, SilentForwardedFeedIsNotCutWithinSixtySeconds) {
  const std::string s = cell_->streamOwnedBy(kOwner, "quiet");
  createAt(kOwner, s);
  CellClient feed;
  ASSERT_TRUE(connectTo(feed, cell_->ferry(kEntry)).isOk());
  ASSERT_TRUE(feed.sendRequest("GET", "/v1/stream/" + s + "?offset=-1&live=sse").isOk());
  auto head = feed.readResponseHead(Ms(5000));
  ASSERT_TRUE(head.isOk()) << head.status().message();
  ASSERT_EQ(head->headerOr("streams-forwarded-to"), "inst-2");
  auto control = feed.readBodyUntil("\n\n", Ms(5000));  // the initial up-to-date frame
  ASSERT_TRUE(control.isOk()) << control.status().message();

  EXPECT_FALSE(feed.isClosedByPeer(Ms(61'000))) << "a silent live feed was cut within 61 s";

  appendAt(kOwner, s, "after a quiet minute");
  auto event = feed.readBodyUntil("\n\n", Ms(5000));
  ASSERT_TRUE(event.isOk()) << event.status().message();
  EXPECT_NE(event->find("event: data"), std::string::npos) << *event;
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_stream_idle_timeouts_total"), 0);
}

}  // namespace
}  // namespace ferry::fwdtest
