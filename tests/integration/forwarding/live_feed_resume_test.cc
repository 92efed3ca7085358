// Live SSE feeds that survive a hand-over and an owner's death (issue #22, docs/live-feeds.md):
// a client reads a feed through the entry ferry (inst-1) while appends run; the stream's owner
// changes under it (the emulators' hand-over), or its owner is killed and the stream moves. The
// client's response never ends, and what it received equals what a direct read from the start
// gives at the end: the same records in the same order, none twice, none missing, and the same
// final offset (records and offsets compared, not block boundaries: docs/live-feeds.md, "The
// invariant"). Also: the stream's own end (streamClosed) ends the feed without a resume, and
// past live_feeds.resume_deadline the response ends at an event boundary.
//
// Runs over every client transport and both owner protocols (FORWARDING_OVER_TRANSPORTS).
#include <signal.h>

#include <atomic>
#include <thread>

#include "tests/integration/forwarding/live_feed_test.h"

namespace ferry::fwdtest {
namespace {

using LiveFeedResumeFixture = LiveFeedFixture;
using LiveFeedResumeTest = OverTransports<LiveFeedResumeFixture>;
FORWARDING_OVER_TRANSPORTS(LiveFeedResumeTest);

TEST_P(LiveFeedResumeTest, HandOverMidFeedWithAppendsRunning) {
  const std::string s = movingStream("resume");
  createAt(kOldOwner, s, "application/json");
  CellClient feed;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(openFeed(feed, s, text));

  constexpr int kAppends = 60;
  std::atomic<int> progress{0};
  std::atomic<bool> done{false};
  std::string last;
  std::thread appender([&] {
    last = appendRecords(kNewOwner, s, 0, kAppends, &progress);
    done = true;
  });
  while (progress.load() < kAppends / 3 && !done.load()) std::this_thread::yield();
  ASSERT_NO_FATAL_FAILURE(handOver(s));
  appender.join();
  ASSERT_FALSE(last.empty());

  ASSERT_NO_FATAL_FAILURE(readUntilOffset(feed, text, last));
  EXPECT_EQ(ferry::testing::sseRecords(text), expectedRecords(kAppends));
  EXPECT_EQ(ferry::testing::sseRecords(text),
            ferry::testing::sseRecords(directRead(kNewOwner, s, last)));
  EXPECT_GE(cell_->ferry(kEntry).stat("ferry_live_feed_resumes_total{cause=\"ended\"}"), 1);
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_live_feed_resume_failures_total"), 0);
}

TEST_P(LiveFeedResumeTest, OwnerKilledMidFeed) {
  const std::string s = movingStream("killed");
  createAt(kOldOwner, s, "application/json");
  CellClient feed;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(openFeed(feed, s, text));
  const std::string before = appendRecords(kOldOwner, s, 0, 10);
  ASSERT_NO_FATAL_FAILURE(readUntilOffset(feed, text, before));

  // The stream's state is where the fleet keeps it; then its owner dies without a word.
  ASSERT_NO_FATAL_FAILURE(copyStream(s));
  cell_->emulator(kOldOwner).process().signal(SIGKILL);
  ASSERT_TRUE(cell_->emulator(0).control(R"({"members":["inst-1","inst-3"]})"));
  ASSERT_TRUE(cell_->emulator(kNewOwner).control(R"({"members":["inst-1","inst-3"]})"));
  const std::string after = appendRecords(kNewOwner, s, 10, 20);

  ASSERT_NO_FATAL_FAILURE(readUntilOffset(feed, text, after));
  EXPECT_EQ(ferry::testing::sseRecords(text), expectedRecords(20));
  EXPECT_EQ(ferry::testing::sseRecords(text),
            ferry::testing::sseRecords(directRead(kNewOwner, s, after)));
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_live_feed_resume_failures_total"), 0);
}

TEST_P(LiveFeedResumeTest, StreamClosedEndsTheFeedWithoutAResume) {
  const std::string s = cell_->streamOwnedBy(kOldOwner, "closed");
  createAt(kOldOwner, s, "application/json");
  CellClient feed;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(openFeed(feed, s, text));
  auto del = httpRequest(cell_->emulator(kOldOwner).port(), "DELETE", "/v1/stream/" + s);
  ASSERT_TRUE(del.isOk());
  auto rest = feed.readResponse(Ms(5000));
  ASSERT_TRUE(rest.isOk()) << rest.status().message();
  EXPECT_NE(rest->body.find("\"streamClosed\":true"), std::string::npos) << rest->body;
  EXPECT_EQ(cell_->ferry(kEntry).stat("ferry_live_feed_resumes_total{cause=\"ended\"}"), 0);
}

class LiveFeedDeadlineFixture : public LiveFeedResumeFixture {
 protected:
  std::string ferryExtraYaml() const override { return "live_feeds: {resume_deadline: 1s}\n"; }
};
using LiveFeedDeadlineTest = OverTransports<LiveFeedDeadlineFixture>;
FORWARDING_OVER_TRANSPORTS(LiveFeedDeadlineTest);

TEST_P(LiveFeedDeadlineTest, PastTheDeadlineTheResponseEndsAtAnEventBoundary) {
  const std::string s = cell_->streamOwnedBy(kOldOwner, "deadline");
  createAt(kOldOwner, s, "application/json");
  CellClient feed;
  std::string text;
  ASSERT_NO_FATAL_FAILURE(openFeed(feed, s, text));
  const std::string at = appendRecords(kOldOwner, s, 0, 3);
  ASSERT_NO_FATAL_FAILURE(readUntilOffset(feed, text, at));

  cell_->emulator(kOldOwner).process().signal(SIGKILL);  // and nobody takes the stream over
  auto rest = feed.readResponse(Ms(15000));
  ASSERT_TRUE(rest.isOk()) << "the response did not end cleanly: " << rest.status().message();
  text = rest->body;  // the whole body, with what was read before
  EXPECT_EQ(ferry::testing::sseRecords(text), expectedRecords(3));
  EXPECT_EQ(text.substr(text.size() - 2), "\n\n") << text;  // whole events only
  EXPECT_EQ(cell_->ferry(kEntry).waitForStat("ferry_live_feed_resume_failures_total", 1), 1);
}

}  // namespace
}  // namespace ferry::fwdtest
