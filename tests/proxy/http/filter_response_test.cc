// Tests a filter as the source of the client's response (filter.h: sendResponseHeaders /
// sendResponseData; active_stream.cc's "Filter-sourced response" section and
// FilterChain::takeResponseSource): the head and body pass only the filters before the source,
// reach the client as any response does (request id, counters, access log), the terminal filter
// is not used, the client's watermarks and a drain's deadline reach the source, and misuse is
// answered with false. The terminal filter and the client are fakes (stream_fakes.h).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "proxy/access_log/access_log.h"
#include "proxy/http/http1/codec_factory.h"
#include "tests/proxy/http/stream_fixture.h"

namespace ferry::http {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

class FilterResponseTest : public testing::StreamFixture {
 protected:
  // f{i} stops the request on its head: it will answer (from the test, as a filter answers
  // from a callback of its own, e.g. an internal request's).
  void holdRequestAt(int i) {
    filter(i).on_request_headers = [](RequestHeaders&, bool) { return FilterStatus::StopAndWait; };
  }
  static ResponseHeadersPtr head(int status) {
    auto h = std::make_unique<ResponseHeaders>();
    h->status = status;
    h->headers.add("content-type", "text/event-stream");
    return h;
  }
  bool sendData(int i, const std::string& bytes, bool end_stream) {
    Buffer b;
    b.add(bytes);
    return filter(i).callbacks().sendResponseData(b, end_stream);
  }
  // Log lines of `who` ("f0", "T", "client").
  std::vector<std::string> linesOf(const std::string& who) {
    std::vector<std::string> out;
    for (const auto& line : log_) {
      if (line.rfind(who + ":", 0) == 0) out.push_back(line);
    }
    return out;
  }
};

// ---- The response's path --------------------------------------------------------------------

TEST_F(FilterResponseTest, HeadAndBodyPassTheFiltersBeforeTheSourceThenReachTheClientInOrder) {
  start(3);
  holdRequestAt(1);
  filter(0).on_response_headers = [](ResponseHeaders& h, bool) {
    h.headers.add("x-edited-by", "f0");  // a filter before the source edits it as any response
    return FilterStatus::Continue;
  };
  sendRequestHeaders(true);
  log_.clear();
  ASSERT_TRUE(filter(1).callbacks().sendResponseHeaders(head(200), false));
  ASSERT_TRUE(sendData(1, "event-1|", false));
  ASSERT_TRUE(sendData(1, "event-2|", true));
  EXPECT_THAT(log_, ElementsAre("f0:resh 200", "client:headers 200",         //
                                "f0:resb event-1|", "client:data event-1|",  //
                                "f0:resb event-2| end", "client:data event-2| end"));
  EXPECT_TRUE(linesOf("f2").empty()) << "the filters after the source see none of it";
  EXPECT_EQ(encoder_.headers->headers.get("x-edited-by"), "f0");
  EXPECT_EQ(encoder_.headers->headers.get("content-type"), "text/event-stream");
  EXPECT_EQ(encoder_.body, "event-1|event-2|");
  EXPECT_TRUE(encoder_.ended);
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
  EXPECT_TRUE(stream_->complete());
  EXPECT_EQ(filter(1).destroyed, 1);
}

TEST_F(FilterResponseTest, TheClientGetsTheRequestIdOnTheSourcesHead) {
  start(1);
  holdRequestAt(0);
  sendRequestHeaders(true);
  const auto id = stream_->requestHeaders().headers.get("x-request-id");
  ASSERT_TRUE(id.has_value() && !id->empty()) << "the stream gives every request an id";
  ASSERT_TRUE(filter(0).callbacks().sendResponseHeaders(head(200), true));
  ASSERT_TRUE(encoder_.headers.has_value());
  EXPECT_EQ(encoder_.headers->headers.get("x-request-id"), *id);
  EXPECT_TRUE(encoder_.ended) << "a head with end_stream is the whole response";
  EXPECT_EQ(owner_.completions, 1);
}

TEST_F(FilterResponseTest, TheResponseIsCountedAndAccessLoggedWithNoUpstream) {
  const std::string path = ::testing::TempDir() + "filter_response_access_log.json";
  std::remove(path.c_str());
  auto log = access_log::AccessLog::open(path);
  ASSERT_TRUE(log.isOk()) << log.status().message();
  config_.access_log = *log;
  start(1);
  holdRequestAt(0);
  sendRequestHeaders(true);
  ASSERT_TRUE(filter(0).callbacks().sendResponseHeaders(head(200), false));
  ASSERT_TRUE(sendData(0, "12345", false));
  ASSERT_TRUE(sendData(0, "678", true));
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_responses_total", {{"class", "2xx"}}), 1);
  EXPECT_EQ(ferry::testing::statOf(store_, "ferry_requests_completed_total",
                                   {{"method", "POST"}, {"class", "2xx"}}),
            1);
  EXPECT_EQ(stat("ferry_downstream_sent_bytes_total"), 8);

  std::ifstream file(path);
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  rapidjson::Document record;
  record.Parse(text.c_str());
  ASSERT_FALSE(record.HasParseError()) << text;
  EXPECT_EQ(record["status"].GetInt(), 200);
  EXPECT_EQ(record["bytes_out"].GetInt(), 8);
  EXPECT_TRUE(record["upstream"].IsNull()) << "no upstream answered: the filter did";
  EXPECT_STREQ(record["end"].GetString(), "ok");
  EXPECT_STREQ(record["request_id"].GetString(),
               std::string(*stream_->requestHeaders().headers.get("x-request-id")).c_str());
  std::remove(path.c_str());
}

// ---- The terminal filter is not used --------------------------------------------------------

TEST_F(FilterResponseTest, AnAnswerFromInsideOnRequestHeadersKeepsTheRequestFromTheTerminal) {
  start(2);
  // f0 answers while it is being called, and (carelessly) lets the head go on: the request
  // stops at the source anyway.
  filter(0).on_request_headers = [this](RequestHeaders&, bool) {
    EXPECT_TRUE(filter(0).callbacks().sendResponseHeaders(head(200), false));
    return FilterStatus::Continue;
  };
  sendRequestHeaders(false);
  sendRequestData("upload", true);
  EXPECT_EQ(terminal_->request_headers_calls, 0) << "the router was asked to send";
  EXPECT_EQ(terminal_->body, "");
  EXPECT_TRUE(linesOf("f1").empty());
  EXPECT_THAT(log_, Contains("f0:reqb upload end")) << "the source still sees the body";
  filter(0).callbacks().continueRequest();  // does nothing: the request goes no further
  EXPECT_EQ(terminal_->request_headers_calls, 0);
  EXPECT_FALSE(filter(0).callbacks().replay({owner_target_, {}})) << "no upstream attempt";
  EXPECT_TRUE(terminal_->replays.empty());
  ASSERT_TRUE(sendData(0, "done", true));
  EXPECT_EQ(encoder_.body, "done");
  EXPECT_EQ(owner_.completions, 1);
}

TEST_F(FilterResponseTest, AnAttemptThatHadStartedIsResetAndItsLateAnswerIgnored) {
  start(2);
  // f1 stops the request on its body: the head has reached the router, which started.
  filter(1).on_request_body = [](Buffer&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(false);
  sendRequestData("body", true);
  ASSERT_EQ(terminal_->request_headers_calls, 1);
  ASSERT_EQ(terminal_->resets, 0);
  ASSERT_TRUE(filter(1).callbacks().sendResponseHeaders(head(200), false));
  EXPECT_EQ(terminal_->resets, 1) << "the router's attempt is not ended";
  EXPECT_EQ(terminal_->body, "") << "the held body never reaches the router";
  terminal_->respond(502, {}, false);  // a late answer of the reset attempt
  terminal_->respondData("upstream bytes", true);
  EXPECT_TRUE(terminal_->callbacks().onUpstreamFailure({}));
  ASSERT_TRUE(sendData(1, "mine", true));
  EXPECT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 200);
  EXPECT_EQ(encoder_.body, "mine");
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
}

// ---- Watermarks, a drain's deadline, idle time ----------------------------------------------

TEST_F(FilterResponseTest, TheClientsWatermarksReachTheSourceNotTheRouter) {
  start(2);
  holdRequestAt(1);
  sendRequestHeaders(true);
  ASSERT_TRUE(filter(1).callbacks().sendResponseHeaders(head(200), false));
  log_.clear();
  stream_->onAboveWriteBufferHighWatermark();
  stream_->onBelowWriteBufferLowWatermark();
  EXPECT_THAT(log_, ElementsAre("f1:watermark above", "f1:watermark below"));
  EXPECT_TRUE(terminal_->response_pauses.empty());
}

TEST_F(FilterResponseTest, ADrainsDeadlineAsksTheSourceAndACleanEndCompletesTheStream) {
  start(2);
  encoder_.can_end_early = true;  // chunked (HTTP/1.1) or HTTP/2
  holdRequestAt(1);
  filter(1).on_end_live_feed = [this] { return sendData(1, "last-whole-event|", true); };
  sendRequestHeaders(true);
  ASSERT_TRUE(filter(1).callbacks().sendResponseHeaders(head(200), false));
  ASSERT_TRUE(sendData(1, "event|", false));
  EXPECT_EQ(stream_->endLiveFeed(), ActiveStream::LiveFeedEnd::LastChunk);
  EXPECT_THAT(log_, Contains("f1:end-live-feed"));
  EXPECT_EQ(encoder_.body, "event|last-whole-event|");
  EXPECT_TRUE(encoder_.ended);
  EXPECT_EQ(encoder_.resets, 0);
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
}

TEST_F(FilterResponseTest, ASourceThatCannotEndAtADrainsDeadlineIsCut) {
  start(1);
  encoder_.can_end_early = true;
  holdRequestAt(0);
  sendRequestHeaders(true);
  ASSERT_TRUE(filter(0).callbacks().sendResponseHeaders(head(200), false));
  // The default hook: it cannot end here (the connection manager then closes the connection).
  EXPECT_EQ(stream_->endLiveFeed(), ActiveStream::LiveFeedEnd::None);
  EXPECT_THAT(log_, Contains("f0:end-live-feed"));
  EXPECT_FALSE(encoder_.ended);
  EXPECT_FALSE(stream_->complete());
}

TEST_F(FilterResponseTest, ALengthFramedResponseIsNotAskedToEndAtADrainsDeadline) {
  start(1);
  encoder_.can_end_early = false;  // HTTP/1.1 with Content-Length: no end before its length
  holdRequestAt(0);
  filter(0).on_end_live_feed = [this] { return sendData(0, "short", true); };
  sendRequestHeaders(true);
  auto h = head(200);
  h->headers.add("content-length", "100");
  ASSERT_TRUE(filter(0).callbacks().sendResponseHeaders(std::move(h), false));
  EXPECT_EQ(stream_->endLiveFeed(), ActiveStream::LiveFeedEnd::None);
  EXPECT_THAT(log_, Not(Contains("f0:end-live-feed")));
  EXPECT_EQ(encoder_.body, "") << "a short body would pass for a whole one";
}

TEST_F(FilterResponseTest, ALiveReadAFilterHoldsUnansweredGetsA503RetryAfterAtADrainsDeadline) {
  // A filter serving a long-poll (or a feed) with internal requests holds the request and has
  // no answer yet: the client gets what the router's own waiting long-poll gets, not a cut.
  start(2);
  holdRequestAt(1);
  sendRequestHeaders(true, "/v1/stream/s?offset=5&live=long-poll");
  EXPECT_EQ(stream_->endLiveFeed(), ActiveStream::LiveFeedEnd::Retry503);
  ASSERT_TRUE(encoder_.headers.has_value());
  EXPECT_EQ(encoder_.headers->status, 503);
  EXPECT_EQ(encoder_.headers->headers.get("retry-after"), "1");
  EXPECT_NE(encoder_.body.find("draining"), std::string::npos) << encoder_.body;
  EXPECT_TRUE(encoder_.ended);
  EXPECT_EQ(encoder_.resets, 0);
  EXPECT_EQ(filter(1).destroyed, 1) << "its internal requests end with it";
  EXPECT_EQ(terminal_->request_headers_calls, 0);
}

TEST_F(FilterResponseTest, ARequestAFilterHoldsThatIsNoLiveReadIsCutAtADrainsDeadline) {
  start(1);
  holdRequestAt(0);
  sendRequestHeaders(true, "/v1/stream/s?offset=5");
  EXPECT_EQ(stream_->endLiveFeed(), ActiveStream::LiveFeedEnd::None);
  EXPECT_FALSE(encoder_.headers.has_value());
}

TEST_F(FilterResponseTest, TheSourcesBytesKeepTheStreamFromGoingIdle) {
  config_.stream_idle = event::Millis(60);
  start(1);
  holdRequestAt(0);
  sendRequestHeaders(true);
  ASSERT_TRUE(filter(0).callbacks().sendResponseHeaders(head(200), false));
  // An event every 20 ms for 12 events (four idle periods), then silence.
  int events = 0;
  event::TimerPtr writer;
  writer = dispatcher_.createTimer([&] {
    if (!sendData(0, "e|", false)) return;
    if (++events < 12) writer->enable(event::Millis(20));
  });
  writer->enable(event::Millis(20));
  owner_.on_complete = [this] { dispatcher_.exit(); };
  dispatcher_.run();  // until the idle timeout ends the stream
  EXPECT_EQ(events, 12) << "idle timeout while the source was writing";
  EXPECT_EQ(stat("ferry_stream_idle_timeouts_total"), 1) << "silence is idle";
  EXPECT_TRUE(owner_.last_cut) << "its head went out: an idle response is cut";
}

// ---- The stream's end and misuse ------------------------------------------------------------

TEST_F(FilterResponseTest, AClientResetDestroysTheSourceAndLaterWritesAreRefused) {
  start(1);
  holdRequestAt(0);
  sendRequestHeaders(true);
  ASSERT_TRUE(filter(0).callbacks().sendResponseHeaders(head(200), false));
  ASSERT_TRUE(sendData(0, "before|", false));
  encoder_.stream_callbacks->onStreamReset(StreamResetReason::RemoteReset);
  EXPECT_EQ(filter(0).destroyed, 1);
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_TRUE(owner_.last_cut);
  Buffer late;
  late.add("after|");
  EXPECT_FALSE(filter(0).callbacks().sendResponseData(late, true));
  EXPECT_EQ(late.toString(), "after|") << "a refused write leaves the bytes as they were";
  EXPECT_EQ(encoder_.body, "before|");
  EXPECT_FALSE(encoder_.ended);
}

TEST_F(FilterResponseTest, MisuseIsRefusedAndChangesNothing) {
  start(2);
  holdRequestAt(1);
  sendRequestHeaders(true);
  EXPECT_FALSE(sendData(1, "no head yet", false)) << "data before the head";
  EXPECT_EQ(encoder_.header_calls, 0);
  ASSERT_TRUE(filter(1).callbacks().sendResponseHeaders(head(200), false));
  EXPECT_FALSE(filter(1).callbacks().sendResponseHeaders(head(500), false)) << "a second head";
  ASSERT_TRUE(sendData(1, "end", true));
  EXPECT_FALSE(sendData(1, "after the end", false));
  EXPECT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.body, "end");
}

TEST_F(FilterResponseTest, AFilterThatDoesNotHoldTheRequestCannotAnswer) {
  start(1);
  sendRequestHeaders(true);  // passed every filter: the router has it
  EXPECT_FALSE(filter(0).callbacks().sendResponseHeaders(head(200), false));
  EXPECT_FALSE(sendData(0, "x", true));
  terminal_->respond(204, {}, true);  // the router's answer is the response
  EXPECT_EQ(encoder_.headers->status, 204);
  EXPECT_EQ(terminal_->resets, 1) << "only the completion's release, no reset before";
}

TEST_F(FilterResponseTest, NoHeadOnceTheUpstreamsResponseStarted) {
  start(1);
  filter(0).on_request_body = [](Buffer&, bool) { return FilterStatus::StopAndWait; };
  sendRequestHeaders(false);
  sendRequestData("a", false);  // f0 holds the request now
  terminal_->respond(200, {}, false);
  EXPECT_FALSE(filter(0).callbacks().sendResponseHeaders(head(201), false));
  EXPECT_EQ(encoder_.header_calls, 1);
  EXPECT_EQ(encoder_.headers->status, 200);
}

// ---- Through a real HTTP/1.1 codec -----------------------------------------------------------

// The codec creates the stream, as the connection manager does.
class Http1Ends : public ServerConnectionCallbacks {
 public:
  Http1Ends(testing::FakeStreamOwner& owner, event::WorkerContext& worker,
            const StreamConfig& config, stats::ProxyStats& stats)
      : owner_(owner), worker_(worker), config_(config), stats_(stats) {}
  RequestDecoder& onNewRequest(ResponseEncoder& encoder) override {
    stream = std::make_unique<ActiveStream>(owner_, encoder, worker_, config_, stats_);
    return *stream;
  }
  void readDisableConnection(bool) override {}
  std::unique_ptr<ActiveStream> stream;

 private:
  testing::FakeStreamOwner& owner_;
  event::WorkerContext& worker_;
  const StreamConfig& config_;
  stats::ProxyStats& stats_;
};

TEST_F(FilterResponseTest, OverHttp1TheResponseIsChunkedAndADrainEndsItWithTheLastChunk) {
  auto factory = std::make_shared<testing::ScriptedFilterFactory>("f0", log_);
  factory->on_create = [](testing::ScriptedFilter& f) {
    f.on_request_headers = [](RequestHeaders&, bool) { return FilterStatus::StopAndWait; };
  };
  config_.filters = {factory};
  config_.terminal = std::make_shared<testing::FakeTerminalFactory>(log_);
  Http1Ends ends(owner_, worker_, config_, proxy_stats_);
  Buffer output;
  auto codec = http1::createServerCodec(output, ends, {});
  Buffer input;
  input.add("GET /feed HTTP/1.1\r\nHost: ferry\r\n\r\n");
  ASSERT_TRUE(codec->dispatch(input));
  testing::ScriptedFilter& source = *factory->created.at(0);
  source.on_end_live_feed = [&source] {
    Buffer last;
    last.add("bye\n\n");
    return source.callbacks().sendResponseData(last, true);
  };
  ASSERT_TRUE(source.callbacks().sendResponseHeaders(head(200), false));
  Buffer event;
  event.add("hello\n\n");
  ASSERT_TRUE(source.callbacks().sendResponseData(event, false));
  EXPECT_EQ(ends.stream->endLiveFeed(), ActiveStream::LiveFeedEnd::LastChunk);
  const std::string wire = output.toString();
  EXPECT_EQ(wire.rfind("HTTP/1.1 200 ", 0), 0u) << wire;
  const std::string id(*ends.stream->requestHeaders().headers.get("x-request-id"));
  EXPECT_NE(wire.find("x-request-id: " + id + "\r\n"), std::string::npos) << wire;
  EXPECT_NE(wire.find("\r\n\r\n7\r\nhello\n\n\r\n5\r\nbye\n\n\r\n0\r\n\r\n"), std::string::npos)
      << "the head, then each write as a chunk, then the last chunk: " << wire;
  EXPECT_EQ(owner_.completions, 1);
  EXPECT_FALSE(owner_.last_cut);
  EXPECT_FALSE(codec->wantsClose()) << "a complete response: the connection may go on";
}

}  // namespace
}  // namespace ferry::http
