// The TLS read path of Connection (proxy/net/connection_tls.cc) against a real OpenSSL server
// on loopback (tests/support/tls/scripted_tls_owner.h): decrypted bytes OpenSSL holds raise no
// socket event, so a read that stops at its budget must come back by itself.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "integration/certs/test_certs.h"
#include "proxy/event/dispatcher.h"
#include "proxy/net/connection.h"
#include "proxy/tls/client_context.h"
#include "tests/support/tls/scripted_tls_owner.h"

namespace ferry::net {
namespace {

class Collect : public ConnectionCallbacks {
 public:
  Collect(event::Dispatcher& dispatcher, size_t want) : dispatcher_(dispatcher), want_(want) {}
  void onData(Buffer& input) override {
    got_ += input.length();
    input.drain(input.length());
    if (got_ >= want_) dispatcher_.exit();
  }
  void onEvent(ConnectionEvent event) override {
    if (event == ConnectionEvent::Connected) {
      connected_ = true;
      // Stop reading before any application data: the flight must pile up in the socket.
      if (hold_on_connect_ != nullptr) hold_on_connect_->readDisable(true);
    } else {
      closed_ = true;
      dispatcher_.exit();
    }
  }
  size_t got_ = 0;
  bool connected_ = false;
  Connection* hold_on_connect_ = nullptr;
  bool closed_ = false;

 private:
  event::Dispatcher& dispatcher_;
  size_t want_;
};

// One flight larger than the 64 KiB read budget, in 100-byte records, then silence (the owner
// keeps the connection open, so no EOF wakes the reader). The client starts reading only once
// the whole flight is in its socket: the budget runs out with the last records already pulled
// from the socket into OpenSSL (read-ahead), and only the re-arm in doTlsRead() delivers them.
TEST(ConnectionTlsTest, RecordsOpenSslHoldsPastTheReadBudgetAreDelivered) {
  char dir_template[] = "/tmp/ferry-conn-tls-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  struct RemoveDir {  // however the test ends
    std::string path;
    ~RemoveDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } remove_dir{dir};
  const auto ca = testing::makeCa("connection test CA");
  testing::LeafOptions options;
  options.ips = {"127.0.0.1"};
  const auto leaf = testing::makeLeaf(ca, options);
  ASSERT_TRUE(testing::writeFile(dir + "/ca.pem", ca.cert_pem).isOk());
  ASSERT_TRUE(testing::writeFile(dir + "/server.pem", leaf.cert_pem).isOk());
  ASSERT_TRUE(testing::writeFile(dir + "/server.key", leaf.key_pem).isOk());

  const size_t size = 64 * 1024 + 300;
  testing::ScriptedTlsOwner owner(dir + "/server.pem", dir + "/server.key",
                                  {.response = std::string(size, 'r'),
                                   .record_size = 100,
                                   .end = testing::TlsOwnerScript::End::KeepOpen});
  tls::ClientSettings settings;
  settings.ca_file = dir + "/ca.pem";
  auto context = tls::ClientContext::create(settings);
  ASSERT_TRUE(context.isOk()) << context.status().message();

  event::Dispatcher dispatcher;
  Collect collect(dispatcher, size);
  auto conn = Connection::connectTls(dispatcher, "127.0.0.1", owner.port(), **context, "127.0.0.1");
  conn->setCallbacks(collect);
  collect.hold_on_connect_ = conn.get();
  conn->output().add("GET / HTTP/1.1\r\n\r\n");
  // Reading is held from the handshake on (a timer polling for it raced a fast owner); release
  // it once the owner wrote the whole flight.
  bool held = false;
  bool released = false;
  event::TimerPtr poll = dispatcher.createTimer([&] {
    held = collect.connected_;
    if (held && !released && owner.responsesWritten() == 1) {
      released = true;
      conn->readDisable(false);
      return;
    }
    poll->enable(event::Millis(2));
  });
  poll->enable(event::Millis(1));
  event::TimerPtr deadline = dispatcher.createTimer([&] { dispatcher.exit(); });
  deadline->enable(event::Millis(5000));
  dispatcher.run();

  EXPECT_TRUE(released);
  EXPECT_FALSE(collect.closed_);
  EXPECT_EQ(collect.got_, size);
  conn->close(CloseMode::NoFlush);
}

}  // namespace
}  // namespace ferry::net
