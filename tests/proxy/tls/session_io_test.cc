// tls::Session's read and write paths (proxy/tls/session.cc) on a socket pair, a server and a
// client session driven in one thread: what arrives, and how many read()/write() calls it
// costs. /proc/self/io counts every read and write call of the process (syscr/syscw), failed
// ones (EAGAIN) included.
#include <event2/buffer.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "integration/certs/test_certs.h"
#include "proxy/tls/client_context.h"
#include "proxy/tls/client_session.h"
#include "proxy/tls/server_context.h"
#include "proxy/tls/server_session.h"

namespace ferry::tls {
namespace {

// The process's read (`syscr`) or write (`syscw`) call count.
long ioCount(const char* field) {
  char text[512];
  const int fd = ::open("/proc/self/io", O_RDONLY);
  if (fd < 0) return -1;
  const ssize_t got = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (got <= 0) return -1;
  text[got] = '\0';
  const char* at = strstr(text, field);
  return at == nullptr ? -1 : atol(at + strlen(field) + 1);
}

// Calls `fn` and returns how many read (or write) calls it made: the count around it, minus
// what reading /proc/self/io itself adds to the count (measured around nothing).
template <typename Fn>
long callsDuring(const char* field, Fn fn) {
  const long idle_before = ioCount(field);
  const long idle_after = ioCount(field);
  const long before = ioCount(field);
  fn();
  const long after = ioCount(field);
  return (after - before) - (idle_after - idle_before);
}

class EvBuffer {
 public:
  EvBuffer() : raw_(evbuffer_new()) {}
  ~EvBuffer() { evbuffer_free(raw_); }
  evbuffer* raw() const { return raw_; }
  std::string take() {
    std::string out(evbuffer_get_length(raw_), '\0');
    evbuffer_remove(raw_, out.data(), out.size());
    return out;
  }

 private:
  evbuffer* raw_;
};

class SessionIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/ferry-session-io-XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    const auto ca = testing::makeCa("session io test CA");
    const auto leaf = testing::makeLeaf(ca, {.common_name = "server", .dns = {"localhost"}});
    ASSERT_TRUE(testing::writeFile(dir_ + "/ca.pem", ca.cert_pem).isOk());
    ASSERT_TRUE(testing::writeCertFiles(dir_, "server", leaf).isOk());

    ServerSettings server_settings;
    server_settings.cert_file = dir_ + "/server.pem";
    server_settings.key_file = dir_ + "/server.key";
    server_settings.session_tickets = false;  // no post-handshake ticket in the way
    auto server_context = ServerContext::create(server_settings, nullptr);
    ASSERT_TRUE(server_context.isOk()) << server_context.status().message();
    server_context_ = *server_context;
    ClientSettings client_settings;
    client_settings.ca_file = dir_ + "/ca.pem";
    auto client_context = ClientContext::create(client_settings);
    ASSERT_TRUE(client_context.isOk()) << client_context.status().message();
    client_context_ = *client_context;

    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
    for (int fd : fds_) ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    server_ = ServerSession::create(*server_context_, fds_[0]);
    client_ = ClientSession::create(*client_context_, fds_[1], "localhost", "localhost|pair");
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(client_, nullptr);
    bool server_done = false;
    bool client_done = false;
    for (int i = 0; i < 50 && !(server_done && client_done); ++i) {
      if (!client_done) client_done = client_->handshake() == IoState::Done;
      if (!server_done) server_done = server_->handshake() == IoState::Done;
    }
    ASSERT_TRUE(server_done && client_done) << server_->error() << " / " << client_->error();
  }

  void TearDown() override {
    server_.reset();
    client_.reset();
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // The client sends `text` as one record.
  void clientSends(const std::string& text) {
    EvBuffer out;
    evbuffer_add(out.raw(), text.data(), text.size());
    ASSERT_EQ(client_->write(out.raw()).state, IoState::Done);
  }

  // Everything the client can read now.
  std::string clientReceives() {
    EvBuffer in;
    for (int i = 0; i < 100 && client_->read(in.raw(), 1 << 20).state == IoState::Again; ++i) {
    }
    return in.take();
  }

  std::string dir_;
  std::shared_ptr<ServerContext> server_context_;
  std::shared_ptr<ClientContext> client_context_;
  int fds_[2] = {-1, -1};
  std::unique_ptr<ServerSession> server_;
  std::unique_ptr<ClientSession> client_;
};

const std::string kRequest = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";

// Keep-alive: a request arrives as one record. One read() takes it; another would only fail
// with EAGAIN (the socket is empty and OpenSSL holds nothing): the socket's level-triggered
// event says when more arrives.
TEST_F(SessionIoTest, ARequestInOneRecordCostsOneRead) {
  clientSends(kRequest);
  EvBuffer in;
  IoResult result;
  const long reads = callsDuring("syscr", [&] { result = server_->read(in.raw(), 64 * 1024); });
  EXPECT_EQ(result.bytes, kRequest.size());
  EXPECT_EQ(result.state, IoState::WantRead);
  EXPECT_FALSE(server_->hasPending());
  EXPECT_EQ(in.take(), kRequest);
  EXPECT_EQ(reads, 1);
}

// Two records in the socket: OpenSSL's read-ahead takes both in one read(), so the loop goes on
// while OpenSSL holds bytes and delivers both, still with one read().
TEST_F(SessionIoTest, RecordsReadAheadTogetherAreAllDeliveredWithOneRead) {
  clientSends(kRequest);
  clientSends(kRequest + "second");
  EvBuffer in;
  IoResult result;
  const long reads = callsDuring("syscr", [&] { result = server_->read(in.raw(), 64 * 1024); });
  EXPECT_EQ(in.take(), kRequest + kRequest + "second");
  EXPECT_EQ(result.state, IoState::WantRead);
  EXPECT_EQ(reads, 1);
}

// A bulk upload in full records: read in place (reserved space), nothing lost across records,
// reads, or the switch between the stack and in-place paths.
TEST_F(SessionIoTest, BulkRecordsArriveWhole) {
  std::string body;
  for (int i = 0; i < 40 * 1024 + 7; ++i) body.push_back(static_cast<char>('a' + i % 26));
  clientSends(kRequest);
  clientSends(body);
  EvBuffer in;
  std::string got;
  for (int i = 0; i < 20 && got.size() < kRequest.size() + body.size(); ++i) {
    server_->read(in.raw(), 64 * 1024);
    got += in.take();
  }
  EXPECT_EQ(got, kRequest + body);
}

// A response whose head and body sit in separate blocks of the output goes out as one record
// in one write(), whole.
TEST_F(SessionIoTest, AResponseSpanningBlocksIsOneRecordInOneWrite) {
  static const char kHead[] = "HTTP/1.1 200 OK\r\ncontent-length: 64\r\n\r\n";
  static const std::string kBody(64, 'b');
  EvBuffer out;
  evbuffer_add(out.raw(), kHead, sizeof(kHead) - 1);
  evbuffer_add_reference(out.raw(), kBody.data(), kBody.size(), nullptr, nullptr);
  evbuffer_iovec blocks[2];
  ASSERT_EQ(evbuffer_peek(out.raw(), -1, nullptr, blocks, 2), 2);  // really two blocks
  IoResult result;
  const long writes = callsDuring("syscw", [&] { result = server_->write(out.raw()); });
  EXPECT_EQ(result.state, IoState::Done);
  EXPECT_EQ(evbuffer_get_length(out.raw()), 0u);
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(clientReceives(), std::string(kHead) + kBody);
}

// Larger than a record and spread over blocks that do not line up with records: every byte
// arrives, in order.
TEST_F(SessionIoTest, OutputLargerThanARecordAcrossBlocksArrivesWhole) {
  EvBuffer out;
  std::vector<std::string> blocks;
  std::string expected;
  for (int i = 0; i < 7; ++i) blocks.emplace_back(5000 + i, static_cast<char>('A' + i));
  for (const auto& block : blocks) {  // a reference is a block of its own
    evbuffer_add_reference(out.raw(), block.data(), block.size(), nullptr, nullptr);
    expected += block;
  }
  std::string got;
  for (int i = 0; i < 20 && evbuffer_get_length(out.raw()) > 0; ++i) {
    ASSERT_NE(server_->write(out.raw()).state, IoState::Error) << server_->error();
    got += clientReceives();
  }
  got += clientReceives();
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace ferry::tls
