// Session ticket keys of the TLS listener (proxy/tls/ticket_keys.h): a ticket resumes while its
// key is current or previous, and not once the key rotated out; the clock is the test's.
// Handshakes run in memory (a BIO pair), TLS 1.2 so the ticket arrives within the handshake.
#include "proxy/tls/ticket_keys.h"

#include <gtest/gtest.h>

#include "integration/certs/test_certs.h"
#include "integration/harness/process.h"
#include "proxy/tls/server_context.h"

namespace ferry::tls {
namespace {

using std::chrono::seconds;

struct Handshake {
  bool ok = false;
  bool resumed = false;
  SSL_SESSION* session = nullptr;  // owned by the caller
};

Handshake runHandshake(SSL_CTX* server_ctx, SSL_CTX* client_ctx, SSL_SESSION* resume) {
  Handshake h;
  SSL* server = SSL_new(server_ctx);
  SSL* client = SSL_new(client_ctx);
  BIO* server_bio = nullptr;
  BIO* client_bio = nullptr;
  BIO_new_bio_pair(&server_bio, 0, &client_bio, 0);
  SSL_set_bio(server, server_bio, server_bio);
  SSL_set_bio(client, client_bio, client_bio);
  SSL_set_accept_state(server);
  SSL_set_connect_state(client);
  if (resume != nullptr) SSL_set_session(client, resume);
  bool server_done = false;
  bool client_done = false;
  for (int i = 0; i < 20 && !(server_done && client_done); ++i) {
    if (!client_done) client_done = SSL_do_handshake(client) == 1;
    if (!server_done) server_done = SSL_do_handshake(server) == 1;
  }
  h.ok = server_done && client_done;
  h.resumed = SSL_session_reused(server) == 1;
  h.session = SSL_get1_session(client);
  SSL_shutdown(client);
  SSL_shutdown(server);
  SSL_free(client);
  SSL_free(server);
  return h;
}

class TicketKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = testing::makeTempDir("ferry-ticket-keys");
    ASSERT_TRUE(dir.isOk());
    const auto ca = testing::makeCa("ticket CA");
    const auto leaf = testing::makeLeaf(ca, {.common_name = "ferry", .ips = {"127.0.0.1"}});
    ServerSettings settings;
    settings.cert_file = *dir + "/cert.pem";
    settings.key_file = *dir + "/key.pem";
    ASSERT_TRUE(testing::writeFile(settings.cert_file, leaf.cert_pem).isOk());
    ASSERT_TRUE(testing::writeFile(settings.key_file, leaf.key_pem).isOk());
    settings.alpn.clear();
    keys_ = std::make_shared<TicketKeys>(seconds(60), [this] { return now_; });
    auto context = ServerContext::create(settings, keys_);
    testing::removeTempDir(*dir);  // the context holds what it read
    ASSERT_TRUE(context.isOk()) << context.status().message();
    server_ = *context;
    client_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(client_, TLS1_2_VERSION);
  }
  void TearDown() override { SSL_CTX_free(client_); }

  Handshake handshake(SSL_SESSION* resume) { return runHandshake(server_->raw(), client_, resume); }

  TicketKeys::Clock::time_point now_ = TicketKeys::Clock::now();
  std::shared_ptr<TicketKeys> keys_;
  std::shared_ptr<ServerContext> server_;
  SSL_CTX* client_ = nullptr;
};

TEST_F(TicketKeysTest, ATicketResumesForTwoRotationIntervalsAtMost) {
  const auto start = now_;
  Handshake first = handshake(nullptr);
  ASSERT_TRUE(first.ok);
  EXPECT_FALSE(first.resumed);
  ASSERT_TRUE(SSL_SESSION_has_ticket(first.session));

  Handshake same_key = handshake(first.session);
  EXPECT_TRUE(same_key.resumed);

  // One interval on: the first key is the previous one; it still decrypts, and the resumed
  // connection gets a fresh ticket under the new key.
  now_ = start + seconds(61);
  Handshake previous_key = handshake(first.session);
  EXPECT_TRUE(previous_key.resumed);
  EXPECT_EQ(keys_->rotations(), 1u);

  // Two more intervals: the first key is gone (full handshake); the renewed ticket still works.
  now_ = start + seconds(125);
  Handshake expired = handshake(first.session);
  EXPECT_TRUE(expired.ok);
  EXPECT_FALSE(expired.resumed);
  Handshake renewed = handshake(previous_key.session);
  EXPECT_TRUE(renewed.resumed);
  EXPECT_EQ(keys_->rotations(), 2u);

  for (auto* s :
       {first.session, same_key.session, previous_key.session, expired.session, renewed.session}) {
    SSL_SESSION_free(s);
  }
}

}  // namespace
}  // namespace ferry::tls
