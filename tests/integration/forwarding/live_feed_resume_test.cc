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

#include "integration/streams_emulator/ownership.h"
#include "tests/integration/forwarding/forwarding_test.h"
#include "tests/support/sse/sse_records.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kEntry = 0;
constexpr size_t kOldOwner = 1;
constexpr size_t kNewOwner = 2;

// Where the feed read so far stands: the last control frame's streamNextOffset ("" if none).
std::string lastOffset(const std::string& feed) {
  const std::string key = "\"streamNextOffset\":\"";
  const size_t at = feed.rfind(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return feed.substr(from, feed.find('"', from) - from);
}

class LiveFeedResumeFixture : public ForwardingTest {
 protected:
  CellOptions cellOptions() const override {
    CellOptions o;
    o.ferry_extra_yaml = ferryExtraYaml();
    return o;
  }
  virtual std::string ferryExtraYaml() const { return ""; }

  // The first stream owned by inst-2 that belongs to inst-3 once inst-2 leaves.
  std::string movingStream(const std::string& prefix) {
    const std::vector<std::string> after{"inst-1", "inst-3"};
    for (int n = 0; n < 100000; ++n) {
      const std::string name = prefix + "-" + std::to_string(n);
      const int now = streams::ownerIndex(name, 16, after);
      if (cell_->ownerIndexOf(name) == kOldOwner && now >= 0 && after[now] == "inst-3") {
        return name;
      }
    }
    ADD_FAILURE() << "no stream moves from inst-2 to inst-3";
    return "";
  }

  // Copies `s` from the old owner to the new one (the fleet's shared storage, in the emulator).
  void copyStream(const std::string& s) {
    auto exported =
        testing::httpRequest(cell_->emulator(kOldOwner).port(), "GET",
                             "/v1/debug/stream?stream=" + s, {{"x-control-token", kControlToken}});
    ASSERT_TRUE(exported.isOk() && exported->status == 200);
    auto imported = testing::httpRequest(cell_->emulator(kNewOwner).port(), "PUT",
                                         "/v1/debug/stream?stream=" + s,
                                         {{"x-control-token", kControlToken}}, exported->body);
    ASSERT_TRUE(imported.isOk() && imported->status == 204);
  }

  // Opens the feed of `s` from its start through the entry ferry; its first control frame read.
  void openFeed(CellClient& feed, const std::string& s, std::string& text) {
    ASSERT_TRUE(connectTo(feed, cell_->ferry(kEntry)).isOk());
    ASSERT_TRUE(feed.sendRequest("GET", "/v1/stream/" + s + "?offset=-1&live=sse").isOk());
    auto head = feed.readResponseHead(Ms(5000));
    ASSERT_TRUE(head.isOk()) << head.status().message();
    ASSERT_EQ(head->status, 200);
    ASSERT_EQ(head->headerOr("content-type"), "text/event-stream");
    readUntilOffset(feed, text, "");
  }

  // Reads events into `text` until a control frame gives `offset` ("" = any control frame).
  void readUntilOffset(CellClient& feed, std::string& text, const std::string& offset,
                       Ms timeout = Ms(20000)) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const std::string at = lastOffset(text);
      if (!at.empty() && (offset.empty() || at == offset)) return;
      const auto left = std::chrono::duration_cast<Ms>(give_up - std::chrono::steady_clock::now());
      ASSERT_GT(left.count(), 0) << "the feed never reached offset " << offset << "; so far:\n"
                                 << text;
      auto event = feed.readBodyUntil("\n\n", left);
      ASSERT_TRUE(event.isOk()) << event.status().message() << " (waiting for offset " << offset
                                << "); so far:\n"
                                << text;
      text += *event;
    }
  }

  // A direct read of `s` from the start at member `i`'s emulator, up to `offset`.
  std::string directRead(size_t i, const std::string& s, const std::string& offset) {
    testing::HttpClient reader;
    EXPECT_TRUE(reader.connect(cell_->emulator(i).port()).isOk());
    EXPECT_TRUE(reader.sendRequest("GET", "/v1/stream/" + s + "?offset=-1&live=sse").isOk());
    auto head = reader.readResponseHead();
    EXPECT_TRUE(head.isOk() && head->status == 200);
    std::string text;
    while (lastOffset(text) != offset) {
      auto event = reader.readBodyUntil("\n\n", Ms(5000));
      if (!event.isOk()) {
        ADD_FAILURE() << "direct read: " << event.status().message();
        break;
      }
      text += *event;
    }
    return text;
  }

  // Appends [{"n":i}] for i in [from, to) through ferry `via` until each is acknowledged (an
  // idempotent producer: a retry of an applied append is not applied twice); the last offset.
  std::string appendRecords(size_t via, const std::string& s, int from, int to,
                            std::atomic<int>* progress = nullptr) {
    std::string next;
    for (int i = from; i < to; ++i) {
      for (int tries = 0;; ++tries) {
        if (tries == 300) {
          ADD_FAILURE() << "append " << i << " never acknowledged";
          return next;
        }
        auto r = viaFerry(cell_->ferry(via), "POST", "/v1/stream/" + s,
                          {{"content-type", "application/json"},
                           {"producer-id", "p"},
                           {"producer-epoch", "0"},
                           {"producer-seq", std::to_string(i)}},
                          "[{\"n\":" + std::to_string(i) + "}]", Ms(10000));
        if (r.isOk() && r->status / 100 == 2) {
          next = r->headerOr("stream-next-offset");
          break;
        }
        std::this_thread::sleep_for(Ms(20));  // a client's back-off, not a synchronisation
      }
      if (progress != nullptr) ++*progress;
    }
    return next;
  }

  std::string expectedRecords(int count) {
    std::string out;
    for (int i = 0; i < count; ++i) {
      if (i > 0) out.push_back(',');
      out += "{\"n\":" + std::to_string(i) + "}";
    }
    return out;
  }
};

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
  // The hand-over: the old owner answers 503 shard_moving, then 409 naming inst-3, and ends
  // its live feeds; the stream's state moves; the others learn the new members.
  ASSERT_TRUE(
      cell_->emulator(kOldOwner).control(R"({"members":["inst-1","inst-3"],"handover_ms":500})"));
  ASSERT_NO_FATAL_FAILURE(copyStream(s));
  ASSERT_TRUE(cell_->emulator(0).control(R"({"members":["inst-1","inst-3"]})"));
  ASSERT_TRUE(cell_->emulator(kNewOwner).control(R"({"members":["inst-1","inst-3"]})"));
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
