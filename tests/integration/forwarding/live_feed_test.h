#pragma once
// The fixture of the live-feed integration tests (issue #22, docs/live-feeds.md): the resume
// tests (live_feed_resume_test.cc), the sharing tests (shared_feed_test.cc) and the long-poll
// tests (long_poll_test.cc). A cell of three members (ForwardingTest) whose ferries get
// ferryExtraYaml(); clients read SSE feeds through the entry ferry (inst-1), appends go to an
// owner, the stream's owner changes (the emulators' hand-over) or dies, and what a client
// received is compared with a direct read at the owner.

#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "integration/streams_emulator/ownership.h"
#include "tests/integration/forwarding/forwarding_test.h"
#include "tests/support/sse/sse_records.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::fwdtest {

class LiveFeedFixture : public ForwardingTest {
 protected:
  static constexpr size_t kEntry = 0;     // inst-1: the ferry the clients read through
  static constexpr size_t kOldOwner = 1;  // inst-2: the stream's owner
  static constexpr size_t kNewOwner = 2;  // inst-3: its owner once inst-2 leaves

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

  // The hand-over of inst-2's streams to inst-3 (docs/streams-instance.md): the old owner
  // answers 503 shard_moving, then 409 naming inst-3, and ends its live feeds; `s`'s state
  // moves; the others learn the new members.
  void handOver(const std::string& s) {
    ASSERT_TRUE(
        cell_->emulator(kOldOwner).control(R"({"members":["inst-1","inst-3"],"handover_ms":500})"));
    ASSERT_NO_FATAL_FAILURE(copyStream(s));
    ASSERT_NO_FATAL_FAILURE(inst2Left());
  }
  // The rest of the cell learns that inst-2 left.
  void inst2Left() {
    ASSERT_TRUE(cell_->emulator(kEntry).control(R"({"members":["inst-1","inst-3"]})"));
    ASSERT_TRUE(cell_->emulator(kNewOwner).control(R"({"members":["inst-1","inst-3"]})"));
  }

  // Opens the raw feed of `s` at `offset` through the entry ferry, with `headers`: its head
  // read (into `head_out` when given).
  void openHead(CellClient& feed, const std::string& s, const std::string& offset = "-1",
                const Headers& headers = {}, HttpResponse* head_out = nullptr) {
    openTarget(feed, "/v1/stream/" + s + "?offset=" + offset + "&live=sse", headers, head_out);
  }
  // The same for any feed's request target (e.g. a product route's records:sse).
  void openTarget(CellClient& feed, const std::string& target, const Headers& headers = {},
                  HttpResponse* head_out = nullptr) {
    ASSERT_TRUE(connectTo(feed, cell_->ferry(kEntry)).isOk());
    ASSERT_TRUE(feed.sendRequest("GET", target, headers).isOk());
    auto head = feed.readResponseHead(Ms(5000));
    ASSERT_TRUE(head.isOk()) << head.status().message();
    ASSERT_EQ(head->status, 200);
    ASSERT_EQ(head->headerOr("content-type"), "text/event-stream");
    if (head_out != nullptr) *head_out = *head;
  }
  // openHead(), then its first control frame read into `text`.
  void openFeed(CellClient& feed, const std::string& s, std::string& text,
                const std::string& offset = "-1", const Headers& headers = {}) {
    ASSERT_NO_FATAL_FAILURE(openHead(feed, s, offset, headers));
    readUntilOffset(feed, text, "");
  }

  // One of the SSE counters of member `i`'s emulator's GET /v1/debug/requests
  // ("sse_feeds_live", "sse_feeds_started"): the upstream feeds an owner serves. A listing that
  // cannot be read fails the test (and reads as kNoSuchSeries).
  int64_t sseCounter(size_t i, const char* name) {
    const std::string json = cell_->emulator(i).requests();
    rapidjson::Document d;
    d.Parse(json.c_str());
    if (d.HasParseError() || !d.IsObject() || !d.HasMember(name) || !d[name].IsUint64()) {
      ADD_FAILURE() << cell_->emulator(i).name() << ": no " << name
                    << " in GET /v1/debug/requests: " << json;
      return ::ferry::testing::kNoSuchSeries;
    }
    return static_cast<int64_t>(d[name].GetUint64());
  }
  // Polls member `i`'s sse_feeds_live until it is `n` (each poll a new request, not a sleep);
  // the last value seen, which the caller compares.
  int64_t waitForSseFeedsLive(size_t i, int64_t n, Ms timeout = kWait) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const int64_t live = sseCounter(i, "sse_feeds_live");
      if (live == n || live == ::ferry::testing::kNoSuchSeries ||
          std::chrono::steady_clock::now() >= give_up) {
        return live;
      }
    }
  }

  // Reads events into `text` until a control frame gives `offset` ("" = any control frame).
  void readUntilOffset(CellClient& feed, std::string& text, const std::string& offset,
                       Ms timeout = Ms(20000)) {
    const auto give_up = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const std::string at = ferry::testing::sseLastOffset(text);
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

  // A direct read of `s` from `from` at member `i`'s emulator, up to `offset`.
  std::string directRead(size_t i, const std::string& s, const std::string& offset,
                         const std::string& from = "-1") {
    testing::HttpClient reader;
    EXPECT_TRUE(reader.connect(cell_->emulator(i).port()).isOk());
    EXPECT_TRUE(
        reader.sendRequest("GET", "/v1/stream/" + s + "?offset=" + from + "&live=sse").isOk());
    auto head = reader.readResponseHead();
    EXPECT_TRUE(head.isOk() && head->status == 200);
    std::string text;
    while (ferry::testing::sseLastOffset(text) != offset) {
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

  // The records {"n":from} .. {"n":to - 1}, as sseRecords() joins them.
  static std::string expectedRecords(int from, int to) {
    std::string out;
    for (int i = from; i < to; ++i) {
      if (i > from) out.push_back(',');
      out += "{\"n\":" + std::to_string(i) + "}";
    }
    return out;
  }
  static std::string expectedRecords(int count) { return expectedRecords(0, count); }
};

}  // namespace ferry::fwdtest
