// floor-relay: the cheapest possible user-space TCP hop, the floor for what any proxy process
// in the path can add to delivery latency (bench/sse/README.md, arm `floor`).
//
//   floor-relay --target HOST:PORT [--listen HOST:PORT]     (listen default 127.0.0.1:0)
//
// Prints "floor-relay listening on HOST:PORT" once bound. Per accepted connection it connects
// to the target and starts two threads, one per direction, each a blocking read() into a stack
// buffer followed by write() of what was read: no parsing, no event loop, no buffering beyond
// the one read, TCP_NODELAY on both sockets. A hop through it therefore costs one wake-up of the
// relay, one read and one write: what the kernel and scheduler charge for a process in the
// path. EOF on one side is passed on as a half-close; the pair's sockets close when both
// directions are done. Exits on SIGTERM/SIGINT (default action).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "bench/common/host_port.h"

namespace {

// One accepted connection and its connection to the target. Shared by its two pump threads;
// the last one to finish closes both sockets.
struct Pair {
  int client = -1;
  int target = -1;
  ~Pair() {
    close(client);
    close(target);
  }
};

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Copies from -> to until EOF or an error, then half-closes `to`.
void pump(std::shared_ptr<Pair> pair, int from, int to) {
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(to, buf + off, static_cast<size_t>(n - off));
      if (w <= 0) goto done;
      off += w;
    }
  }
done:
  shutdown(to, SHUT_WR);
}

int listenOn(const ferry::bench::HostPort& where, std::string* bound) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&where.addr), where.len) != 0 ||
      listen(fd, 128) != 0) {
    close(fd);
    return -1;
  }
  sockaddr_in got{};
  socklen_t len = sizeof got;
  getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len);
  char host[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &got.sin_addr, host, sizeof host);
  *bound = std::string(host) + ":" + std::to_string(ntohs(got.sin_port));
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen_text = "127.0.0.1:0", target_text;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--target")
      target_text = argv[i + 1];
    else if (flag == "--listen")
      listen_text = argv[i + 1];
    else
      target_text.clear(), i = argc;
  }
  ferry::bench::HostPort listen_at, target;
  if (target_text.empty() || !ferry::bench::resolveHostPort(target_text, &target) ||
      !ferry::bench::resolveHostPort(listen_text, &listen_at)) {
    fprintf(stderr, "usage: floor-relay --target HOST:PORT [--listen HOST:PORT]\n");
    return 2;
  }
  std::string bound;
  int lfd = listenOn(listen_at, &bound);
  if (lfd < 0) return fprintf(stderr, "floor-relay: cannot listen on %s\n", listen_text.c_str()), 1;
  printf("floor-relay listening on %s\n", bound.c_str());
  fflush(stdout);

  for (;;) {
    int client = accept(lfd, nullptr, nullptr);
    if (client < 0) continue;
    auto pair = std::make_shared<Pair>();
    pair->client = client;
    pair->target = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(pair->target, reinterpret_cast<const sockaddr*>(&target.addr), target.len) != 0) {
      continue;  // ~Pair closes both
    }
    setNoDelay(client);
    setNoDelay(pair->target);
    std::thread(pump, pair, pair->client, pair->target).detach();
    std::thread(pump, pair, pair->target, pair->client).detach();
  }
}
