// The HTTP/2 pool seen from its user, against an owner scripted in the same process: ferry's
// own listener and server codec (h2c) on the test's dispatcher, with raw frames written past
// the codec where an owner misbehaves (REFUSED_STREAM, a GOAWAY that leaves streams out).
// The pool's loop runs until every user has its answer.

#include "proxy/upstream/http2_conn_pool.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/http/http2/codec_factory.h"
#include "proxy/net/connection.h"
#include "proxy/net/listener.h"
#include "proxy/upstream/upstream_stats.h"
#include "tests/proxy/http/http2/h2_test_client.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::upstream {
namespace {

using http::http2::testing::FakeServerCallbacks;
using http::http2::testing::FakeStream;
using http::http2::testing::frame;

std::string u32(uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  return out;
}

// One accepted connection of the owner: ferry's server codec on it.
struct OwnerConnection : public net::ConnectionCallbacks {
  OwnerConnection(event::Dispatcher& dispatcher, int fd, const http::http2::Http2Settings& settings)
      : connection(net::Connection::fromAccepted(dispatcher, fd)) {
    connection->setCallbacks(*this);
    codec = http::http2::createServerCodec(connection->output(), callbacks, settings, &dispatcher);
  }
  void onData(Buffer& input) override {
    if (!codec->dispatch(input)) connection->close(net::CloseMode::FlushWrite);
  }
  void onEvent(net::ConnectionEvent event) override {
    if (event == net::ConnectionEvent::RemoteClose || event == net::ConnectionEvent::LocalClose) {
      closed = true;
    }
  }
  // A frame the codec would not write (the owner misbehaves or refuses).
  void raw(const std::string& bytes) { connection->output().add(bytes); }

  net::ConnectionPtr connection;
  FakeServerCallbacks callbacks;
  std::unique_ptr<http::ServerCodec> codec;
  bool closed = false;
};

// The owner: accepts h2c connections; `on_request` sees each complete request.
class Owner {
 public:
  Owner(event::Dispatcher& dispatcher, http::http2::Http2Settings settings = {})
      : dispatcher_(dispatcher), settings_(settings) {
    auto listener = net::Listener::create(dispatcher, "127.0.0.1", 0, [this](int fd) {
      connections.push_back(std::make_unique<OwnerConnection>(dispatcher_, fd, settings_));
      OwnerConnection* conn = connections.back().get();
      if (on_accept) on_accept(*conn);
      conn->callbacks.on_new_stream = [this, conn](FakeStream& stream) {
        stream.on_headers = [this, conn](FakeStream& s) {
          if (s.ended && on_request) on_request(*conn, s);
        };
        stream.on_data = [this, conn](FakeStream& s) {
          if (s.ended && on_request) on_request(*conn, s);
        };
      };
    });
    EXPECT_TRUE(listener.isOk());
    listener_ = std::move(*listener);
  }
  uint16_t port() const { return listener_->port(); }

  static void answer(FakeStream& stream, const std::string& body) {
    http::ResponseHeaders head;
    stream.encoder->encodeHeaders(head, false);
    Buffer data;
    data.add(body);
    stream.encoder->encodeData(data, true);
  }

  std::vector<std::unique_ptr<OwnerConnection>> connections;
  std::function<void(OwnerConnection&, FakeStream&)> on_request;
  std::function<void(OwnerConnection&)> on_accept;

 private:
  event::Dispatcher& dispatcher_;
  http::http2::Http2Settings settings_;
  std::unique_ptr<net::Listener> listener_;
};

// A stream's user, as the router's upstream request is.
class FakeUser : public UpstreamStreamCallbacks,
                 public RequestSource,
                 public http::ResponseDecoder {
 public:
  FakeUser(std::function<void()> on_done, std::string path) : on_done_(std::move(on_done)) {
    head_.method = "GET";
    head_.path = std::move(path);
    head_.authority = "owner.test";
  }

  void onPoolReady(http::RequestEncoder& encoder, UpstreamStream& stream) override {
    ++ready;
    stream_ = &stream;
    if (slow) stream.readDisable(true);  // its client reads slowly
    encoder.encodeHeaders(head_, upload.empty());
    if (upload.empty()) return;
    Buffer body;
    body.add(upload);
    encoder.encodeData(body, true);
  }
  std::string upload;  // a request body, sent whole at once
  void catchUp() {
    slow = false;
    if (stream_ != nullptr) stream_->readDisable(false);
  }
  bool slow = false;
  void onPoolFailure(const UpstreamFailure& failure) override {
    failures.push_back(failure);
    done();
  }
  void onStreamReset(const UpstreamFailure& failure) override {
    stream_ = nullptr;
    resets.push_back(failure);
    done();
  }
  void onRequestSent() override { ++sent; }
  void onAboveWriteBufferHighWatermark() override {}
  void onBelowWriteBufferLowWatermark() override {}
  const http::RequestHeaders& requestHead() const override { return head_; }
  bool copyRequestBody(Buffer&) const override { return true; }
  void onInformational(http::ResponseHeadersPtr) override {}
  void onResponseHeaders(http::ResponseHeadersPtr headers, bool end_stream) override {
    status = headers->status;
    if (end_stream) finish();
  }
  void onResponseData(Buffer& data, bool end_stream) override {
    body += data.toString();
    data.drain(data.length());
    if (end_stream) finish();
  }
  void letGo() {
    if (stream_ != nullptr) stream_->resetStream();
    stream_ = nullptr;
  }

  int ready = 0;
  int sent = 0;
  int status = 0;
  std::string body;
  bool complete = false;
  std::vector<UpstreamFailure> failures;
  std::vector<UpstreamFailure> resets;

 private:
  void finish() {
    complete = true;
    letGo();
    done();
  }
  void done() {
    if (on_done_) on_done_();
  }
  http::RequestHeaders head_;
  UpstreamStream* stream_ = nullptr;
  std::function<void()> on_done_;
};

class Http2ConnPoolTest : public ::testing::Test {
 protected:
  Http2ConnPoolTest() : stats_(store_) {}

  std::unique_ptr<Http2ConnPool> makePool(uint16_t port, PoolSettings settings = {}) {
    UpstreamTarget target{"inst-2", "http", "127.0.0.1", port, ""};
    settings.owner_protocol = OwnerProtocol::H2;
    return std::make_unique<Http2ConnPool>(dispatcher_, target, settings, stats_, false);
  }
  // Starts `n` streams; the loop runs until every one answered or failed.
  std::vector<std::unique_ptr<FakeUser>> run(Http2ConnPool& pool, int n) {
    std::vector<std::unique_ptr<FakeUser>> users;
    int left = n;
    for (int i = 0; i < n; ++i) {
      users.push_back(std::make_unique<FakeUser>(
          [this, &left] {
            if (--left == 0) dispatcher_.exit();
          },
          "/s/" + std::to_string(i)));
      pool.newStream(*users.back(), *users.back(), *users.back());
    }
    if (left > 0) dispatcher_.run();
    return users;
  }
  int64_t stat(const std::string& name, const stats::Labels& labels = {}) {
    return testing::statOf(store_, name, labels);
  }

  event::Dispatcher dispatcher_;
  stats::Store store_;
  UpstreamStats stats_;
};

TEST_F(Http2ConnPoolTest, ConcurrentStreamsShareOneConnection) {
  Owner owner(dispatcher_);
  owner.on_request = [](OwnerConnection&, FakeStream& s) { Owner::answer(s, s.headers->path); };
  auto pool = makePool(owner.port());
  auto users = run(*pool, 20);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(users[i]->status, 200);
    EXPECT_EQ(users[i]->body, "/s/" + std::to_string(i));
    EXPECT_EQ(users[i]->sent, 1);
  }
  EXPECT_EQ(owner.connections.size(), 1u);
  EXPECT_EQ(pool->connections(), 1u);
  EXPECT_EQ(stat("ferry_owner_connections_active", {{"protocol", "h2"}}), 1);
  EXPECT_EQ(stat("ferry_owner_h2_streams_active"), 0);
  // And again, sequentially, on the same connection.
  auto again = run(*pool, 1);
  EXPECT_EQ(again[0]->status, 200);
  EXPECT_EQ(owner.connections.size(), 1u);
}

TEST_F(Http2ConnPoolTest, ASecondConnectionOpensOnlyWhenTheFirstIsFull) {
  http::http2::Http2Settings owner_settings;
  owner_settings.max_concurrent_streams = 3;
  Owner owner(dispatcher_, owner_settings);
  std::vector<FakeStream*> held;
  owner.on_request = [&held](OwnerConnection&, FakeStream& s) {
    held.push_back(&s);
    if (held.size() == 5) {
      for (FakeStream* h : held) Owner::answer(*h, "late");
    }
  };
  auto pool = makePool(owner.port());
  auto users = run(*pool, 5);
  for (auto& u : users) EXPECT_EQ(u->body, "late");
  // The owner's SETTINGS_MAX_CONCURRENT_STREAMS (3) filled the first; two went on a second.
  EXPECT_EQ(owner.connections.size(), 2u);
  ASSERT_EQ(owner.connections[0]->callbacks.streams.size(), 3u);
  EXPECT_EQ(owner.connections[1]->callbacks.streams.size(), 2u);
}

TEST_F(Http2ConnPoolTest, TheConfiguredCapBoundsStreamsPerConnection) {
  Owner owner(dispatcher_);
  std::vector<FakeStream*> held;
  owner.on_request = [&held](OwnerConnection&, FakeStream& s) {
    held.push_back(&s);
    if (held.size() == 4) {
      for (FakeStream* h : held) Owner::answer(*h, "ok");
    }
  };
  PoolSettings settings;
  settings.h2_max_streams_per_connection = 2;
  auto pool = makePool(owner.port(), settings);
  auto users = run(*pool, 4);
  for (auto& u : users) EXPECT_EQ(u->body, "ok");
  EXPECT_EQ(owner.connections.size(), 2u);
}

TEST_F(Http2ConnPoolTest, RefusedStreamIsReportedUnsentAndNotRetried) {
  Owner owner(dispatcher_);
  owner.on_request = [](OwnerConnection& conn, FakeStream& s) {
    conn.raw(frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_REFUSED_STREAM)));
    (void)s;
  };
  auto pool = makePool(owner.port());
  auto users = run(*pool, 1);
  ASSERT_EQ(users[0]->resets.size(), 1u);
  EXPECT_EQ(users[0]->resets[0].kind, UpstreamFailure::Kind::StreamRefused);
  EXPECT_FALSE(users[0]->resets[0].request_bytes_sent);
  EXPECT_EQ(stat("ferry_owner_h2_refused_streams_total"), 1);
  EXPECT_EQ(stat("ferry_upstream_retries_total"), 0);
  EXPECT_EQ(owner.connections[0]->callbacks.streams.size(), 1u);
}

// RFC 9113 §6.8: the stream at or below last-stream-id finishes on the old connection; the one
// above it was not processed and goes once more, on a new connection.
TEST_F(Http2ConnPoolTest, GoAwayFinishesOldStreamsAndRetriesTheOnesLeftOut) {
  Owner owner(dispatcher_);
  std::vector<std::pair<OwnerConnection*, FakeStream*>> seen;
  owner.on_request = [&seen](OwnerConnection& conn, FakeStream& s) {
    seen.push_back({&conn, &s});
    if (seen.size() == 2) {
      // Stream 1 is taken; stream 3 is left out.
      conn.raw(frame(NGHTTP2_GOAWAY, 0, 0, u32(1) + u32(NGHTTP2_NO_ERROR)));
      Owner::answer(*seen[0].second, "first");
    } else if (seen.size() == 3) {
      Owner::answer(s, "retried");
    }
  };
  auto pool = makePool(owner.port());
  auto users = run(*pool, 2);
  EXPECT_EQ(users[0]->body, "first");
  EXPECT_EQ(users[1]->body, "retried");
  EXPECT_TRUE(users[1]->resets.empty());
  EXPECT_EQ(owner.connections.size(), 2u);
  EXPECT_EQ(stat("ferry_owner_h2_goaways_received_total"), 1);
  EXPECT_EQ(stat("ferry_owner_h2_refused_streams_total"), 1);
  EXPECT_EQ(stat("ferry_upstream_retries_total"), 1);
}

TEST_F(Http2ConnPoolTest, ResetAfterTheRequestWasSentMayHaveBeenApplied) {
  Owner owner(dispatcher_);
  owner.on_request = [](OwnerConnection& conn, FakeStream&) {
    conn.raw(frame(NGHTTP2_RST_STREAM, 0, 1, u32(NGHTTP2_INTERNAL_ERROR)));
  };
  auto pool = makePool(owner.port());
  auto users = run(*pool, 1);
  ASSERT_EQ(users[0]->resets.size(), 1u);
  EXPECT_EQ(users[0]->resets[0].kind, UpstreamFailure::Kind::Reset);
  EXPECT_TRUE(users[0]->resets[0].request_bytes_sent);
  EXPECT_EQ(stat("ferry_owner_h2_resets_total", {{"phase", "after_send"}}), 1);
}

TEST_F(Http2ConnPoolTest, AClosedConnectionFailsOnlyItsOwnStreams) {
  Owner owner(dispatcher_);
  std::vector<std::pair<OwnerConnection*, FakeStream*>> seen;
  owner.on_request = [&seen](OwnerConnection& conn, FakeStream& s) {
    seen.push_back({&conn, &s});
    if (seen.size() < 2) return;
    // Two connections (cap 1): the first dies, the second answers.
    seen[0].first->connection->close(net::CloseMode::NoFlush);
    Owner::answer(*seen[1].second, "survivor");
  };
  PoolSettings settings;
  settings.h2_max_streams_per_connection = 1;
  auto pool = makePool(owner.port(), settings);
  auto users = run(*pool, 2);
  ASSERT_EQ(users[0]->resets.size(), 1u);
  EXPECT_TRUE(users[0]->resets[0].request_bytes_sent);
  EXPECT_EQ(users[1]->body, "survivor");
  EXPECT_TRUE(users[1]->resets.empty());
}

TEST_F(Http2ConnPoolTest, AnOwnerThatStopsAnsweringPingsIsClosed) {
  Owner owner(dispatcher_);
  // The owner takes the request, then reads nothing more: no PING ack ever comes.
  owner.on_request = [](OwnerConnection& conn, FakeStream&) { conn.connection->readDisable(true); };
  PoolSettings settings;
  settings.h2_ping_interval = event::Millis{50};
  settings.h2_ping_timeout = event::Millis{50};
  auto pool = makePool(owner.port(), settings);
  auto users = run(*pool, 1);
  ASSERT_EQ(users[0]->resets.size(), 1u);
  EXPECT_TRUE(users[0]->resets[0].request_bytes_sent);
  EXPECT_EQ(stat("ferry_owner_h2_ping_timeouts_total"), 1);
  EXPECT_EQ(stat("ferry_owner_connections_active", {{"protocol", "h2"}}), 0);
}

TEST_F(Http2ConnPoolTest, IdleConnectionClosesAndCountsItsStreams) {
  Owner owner(dispatcher_);
  owner.on_request = [](OwnerConnection&, FakeStream& s) { Owner::answer(s, "x"); };
  PoolSettings settings;
  settings.idle_timeout = event::Millis{30};
  auto pool = makePool(owner.port(), settings);
  auto users = run(*pool, 3);
  for (auto& u : users) EXPECT_EQ(u->body, "x");
  // Wait for the owner to see the close (the pool's GOAWAY, then FIN).
  event::TimerPtr timer = dispatcher_.createTimer([&] {
    if (owner.connections[0]->closed) {
      dispatcher_.exit();
    } else {
      timer->enable(event::Millis{5});
    }
  });
  timer->enable(event::Millis{5});
  dispatcher_.run();
  EXPECT_EQ(stat("ferry_owner_connections_active", {{"protocol", "h2"}}), 0);
  EXPECT_EQ(stat("ferry_owner_h2_streams_per_connection_count"), 1);
  EXPECT_EQ(stat("ferry_owner_h2_streams_per_connection_sum"), 3);
  EXPECT_EQ(pool->connections(), 0u);
}

// "A slow subscriber slows only its own stream, never the shared connection": the slow
// stream's credit is not returned, so the owner stops at its window while the other stream on
// the same connection gets its whole answer; once the slow one reads again, it gets the rest.
TEST_F(Http2ConnPoolTest, ASlowStreamHoldsOnlyItsOwnWindow) {
  Owner owner(dispatcher_);
  const std::string big(1024 * 1024, 'x');
  owner.on_request = [&big](OwnerConnection&, FakeStream& s) { Owner::answer(s, big); };
  auto pool = makePool(owner.port());
  FakeUser slow([] {}, "/slow");
  slow.slow = true;
  FakeUser fast([this] { dispatcher_.exit(); }, "/fast");
  pool->newStream(slow, slow, slow);
  pool->newStream(fast, fast, fast);
  dispatcher_.run();
  EXPECT_TRUE(fast.complete);
  EXPECT_EQ(fast.body.size(), big.size());
  EXPECT_FALSE(slow.complete);
  // At most its stream window (256 KiB, what was in flight) reached the slow one.
  EXPECT_LE(slow.body.size(), 256u * 1024);
  EXPECT_EQ(owner.connections.size(), 1u);
  // The slow client catches up: the rest comes (the loop runs until it is complete).
  event::TimerPtr timer;
  timer = dispatcher_.createTimer([&] {
    if (slow.complete) {
      dispatcher_.exit();
    } else {
      timer->enable(event::Millis{2});
    }
  });
  slow.catchUp();
  timer->enable(event::Millis{2});
  dispatcher_.run();
  EXPECT_TRUE(slow.complete);
  EXPECT_EQ(slow.body.size(), big.size());
}

TEST_F(Http2ConnPoolTest, AnOwnerThatIsDownFailsTheWaitersAsRefused) {
  uint16_t port = 0;
  {
    Owner gone(dispatcher_);
    port = gone.port();
  }
  auto pool = makePool(port);
  auto users = run(*pool, 2);
  for (auto& u : users) {
    ASSERT_EQ(u->failures.size(), 1u);
    EXPECT_EQ(u->failures[0].kind, UpstreamFailure::Kind::ConnectFailed);
    EXPECT_FALSE(u->failures[0].request_bytes_sent);
  }
}

// Issue 21: an owner that stops reading leaves its connection's writes stuck above the write
// high watermark. A new stream must not queue behind those bytes (until the PING timeout, 15 s
// by default): it goes to a fresh connection.
TEST_F(Http2ConnPoolTest, ANewStreamAvoidsAConnectionStuckAboveItsWriteWatermark) {
  http::http2::Http2Settings owner_settings;
  // Credit for the whole upload up front, so only the socket (the owner not reading) stops it.
  owner_settings.initial_stream_window = 64 * 1024 * 1024;
  owner_settings.connection_window = 64 * 1024 * 1024;
  Owner owner(dispatcher_, owner_settings);
  owner.on_accept = [&owner](OwnerConnection& conn) {
    if (owner.connections.size() == 1) conn.connection->readDisable(true);  // the stuck one
  };
  owner.on_request = [](OwnerConnection&, FakeStream& s) { Owner::answer(s, "fresh"); };
  PoolSettings settings;
  settings.high_watermark = 64 * 1024;
  auto pool = makePool(owner.port(), settings);

  // Runs the loop until `done` holds, or fails the test after 10 s.
  auto runUntil = [this](const std::function<bool()>& done) {
    bool timed_out = false;
    event::TimerPtr deadline = dispatcher_.createTimer([&] {
      timed_out = true;
      dispatcher_.exit();
    });
    event::TimerPtr poll;
    poll = dispatcher_.createTimer([&] {
      if (done()) {
        dispatcher_.exit();
      } else {
        poll->enable(event::Millis{2});
      }
    });
    deadline->enable(event::Millis{10'000});
    poll->enable(event::Millis{2});
    dispatcher_.run();
    return !timed_out;
  };

  // 32 MiB, far more than the loopback socket buffers hold for an owner that does not read.
  FakeUser uploader([] {}, "/upload");
  uploader.upload.assign(32 * 1024 * 1024, 'u');
  pool->newStream(uploader, uploader, uploader);
  ASSERT_TRUE(runUntil([&] { return pool->writeBlockedConnections() == 1; }))
      << "the first connection never went above its write watermark";
  EXPECT_EQ(pool->connections(), 1u);
  EXPECT_GE(stat("ferry_owner_h2_write_blocked_total"), 1);

  FakeUser next([] {}, "/next");
  pool->newStream(next, next, next);
  ASSERT_TRUE(runUntil([&] { return next.complete || !next.failures.empty(); }))
      << "the new stream waited behind the stuck connection";
  EXPECT_EQ(next.body, "fresh");
  EXPECT_EQ(owner.connections.size(), 2u);
  EXPECT_EQ(pool->writeBlockedConnections(), 1u);
  EXPECT_FALSE(uploader.complete);
  EXPECT_TRUE(uploader.resets.empty());
}

}  // namespace
}  // namespace ferry::upstream
