// Live SSE feeds shared by the clients of one ferry worker (issue #22, "One upstream feed per
// stream"; docs/live-feeds.md, "Sharing"), on real processes: a cell of three members
// (emulator + ferry each, workers: 1), clients reading a stream owned by inst-2 through the
// entry ferry (inst-1) with live_feeds.share on.
//
// - Many subscribers at several start offsets (the start, the middle, the tail, `now`) while
//   appends run each receive exactly what a direct read from their start gives: every record
//   once, in order, each control frame's offset where the records so far end; and the owner ends
//   up serving ONE upstream feed.
// - A client that stops reading is detached (ferry_live_feed_detached_subscribers_total) while
//   the others receive every event as it is appended; reading again, it gets all its events
//   exactly once, in order, and it joins the feed again.
// - Requests with a different Authorization, or a different value of a share_key_headers
//   header, never share.
// - The stream's own end (streamClosed) ends every subscriber's response, complete, no resume.
// - A hand-over in the middle of a shared feed with appends running, or its owner killed: every
//   subscriber sees one unbroken feed, and ferry resumed ONE upstream read, not one per
//   subscriber.
// - A read that joins the shared feed at once starts as a direct read does (its first frame).
// - A drain ends every subscriber at an event boundary, a complete response.
// - The product route's feed (records:sse?cursor=) is shared as the raw one is.
// - The access log says each client's feed was shared (feed_shared).
//
// The stream is a JSON stream whose message k is {"n":k,...}, so a feed is checked exactly
// (isExactFeed): records and control-frame offsets, not block boundaries (docs/live-feeds.md,
// "The invariant"). Over every client transport and both owner protocols
// (FORWARDING_OVER_TRANSPORTS: 88 cases, about 36 s one after the other).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/integration/forwarding/live_feed_test.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kOwner = 1;  // inst-2 (kOldOwner of the fixture): the streams' owner

// A JSON stream's offset after `count` messages (the emulator's 16 zero-padded digits).
std::string offsetOf(int count) {
  char out[17];
  std::snprintf(out, sizeof(out), "%016d", count);
  return out;
}

// The streamNextOffset of a control-frame block, or "".
std::string frameOffset(std::string_view block) {
  constexpr std::string_view kKey = "\"streamNextOffset\":\"";
  const size_t at = block.find(kKey);
  if (at == std::string_view::npos) return "";
  const size_t from = at + kKey.size();
  return std::string(block.substr(from, block.find('"', from) - from));
}

// The offset of the first control frame of `text` as a message count; -1 if none.
int firstFrameCount(const std::string& text) {
  const size_t at = text.find("event: control\n");
  if (at == std::string::npos) return -1;
  const std::string offset = frameOffset(std::string_view(text).substr(at));
  return offset.empty() ? -1 : std::stoi(offset);
}

// Whether `text`, a client's feed of a stream whose message k is {"n":k,...}, is exactly what a
// direct read from message `start` gives up to message `end`: every record from `start` to
// `end` - 1 once and in order, each control frame's streamNextOffset where the records before
// it end, whole blocks only, and a control frame last (no data event without its frame).
::testing::AssertionResult isExactFeed(const std::string& text, int start, int end) {
  int next = start;
  bool control_last = false;
  size_t at = 0;
  while (at < text.size()) {
    const size_t stop = text.find("\n\n", at);
    if (stop == std::string::npos) {
      return ::testing::AssertionFailure() << "a cut block at byte " << at << ":\n" << text;
    }
    const std::string_view block(text.data() + at, stop - at);
    at = stop + 2;
    if (block.substr(0, 1) == ":") continue;  // a keep-alive comment
    if (block.substr(0, 18) == "event: data\ndata:[") {
      for (size_t p = 0; (p = block.find("{\"n\":", p)) != std::string_view::npos;) {
        p += 5;
        const int n = std::stoi(std::string(block.substr(p, block.find_first_of(",}", p) - p)));
        if (n != next) {
          return ::testing::AssertionFailure() << "record " << n << " where record " << next
                                               << " was due (start " << start << ")";
        }
        ++next;
      }
      control_last = false;
      continue;
    }
    if (block.substr(0, 20) == "event: control\ndata:") {
      if (frameOffset(block) != offsetOf(next)) {
        return ::testing::AssertionFailure()
               << "a control frame at " << frameOffset(block) << " after the records up to "
               << offsetOf(next) << " (start " << start << ")";
      }
      control_last = true;
      continue;
    }
    return ::testing::AssertionFailure() << "a block that is no SSE event: " << block;
  }
  if (next != end) {
    return ::testing::AssertionFailure()
           << "the records end at " << next << ", not " << end << " (start " << start << ")";
  }
  if (!control_last) return ::testing::AssertionFailure() << "the feed does not end at a frame";
  return ::testing::AssertionSuccess();
}

// One client of the entry ferry reading a feed.
struct Subscriber {
  CellClient client;
  std::string text;    // what it read
  std::string offset;  // the offset it asked for
  HttpResponse head;   // its response head
};
using Subscribers = std::vector<std::unique_ptr<Subscriber>>;

class SharedFeedFixture : public LiveFeedFixture {
 protected:
  CellOptions cellOptions() const override {
    CellOptions o = LiveFeedFixture::cellOptions();
    o.limits_extra_yaml = limitsExtraYaml();
    return o;
  }
  std::string ferryExtraYaml() const override {
    return "live_feeds: {share: true, subscriber_buffer: 4096, share_key_headers: [x-tenant]}\n";
  }
  virtual std::string limitsExtraYaml() const { return ""; }

  // Appends {"n":i} (with `pad` bytes of padding) for i in [from, to) directly at the owner,
  // one append each; the offset after the last.
  std::string appendJson(const std::string& s, int from, int to, size_t pad = 0,
                         std::atomic<int>* progress = nullptr) {
    const std::string padding = pad == 0 ? "" : ",\"p\":\"" + std::string(pad, 'x') + "\"";
    std::string next;
    for (int i = from; i < to; ++i) {
      auto r = httpRequest(cell_->emulator(kOwner).port(), "POST", "/v1/stream/" + s,
                           {{"content-type", "application/json"}},
                           "[{\"n\":" + std::to_string(i) + padding + "}]");
      if (!r.isOk() || r->status / 100 != 2) {
        ADD_FAILURE() << "append " << i << ": "
                      << (r.isOk() ? std::to_string(r->status) + " " + r->body
                                   : r.status().message());
        return next;
      }
      next = r->headerOr("stream-next-offset");
      if (progress != nullptr) ++*progress;
    }
    return next;
  }

  // A new subscriber reading `s` from `offset` with `headers`; its first control frame read
  // unless `first_frame` is false (a read that joins a shared feed at once gets the feed's next
  // event, not a frame of its own: docs/live-feeds.md, "Joining at a boundary").
  Subscriber& subscribe(Subscribers& subs, const std::string& s, const std::string& offset,
                        const Headers& headers = {}, bool first_frame = true) {
    subs.push_back(std::make_unique<Subscriber>());
    Subscriber& sub = *subs.back();
    sub.offset = offset;
    openHead(sub.client, s, offset, headers, &sub.head);
    if (first_frame && !::testing::Test::HasFatalFailure()) {
      readUntilOffset(sub.client, sub.text, "");
    }
    return sub;
  }

  // Where `sub`'s read started, as a message count: its offset, or for `now` its first frame's.
  static int startOf(const Subscriber& sub) {
    if (sub.offset == "-1") return 0;
    if (sub.offset == "now") return firstFrameCount(sub.text);
    return std::stoi(sub.offset);
  }

  // `sub` reads up to message `end`; its feed is exact, and its records are a direct read's
  // from its start at the owner (call once the owner's live feeds were counted: a direct read is
  // a feed too).
  void expectDirectRead(Subscriber& sub, const std::string& s, int end) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub.client, sub.text, offsetOf(end)));
    const int start = startOf(sub);
    ASSERT_GE(start, 0) << "no control frame: " << sub.text;
    EXPECT_TRUE(isExactFeed(sub.text, start, end)) << "offset=" << sub.offset;
    EXPECT_EQ(ferry::testing::sseRecords(sub.text),
              ferry::testing::sseRecords(directRead(kOwner, s, offsetOf(end), offsetOf(start))))
        << "offset=" << sub.offset;
  }

  // Every upstream feed ferry resumed (all causes of ferry_live_feed_resumes_total).
  int64_t resumes() {
    auto r = cell_->ferry(kEntry).admin("/stats");
    if (!r.isOk() || r->status != 200) {
      ADD_FAILURE() << "GET /stats failed";
      return ::ferry::testing::kNoSuchSeries;
    }
    if (r->body.find("# TYPE ferry_live_feed_resumes_total ") == std::string::npos) {
      ADD_FAILURE() << "ferry exports no ferry_live_feed_resumes_total";
      return ::ferry::testing::kNoSuchSeries;
    }
    int64_t n = 0;
    constexpr std::string_view kSeries = "\nferry_live_feed_resumes_total{";
    for (size_t at = 0; (at = r->body.find(kSeries, at)) != std::string::npos;) {
      at = r->body.find("} ", at) + 2;
      n += std::stoll(r->body.substr(at, r->body.find('\n', at) - at));
    }
    return n;
  }
  int64_t stat(std::string_view series) { return cell_->ferry(kEntry).stat(series); }

  // Three reads of a new stream: the first and third with `key`, the second with `other`. Each
  // gets every event; two shared feeds, the first and third reads on one.
  void expectTwoFeedsForTwoKeys(const std::string& name, const Headers& key, const Headers& other) {
    const std::string s = cell_->streamOwnedBy(kOwner, name);
    createAt(kOwner, s, "application/json");
    Subscribers subs;
    ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1", key));
    ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1", other));
    ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1", key));
    ASSERT_EQ(appendJson(s, 0, 3), offsetOf(3));
    for (auto& sub : subs) {
      ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, offsetOf(3)));
      EXPECT_TRUE(isExactFeed(sub->text, 0, 3));
    }
    // Every read met its key's feed at its first frame, before the appends.
    EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 2);
    EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 3);
    EXPECT_EQ(waitForSseFeedsLive(kOwner, 2), 2);
  }
  int64_t waitForStat(std::string_view series, int64_t at_least) {
    return cell_->ferry(kEntry).waitForStat(series, at_least);
  }
};

using SharedFeedTest = OverTransports<SharedFeedFixture>;
FORWARDING_OVER_TRANSPORTS(SharedFeedTest);

// 30 subscribers: one at the start (its read becomes the shared feed), 7 at the tail before the
// appends (they join at once), and, while appends run, 8 at the start, 7 in the middle and 7 at
// `now` (each reads on its own until it meets the feed at a boundary).
TEST_P(SharedFeedTest, ManySubscribersAtSeveralOffsetsReadExactlyADirectReadOverOneUpstream) {
  const std::string s = cell_->streamOwnedBy(kOwner, "fanout");
  createAt(kOwner, s, "application/json");
  constexpr int kBefore = 20;
  ASSERT_EQ(appendJson(s, 0, kBefore), offsetOf(kBefore));
  Subscribers subs;
  Subscriber& first = subscribe(subs, s, "-1");
  ASSERT_NO_FATAL_FAILURE(readUntilOffset(first.client, first.text, offsetOf(kBefore)));

  const int64_t started = sseCounter(kOwner, "sse_feeds_started");
  for (int i = 0; i < 7; ++i) {
    ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, offsetOf(kBefore), {}, false));
  }
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_joins_total", 8), 8);
  EXPECT_EQ(sseCounter(kOwner, "sse_feeds_started"), started)
      << "a read at the shared feed's position joins it without an upstream read of its own";

  // Appends run from before the first of these subscribers comes until the last has its first
  // frame.
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::atomic<int> appended{kBefore};
  std::thread appender([&] {
    while (!stop.load() && appended.load() < 5000) {
      const int n = appended.load();
      if (appendJson(s, n, n + 1) != offsetOf(n + 1)) break;
      ++appended;
    }
    done = true;
  });
  while (appended.load() < kBefore + 10 && !done.load()) std::this_thread::yield();
  const std::vector<std::string> offsets{"-1", offsetOf(kBefore / 2), "now"};
  for (int i = 0; i < 22; ++i) {
    subscribe(subs, s, offsets[i % offsets.size()]);
    if (HasFatalFailure()) break;
  }
  stop = true;
  appender.join();
  ASSERT_FALSE(HasFatalFailure());
  const int total = appended.load();

  for (auto& sub : subs) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, offsetOf(total)));
  }
  // Once every read met the shared feed, the owner serves one feed to this ferry.
  EXPECT_EQ(waitForSseFeedsLive(kOwner, 1), 1);
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 1);
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 30);
  for (auto& sub : subs) expectDirectRead(*sub, s, total);
  // Each head is what a direct read gives, with the client's own x-request-id.
  std::set<std::string> ids;
  for (auto& sub : subs) {
    EXPECT_EQ(sub->head.headerOr("cache-control"), "no-cache");
    EXPECT_EQ(sub->head.headerOr("x-accel-buffering"), "no");
    ids.insert(sub->head.headerOr("x-request-id"));
  }
  EXPECT_EQ(ids.size(), subs.size());
  EXPECT_EQ(ids.count(""), 0u);
}

// A read at the shared feed's position joins it at once, and still starts as a direct read at
// that offset does: with the control frame that says where it stands (and that it is up to
// date), not only at the next append (which on a quiet stream may be never).
TEST_P(SharedFeedTest, AReadJoiningAtOnceGetsTheFirstFrameADirectReadGives) {
  const std::string s = cell_->streamOwnedBy(kOwner, "joinframe");
  createAt(kOwner, s, "application/json");
  ASSERT_EQ(appendJson(s, 0, 3), offsetOf(3));
  Subscribers subs;
  ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1"));
  Subscriber& joiner = subscribe(subs, s, offsetOf(3), {}, false);
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_joins_total", 2), 2);
  ASSERT_NO_FATAL_FAILURE(readUntilOffset(joiner.client, joiner.text, offsetOf(3), Ms(3000)));
  EXPECT_EQ(joiner.text, directRead(kOwner, s, offsetOf(3), offsetOf(3)));
  ASSERT_EQ(appendJson(s, 3, 4), offsetOf(4));
  ASSERT_NO_FATAL_FAILURE(readUntilOffset(joiner.client, joiner.text, offsetOf(4)));
  EXPECT_TRUE(isExactFeed(joiner.text, 3, 4));
}

TEST_P(SharedFeedTest, OwnerKilledMidSharedFeedIsOneResumeAndNoGapForAnySubscriber) {
  const std::string s = movingStream("shared-killed");
  createAt(kOldOwner, s, "application/json");
  Subscribers subs;
  for (int i = 0; i < 4; ++i) ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1"));
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_subscribers", 4), 4);
  EXPECT_EQ(waitForSseFeedsLive(kOldOwner, 1), 1);
  const std::string before = appendRecords(kOldOwner, s, 0, 10);
  ASSERT_EQ(before, offsetOf(10));
  for (auto& sub : subs) ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, before));

  // The stream's state is where the fleet keeps it; then its owner dies without a word.
  ASSERT_NO_FATAL_FAILURE(copyStream(s));
  cell_->emulator(kOldOwner).process().signal(SIGKILL);
  ASSERT_TRUE(cell_->emulator(0).control(R"({"members":["inst-1","inst-3"]})"));
  ASSERT_TRUE(cell_->emulator(kNewOwner).control(R"({"members":["inst-1","inst-3"]})"));
  const std::string after = appendRecords(kNewOwner, s, 10, 20);
  ASSERT_EQ(after, offsetOf(20));

  for (auto& sub : subs) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, after));
    EXPECT_TRUE(isExactFeed(sub->text, 0, 20));
  }
  EXPECT_EQ(resumes(), 1) << "the shared feed resumed once, for all its subscribers";
  EXPECT_EQ(stat("ferry_live_feed_resume_failures_total"), 0);
  EXPECT_EQ(waitForSseFeedsLive(kNewOwner, 1), 1);
}

class SharedFeedDrainFixture : public SharedFeedFixture {
 protected:
  std::string ferryExtraYaml() const override {
    return SharedFeedFixture::ferryExtraYaml() + "timeouts: {drain: 500ms}\n";
  }
};
using SharedFeedDrainTest = OverTransports<SharedFeedDrainFixture>;
FORWARDING_OVER_TRANSPORTS(SharedFeedDrainTest);

// A drain's deadline ends every subscriber of a shared feed as a feed of its own would end: a
// complete response at an event boundary (docs/drain.md), and ferry exits.
TEST_P(SharedFeedDrainTest, ADrainEndsEverySubscriberAtAnEventBoundary) {
  const std::string s = cell_->streamOwnedBy(kOwner, "drain");
  createAt(kOwner, s, "application/json");
  Subscribers subs;
  for (int i = 0; i < 4; ++i) ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1"));
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_subscribers", 4), 4);
  ASSERT_EQ(appendJson(s, 0, 3), offsetOf(3));
  for (auto& sub : subs) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, offsetOf(3)));
  }

  auto drain = httpRequest(cell_->ferry(kEntry).adminPort(), "POST", "/drain");
  ASSERT_TRUE(drain.isOk() && drain->status == 202)
      << (drain.isOk() ? drain->body : drain.status().message());
  for (auto& sub : subs) {
    auto rest = sub->client.readResponse(Ms(10000));
    ASSERT_TRUE(rest.isOk()) << "the response did not end cleanly: " << rest.status().message();
    EXPECT_TRUE(isExactFeed(rest->body, 0, 3));
  }
  const std::optional<int> code = cell_->ferry(kEntry).process().waitExit(Ms(10000));
  ASSERT_TRUE(code.has_value()) << "ferry did not exit after the drain";
  EXPECT_EQ(*code, 0);
}

// The product route's feed (records:sse, its position in `cursor`) is shared as the raw one is:
// reads with no position (the start) and at the tail meet one feed.
TEST_P(SharedFeedTest, ProductRouteSubscribersShareOneUpstreamFeed) {
  const std::string s = cell_->streamOwnedBy(kOwner, "product");
  createAt(kOwner, s, "application/json");
  ASSERT_EQ(appendJson(s, 0, 5), offsetOf(5));
  Subscribers subs;
  for (int i = 0; i < 6; ++i) {
    subs.push_back(std::make_unique<Subscriber>());
    Subscriber& sub = *subs.back();
    sub.offset = i % 2 == 0 ? "-1" : offsetOf(5);
    const std::string query = i % 2 == 0 ? "" : "?cursor=" + offsetOf(5);
    ASSERT_NO_FATAL_FAILURE(openTarget(sub.client, "/v1/streams/" + s + "/records:sse" + query));
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub.client, sub.text, offsetOf(5)));
  }
  ASSERT_EQ(appendJson(s, 5, 10), offsetOf(10));
  for (auto& sub : subs) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, offsetOf(10)));
    EXPECT_TRUE(isExactFeed(sub->text, startOf(*sub), 10)) << sub->offset;
  }
  EXPECT_EQ(waitForSseFeedsLive(kOwner, 1), 1);
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 1);
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 6);
}

// The access log says a client's feed was shared (feed_shared, docs/access-log.md).
class SharedFeedLogFixture : public SharedFeedFixture {
 protected:
  std::string ferryExtraYaml() const override {
    log_ = ::testing::TempDir() + "/shared-feed-" + std::to_string(::getpid()) + ".log";
    std::remove(log_.c_str());
    return SharedFeedFixture::ferryExtraYaml() + "access_log: {path: " + log_ + "}\n";
  }
  void TearDown() override {
    SharedFeedFixture::TearDown();
    std::remove(log_.c_str());
  }
  mutable std::string log_;
};
using SharedFeedLogTest = OverTransports<SharedFeedLogFixture>;
FORWARDING_OVER_TRANSPORTS(SharedFeedLogTest);

TEST_P(SharedFeedLogTest, TheAccessLogSaysEachClientsFeedWasShared) {
  const std::string s = cell_->streamOwnedBy(kOwner, "logged");
  createAt(kOwner, s, "application/json");
  Subscribers subs;
  for (int i = 0; i < 3; ++i) {
    ASSERT_NO_FATAL_FAILURE(
        subscribe(subs, s, "-1", {{"x-request-id", "shared-sub-" + std::to_string(i)}}));
  }
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_subscribers", 3), 3);
  ASSERT_EQ(appendJson(s, 0, 2), offsetOf(2));
  for (auto& sub : subs) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, offsetOf(2)));
    sub->client.close();  // its stream ends: its record is written
  }
  // Every client's stream ended (each poll a new request).
  const auto give_up = std::chrono::steady_clock::now() + kWait;
  while (stat("ferry_live_feed_shared_subscribers") > 0 &&
         std::chrono::steady_clock::now() < give_up) {
  }
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 0);
  cell_->stop();  // every record written
  std::ifstream in(log_);
  std::string line;
  int shared = 0;
  while (std::getline(in, line)) {
    // The clients' records (their shared feed's own reads are "<id>-r<n>").
    constexpr std::string_view kId = "\"request_id\":\"";
    const size_t id = line.find(kId);
    if (id == std::string::npos) continue;
    const size_t from = id + kId.size();
    const std::string request_id = line.substr(from, line.find('"', from) - from);
    if (request_id.rfind("shared-sub-", 0) != 0 || request_id.find("-r") != std::string::npos) {
      continue;
    }
    const size_t field = line.find("\"feed_shared\":");
    EXPECT_NE(field, std::string::npos) << line;
    const std::string value = field == std::string::npos ? "" : line.substr(field + 14, 6);
    if (value.rfind("true", 0) == 0 || value.rfind("\"true\"", 0) == 0) ++shared;
  }
  EXPECT_EQ(shared, 3) << "one record per client, each feed_shared true";
}

class SlowSubscriberFixture : public SharedFeedFixture {
 protected:
  // A client's write buffer is "full" at 16 KiB (the least ferry takes), so a client that stops
  // reading passes it as soon as the kernel's buffers are full.
  std::string limitsExtraYaml() const override { return "buffer_high_watermark_bytes: 16384"; }
};
using SlowSubscriberTest = OverTransports<SlowSubscriberFixture>;
FORWARDING_OVER_TRANSPORTS(SlowSubscriberTest);

TEST_P(SlowSubscriberTest, ASlowClientIsDetachedWhileTheOthersReceiveEveryEventOnTime) {
  const std::string s = cell_->streamOwnedBy(kOwner, "slow");
  createAt(kOwner, s, "application/json");
  Subscribers subs;
  for (int i = 0; i < 4; ++i) ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1"));
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_subscribers", 4), 4);
  Subscriber& slow = *subs.back();  // from now on it does not read its socket

  // 16 KiB events until the slow client is detached (its socket, ferry's write buffer and
  // subscriber_buffer full), and a few more: each reaches the three others before the next is
  // appended (within 5 s: nothing waits for the slow client).
  constexpr size_t kPad = 16384;
  int appended = 0;
  int detached_at = -1;
  while (appended < 2000 && (detached_at < 0 || appended < detached_at + 5)) {
    ASSERT_EQ(appendJson(s, appended, appended + 1, kPad), offsetOf(appended + 1));
    ++appended;
    for (size_t i = 0; i + 1 < subs.size(); ++i) {
      ASSERT_NO_FATAL_FAILURE(
          readUntilOffset(subs[i]->client, subs[i]->text, offsetOf(appended), Ms(5000)))
          << "subscriber " << i << " missed event " << appended - 1;
    }
    if (detached_at < 0 && stat("ferry_live_feed_detached_subscribers_total") >= 1) {
      detached_at = appended;
    }
  }
  ASSERT_GE(detached_at, 0) << "the slow client was never detached after " << appended
                            << " events of 16 KiB";
  EXPECT_EQ(stat("ferry_live_feed_detached_subscribers_total"), 1);

  // It reads again: every event once, in order, from its own read; then it meets the feed.
  ASSERT_NO_FATAL_FAILURE(readUntilOffset(slow.client, slow.text, offsetOf(appended)));
  EXPECT_TRUE(isExactFeed(slow.text, 0, appended));
  ASSERT_EQ(appendJson(s, appended, appended + 1), offsetOf(appended + 1));
  ++appended;
  for (auto& sub : subs) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, offsetOf(appended)));
    EXPECT_TRUE(isExactFeed(sub->text, 0, appended));
  }
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_subscribers", 4), 4);
  EXPECT_EQ(waitForSseFeedsLive(kOwner, 1), 1) << "the slow client's own read ended";
}

// Reads the instance could tell apart never share: different credentials, different values of
// a share_key_headers header (x-tenant). A third read with the first one's headers does share
// (what the test would see if the others did).

TEST_P(SharedFeedTest, DifferentAuthorizationNeverShares) {
  expectTwoFeedsForTwoKeys("auth", {{"authorization", "Bearer alice"}},
                           {{"authorization", "Bearer bob"}});
}

TEST_P(SharedFeedTest, DifferentShareKeyHeaderValuesNeverShare) {
  expectTwoFeedsForTwoKeys("tenant", {{"authorization", "Bearer fleet"}, {"x-tenant", "t1"}},
                           {{"authorization", "Bearer fleet"}, {"x-tenant", "t2"}});
}

TEST_P(SharedFeedTest, StreamClosedEndsEverySubscriberCleanly) {
  const std::string s = cell_->streamOwnedBy(kOwner, "closed");
  createAt(kOwner, s, "application/json");
  Subscribers subs;
  for (int i = 0; i < 5; ++i) ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1"));
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_subscribers", 5), 5);
  ASSERT_EQ(appendJson(s, 0, 2), offsetOf(2));

  auto del = httpRequest(cell_->emulator(kOwner).port(), "DELETE", "/v1/stream/" + s);
  ASSERT_TRUE(del.isOk() && del->status == 204);
  for (auto& sub : subs) {
    auto rest = sub->client.readResponse(Ms(5000));
    ASSERT_TRUE(rest.isOk()) << "the response did not end cleanly: " << rest.status().message();
    const std::string& body = rest->body;  // the whole body, with what was read before
    EXPECT_EQ(ferry::testing::sseRecords(body), expectedRecords(2));
    const std::string closed = "\"streamClosed\":true}\n\n";
    ASSERT_GE(body.size(), closed.size());
    EXPECT_EQ(body.substr(body.size() - closed.size()), closed) << "the last frame is the end";
  }
  EXPECT_EQ(resumes(), 0);
  EXPECT_EQ(stat("ferry_live_feed_shared_feeds"), 0);
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 0);
}

TEST_P(SharedFeedTest, HandOverMidSharedFeedIsOneResumeAndNoGapForAnySubscriber) {
  const std::string s = movingStream("shared-handover");
  createAt(kOldOwner, s, "application/json");
  Subscribers subs;
  for (int i = 0; i < 6; ++i) ASSERT_NO_FATAL_FAILURE(subscribe(subs, s, "-1"));
  EXPECT_EQ(waitForStat("ferry_live_feed_shared_subscribers", 6), 6);
  EXPECT_EQ(waitForSseFeedsLive(kOldOwner, 1), 1);

  constexpr int kAppends = 60;
  std::atomic<int> progress{0};
  std::atomic<bool> done{false};
  std::string last;
  std::thread appender([&] {
    last = appendRecords(kNewOwner, s, 0, kAppends, &progress);
    done = true;
  });
  while (progress.load() < kAppends / 3 && !done.load()) std::this_thread::yield();
  handOver(s);
  appender.join();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(last, offsetOf(kAppends));

  for (auto& sub : subs) {
    ASSERT_NO_FATAL_FAILURE(readUntilOffset(sub->client, sub->text, last));
    EXPECT_TRUE(isExactFeed(sub->text, 0, kAppends));
  }
  EXPECT_EQ(ferry::testing::sseRecords(subs[0]->text),
            ferry::testing::sseRecords(directRead(kNewOwner, s, last)));
  EXPECT_EQ(resumes(), 1) << "the shared feed resumed once, for all its subscribers";
  EXPECT_EQ(stat("ferry_live_feed_resume_failures_total"), 0);
  EXPECT_EQ(stat("ferry_live_feed_shared_subscribers"), 6);
}

}  // namespace
}  // namespace ferry::fwdtest
