#pragma once
// Fixture shared by the black-box tests: one fake upstream and one ferry process in front of
// it, both stopped when the test ends.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/integration/proxy/support/fake_upstream.h"
#include "tests/integration/proxy/support/ferry_process.h"
#include "tests/integration/proxy/support/http_message.h"

namespace ferry::itest {

class ProxyTest : public ::testing::Test {
 protected:
  // Starts ferry with `params` (upstream_port defaults to the fake upstream's).
  void startFerry(FerryConfigParams params = {}) {
    if (params.upstream_port == 1) params.upstream_port = upstream_.port();
    std::string error;
    ferry_ = FerryProcess::start(renderConfig(params), &error);
    ASSERT_NE(ferry_, nullptr) << error;
  }
  Socket connectClient() {
    Socket s = Socket::connectTo(ferry_->port());
    EXPECT_TRUE(s.valid());
    return s;
  }
  static std::string simpleGet(const std::string& path) {
    return "GET " + path + " HTTP/1.1\r\nHost: test.local\r\n\r\n";
  }
  static std::string okResponse(const std::string& body) {
    return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  FakeUpstream upstream_;
  std::unique_ptr<FerryProcess> ferry_;
};

// Every byte value, repeated: a body that any re-framing or text handling would change.
inline std::string binaryBody(size_t size) {
  std::string body(size, '\0');
  for (size_t i = 0; i < size; ++i) body[i] = static_cast<char>((i * 7 + i / 256) & 0xff);
  return body;
}

}  // namespace ferry::itest
