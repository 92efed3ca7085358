// Real HTTP/2 clients (curl, nghttp, h2load, Node's http2) against the codec over a loopback
// socket (h2c with prior knowledge). The server is a blocking loop per connection standing in
// for the connection manager: read, dispatch, answer each finished request, write the output.
// The clients are processes started and waited for by the test, with their own time limits.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "h2_test_client.h"

namespace ferry::http::http2::testing {
namespace {

// Answers every request with 200 and "<method> <path> <body bytes>", once the request ended.
void answer(FakeStream& s) {
  if (!s.ended || s.encoder == nullptr) return;
  ResponseHeaders head;
  head.headers.add("Content-Type", "text/plain");
  head.headers.add("Connection", "keep-alive");  // dropped on the way out
  std::string text =
      s.headers->method + " " + s.headers->path + " " + std::to_string(s.body.size());
  if (s.headers->path == "/big") text.append(std::string(1 << 20, 'b'));
  head.headers.add("Content-Length", std::to_string(text.size()));
  ResponseEncoder* encoder = s.encoder;
  s.encoder = nullptr;
  encoder->encodeHeaders(head, false);
  Buffer body;
  body.add(text);
  encoder->encodeData(body, true);
}

void serveConnection(int fd) {
  Buffer output;
  FakeServerCallbacks callbacks;
  callbacks.on_new_stream = [](FakeStream& s) {
    s.on_headers = answer;
    s.on_data = answer;
  };
  auto codec = createServerCodec(output, callbacks, Http2Settings{});
  char buf[16384];
  while (true) {
    // Write everything first (a blocking stand-in for the connection's output).
    std::string out = output.toString();
    output.clear();
    size_t sent = 0;
    while (sent < out.size()) {
      ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    if (codec->wantsClose()) break;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    Buffer in;
    in.add(buf, static_cast<size_t>(n));
    if (!codec->dispatch(in)) {
      std::string last = output.toString();
      (void)!::send(fd, last.data(), last.size(), MSG_NOSIGNAL);
      break;
    }
  }
  ::close(fd);
}

class LoopbackServer {
 public:
  LoopbackServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listener_, 64), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] {
      while (true) {
        int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) break;
        connections_.emplace_back(serveConnection, fd);
      }
    });
  }
  ~LoopbackServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    for (auto& t : connections_) t.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

// Runs `command` (a client with its own time limit) and returns its stdout and exit status.
std::pair<std::string, int> run(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int status = ::pclose(pipe);
  return {out, status};
}

bool have(const char* tool) { return run(std::string("command -v ") + tool).second == 0; }

TEST(Http2Interop, CurlPriorKnowledge) {
  if (!have("curl")) GTEST_SKIP() << "curl not installed";
  LoopbackServer server;
  auto [out, status] = run("curl -sS --max-time 10 --http2-prior-knowledge -D - -d hello " +
                           server.url("/v1/append?x=1"));
  EXPECT_EQ(status, 0);
  EXPECT_NE(out.find("HTTP/2 200"), std::string::npos) << out;
  EXPECT_NE(out.find("content-type: text/plain"), std::string::npos) << out;
  EXPECT_EQ(out.find("connection:"), std::string::npos) << out;
  EXPECT_NE(out.find("POST /v1/append?x=1 5"), std::string::npos) << out;
}

// One URL per curl: curl 7.88.1 fails reusing an h2c prior-knowledge connection ("Error in
// the HTTP2 framing layer", against Node's http2 server as well); nghttp and h2load cover
// many streams on one connection.
TEST(Http2Interop, CurlBigBodyThroughFlowControl) {
  if (!have("curl")) GTEST_SKIP() << "curl not installed";
  LoopbackServer server;
  auto [out, status] =
      run("curl -sS --max-time 20 --http2-prior-knowledge -o /dev/null -w "
          "'%{http_code} %{size_download}' " +
          server.url("/big"));
  EXPECT_EQ(status, 0);
  EXPECT_EQ(out, "200 1048586") << out;  // "GET /big 0" and 1 MiB
}

TEST(Http2Interop, NghttpConcurrentStreams) {
  if (!have("nghttp")) GTEST_SKIP() << "nghttp not installed";
  LoopbackServer server;
  std::string urls;
  for (int i = 0; i < 20; ++i) urls += " " + server.url("/s" + std::to_string(i));
  auto [out, status] = run("timeout 20 nghttp -n -s" + urls);
  EXPECT_EQ(status, 0) << out;
  // The statistics table has one line per stream: "<id> <times> <code> <size> <path>".
  for (int i = 0; i < 20; ++i) {
    const std::string path = " /s" + std::to_string(i) + "\n";
    const size_t at = out.find(path);
    ASSERT_NE(at, std::string::npos) << out;
    const size_t line = out.rfind('\n', at);
    EXPECT_NE(out.substr(line, at - line).find(" 200 "), std::string::npos) << out;
  }
}

TEST(Http2Interop, H2loadManyStreamsAndConnections) {
  if (!have("h2load")) GTEST_SKIP() << "h2load not installed";
  LoopbackServer server;
  auto [out, status] = run("timeout 60 h2load -n 2000 -c 4 -m 16 " + server.url("/load") + " 2>&1");
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("2000 succeeded, 0 failed, 0 errored"), std::string::npos) << out;
  EXPECT_NE(out.find("status codes: 2000 2xx"), std::string::npos) << out;
}

TEST(Http2Interop, NodeHttp2Client) {
  if (!have("node")) GTEST_SKIP() << "node not installed";
  LoopbackServer server;
  const std::string script =
      "const h2=require('http2');const s=h2.connect('" + server.url("") +
      "');"
      "const r=s.request({':method':'POST',':path':'/node',cookie:['a=1','b=2']});"
      "let d='';r.on('response',h=>{d+=h[':status']+' ';});r.setEncoding('utf8');"
      "r.on('data',c=>d+=c);r.on('end',()=>{console.log(d);s.close();});"
      "r.end('xyz');setTimeout(()=>process.exit(3),10000).unref();";
  auto [out, status] = run("node -e \"" + script + "\"");
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "200 POST /node 3\n");
}

}  // namespace
}  // namespace ferry::http::http2::testing
