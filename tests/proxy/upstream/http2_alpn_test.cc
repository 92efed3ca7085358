// Protocol choice by ALPN for https owners (proxy/upstream/http2_conn_pool.h): the pool offers
// [h2, http/1.1] under owner_protocol auto and [h2] under h2; the owner's choice picks the
// codec. An owner that picks http/1.1 keeps its connection (the HTTP/1.1 pool adopts it: one
// handshake) and is spoken to over HTTP/1.1 from then on. The owner is ferry's own TLS server
// side in this process: ALPN h2 gets ferry's HTTP/2 server codec, http/1.1 a canned answer.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "integration/certs/test_certs.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/http2/codec_factory.h"
#include "proxy/net/connection.h"
#include "proxy/net/listener.h"
#include "proxy/tls/client_context.h"
#include "proxy/tls/server_context.h"
#include "proxy/upstream/http2_conn_pool.h"
#include "proxy/upstream/upstream_stats.h"
#include "tests/proxy/http/http2/h2_test_client.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::upstream {
namespace {

using http::http2::testing::FakeServerCallbacks;
using http::http2::testing::FakeStream;

// One accepted TLS connection: h2 or HTTP/1.1, as ALPN said.
struct TlsOwnerConnection : public net::ConnectionCallbacks {
  TlsOwnerConnection(event::Dispatcher& dispatcher, net::ConnectionPtr c)
      : dispatcher(dispatcher), connection(std::move(c)) {
    connection->setCallbacks(*this);
  }
  void onData(Buffer& input) override {
    if (codec != nullptr) {
      codec->dispatch(input);
      return;
    }
    // HTTP/1.1: a bodiless GET per request head; answer each.
    std::string text = input.toString();
    size_t end = 0;
    while ((end = text.find("\r\n\r\n")) != std::string::npos) {
      ++http1_requests;
      input.drain(end + 4);
      text = input.toString();
      connection->output().add(std::string("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhttp1"));
    }
  }
  void onEvent(net::ConnectionEvent event) override {
    if (event != net::ConnectionEvent::Connected) return;
    alpn = std::string(connection->tlsAlpn());
    if (alpn != "h2") return;
    callbacks.on_new_stream = [](FakeStream& stream) {
      stream.on_headers = [](FakeStream& s) {
        http::ResponseHeaders head;
        s.encoder->encodeHeaders(head, false);
        Buffer body;
        body.add("h2");
        s.encoder->encodeData(body, true);
      };
    };
    codec = http::http2::createServerCodec(connection->output(), callbacks,
                                           http::http2::Http2Settings{}, &dispatcher);
  }

  event::Dispatcher& dispatcher;
  net::ConnectionPtr connection;
  FakeServerCallbacks callbacks;
  std::unique_ptr<http::ServerCodec> codec;
  std::string alpn;
  int http1_requests = 0;
};

class Http2AlpnTest : public ::testing::Test {
 protected:
  Http2AlpnTest() : stats_(store_) {
    char dir_template[] = "/tmp/ferry-h2-alpn-XXXXXX";
    dir_ = mkdtemp(dir_template);
    const auto ca = testing::makeCa("alpn test CA");
    testing::LeafOptions options;
    options.ips = {"127.0.0.1"};
    const auto leaf = testing::makeLeaf(ca, options);
    EXPECT_TRUE(testing::writeFile(dir_ + "/ca.pem", ca.cert_pem).isOk());
    EXPECT_TRUE(testing::writeFile(dir_ + "/server.pem", leaf.cert_pem).isOk());
    EXPECT_TRUE(testing::writeFile(dir_ + "/server.key", leaf.key_pem).isOk());
    tls::ClientSettings client;
    client.ca_file = dir_ + "/ca.pem";
    auto context = tls::ClientContext::create(client);
    EXPECT_TRUE(context.isOk());
    client_tls_ = std::make_shared<tls::ClientContextSlot>(*context);
  }
  ~Http2AlpnTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // An owner whose listener offers `alpn`.
  void startOwner(std::vector<std::string> alpn) {
    tls::ServerSettings settings;
    settings.cert_file = dir_ + "/server.pem";
    settings.key_file = dir_ + "/server.key";
    settings.alpn = std::move(alpn);
    settings.session_tickets = false;
    auto context = tls::ServerContext::create(settings, nullptr);
    ASSERT_TRUE(context.isOk()) << context.status().message();
    server_tls_ = *context;
    auto listener = net::Listener::create(dispatcher_, "127.0.0.1", 0, [this](int fd) {
      owners_.push_back(std::make_unique<TlsOwnerConnection>(
          dispatcher_, net::Connection::fromAcceptedTls(dispatcher_, fd, *server_tls_,
                                                        event::Millis{5000}, nullptr)));
    });
    ASSERT_TRUE(listener.isOk());
    listener_ = std::move(*listener);
  }

  std::unique_ptr<Http2ConnPool> makePool(OwnerProtocol protocol) {
    PoolSettings settings;
    settings.tls = client_tls_;
    settings.owner_protocol = protocol;
    UpstreamTarget target{"inst-2", "https", "127.0.0.1", listener_->port(), "127.0.0.1"};
    return std::make_unique<Http2ConnPool>(dispatcher_, target, settings, stats_,
                                           protocol == OwnerProtocol::Auto);
  }

  // One GET through the pool; the loop runs until it answered or failed.
  struct Result {
    std::string body;
    std::vector<UpstreamFailure> failures;
  };
  Result get(ConnectionPool& pool) {
    struct User : UpstreamStreamCallbacks, RequestSource, http::ResponseDecoder {
      explicit User(event::Dispatcher& d) : dispatcher(d) {
        head.method = "GET";
        head.path = "/";
        head.authority = "owner.test";
      }
      void onPoolReady(http::RequestEncoder& encoder, UpstreamStream& s) override {
        stream = &s;
        encoder.encodeHeaders(head, true);
      }
      void onPoolFailure(const UpstreamFailure& f) override {
        result.failures.push_back(f);
        dispatcher.exit();
      }
      void onStreamReset(const UpstreamFailure& f) override {
        stream = nullptr;
        result.failures.push_back(f);
        dispatcher.exit();
      }
      void onRequestSent() override {}
      void onAboveWriteBufferHighWatermark() override {}
      void onBelowWriteBufferLowWatermark() override {}
      const http::RequestHeaders& requestHead() const override { return head; }
      bool copyRequestBody(Buffer&) const override { return true; }
      void onInformational(http::ResponseHeadersPtr) override {}
      void onResponseHeaders(http::ResponseHeadersPtr, bool end) override {
        if (end) finish();
      }
      void onResponseData(Buffer& data, bool end) override {
        result.body += data.toString();
        data.drain(data.length());
        if (end) finish();
      }
      void finish() {
        if (stream != nullptr) stream->resetStream();
        stream = nullptr;
        dispatcher.exit();
      }
      event::Dispatcher& dispatcher;
      http::RequestHeaders head;
      UpstreamStream* stream = nullptr;
      Result result;
    } user(dispatcher_);
    pool.newStream(user, user, user);
    dispatcher_.run();
    return user.result;
  }
  int64_t stat(const std::string& name, const stats::Labels& labels = {}) {
    return testing::statOf(store_, name, labels);
  }

  event::Dispatcher dispatcher_;
  stats::Store store_;
  UpstreamStats stats_;
  std::string dir_;
  std::shared_ptr<tls::ClientContextSlot> client_tls_;
  std::shared_ptr<tls::ServerContext> server_tls_;
  std::unique_ptr<net::Listener> listener_;
  std::vector<std::unique_ptr<TlsOwnerConnection>> owners_;
};

TEST_F(Http2AlpnTest, AutoSpeaksH2WhenTheOwnerPicksIt) {
  startOwner({"h2", "http/1.1"});
  auto pool = makePool(OwnerProtocol::Auto);
  EXPECT_EQ(get(*pool).body, "h2");
  EXPECT_EQ(get(*pool).body, "h2");
  ASSERT_EQ(owners_.size(), 1u);
  EXPECT_EQ(owners_[0]->alpn, "h2");
  EXPECT_EQ(stat("ferry_owner_connections_active", {{"protocol", "h2"}}), 1);
  EXPECT_FALSE(pool->speaksHttp1());
}

TEST_F(Http2AlpnTest, AutoFallsBackToHttp1OnTheSameConnection) {
  startOwner({"http/1.1"});
  auto pool = makePool(OwnerProtocol::Auto);
  EXPECT_EQ(get(*pool).body, "http1");
  EXPECT_TRUE(pool->speaksHttp1());
  EXPECT_EQ(get(*pool).body, "http1");
  // One handshake: the connection that found out carried both requests.
  ASSERT_EQ(owners_.size(), 1u);
  EXPECT_EQ(owners_[0]->alpn, "http/1.1");
  EXPECT_EQ(owners_[0]->http1_requests, 2);
  EXPECT_EQ(stat("ferry_upstream_tls_handshakes_total"), 1);
  EXPECT_EQ(stat("ferry_owner_connections_active", {{"protocol", "http1"}}), 1);
  EXPECT_EQ(stat("ferry_owner_connections_active", {{"protocol", "h2"}}), 0);
}

TEST_F(Http2AlpnTest, H2OnlyRefusesAnOwnerWithoutH2AsANothingSentFailure) {
  startOwner({"http/1.1"});
  auto pool = makePool(OwnerProtocol::H2);
  Result r = get(*pool);
  ASSERT_EQ(r.failures.size(), 1u);
  EXPECT_FALSE(r.failures[0].request_bytes_sent);
  EXPECT_TRUE(r.failures[0].kind == UpstreamFailure::Kind::TlsHandshakeFailed ||
              r.failures[0].kind == UpstreamFailure::Kind::ConnectFailed)
      << failureKindName(r.failures[0].kind);
  EXPECT_EQ(stat("ferry_owner_connections_active", {{"protocol", "h2"}}), 0);
}

}  // namespace
}  // namespace ferry::upstream
