// cell-delay-relay: a TCP relay that delays every byte by half the configured round trip in
// each direction, to put an edge "far away" from the load generator without netem.
//
//   cell-delay-relay --delay-ms 141 --map 127.0.0.1:7001=127.0.0.1:8001 [--map ...]
//
// Per accepted connection it opens one connection to the mapped target. Bytes read on one side
// are held for delay/2 ms, then written to the other side, in order. An EOF or error on one
// side is delivered (after the same delay) as a close of the whole pair. Prints one line
// "cell-delay-relay ready" when every listener is bound. Exits on SIGINT/SIGTERM.
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace {

event_base* g_base = nullptr;
timeval g_one_way{};

bool resolve(const std::string& hostport, sockaddr_storage* out, socklen_t* len) {
  auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = hostport.substr(0, colon), port = hostport.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || res == nullptr) return false;
  memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

struct Mapping {
  std::string listen, target;
  sockaddr_storage target_addr{};
  socklen_t target_len = 0;
};

struct Pair;
struct Chunk {
  timeval due;
  evbuffer* data;  // nullptr: the source closed
};
struct Direction {
  Pair* pair = nullptr;
  int from = 0;  // 0: client -> target, 1: target -> client
  std::deque<Chunk> queue;
  event* timer = nullptr;
};
struct Pair {
  bufferevent* side[2] = {nullptr, nullptr};  // 0: client, 1: target
  Direction dir[2];
  bool closing = false;
};

void freePair(Pair* p) {
  for (auto& d : p->dir) {
    for (auto& c : d.queue)
      if (c.data) evbuffer_free(c.data);
    if (d.timer) event_free(d.timer);
  }
  for (auto* b : p->side)
    if (b) bufferevent_free(b);
  delete p;
}

void closeWhenDrained(bufferevent* bev, void* arg) {
  auto* p = static_cast<Pair*>(arg);
  if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) freePair(p);
}

void onTimer(evutil_socket_t, short, void* arg) {
  auto* d = static_cast<Direction*>(arg);
  Pair* p = d->pair;
  timeval now;
  event_base_gettimeofday_cached(g_base, &now);
  gettimeofday(&now, nullptr);
  bufferevent* dst = p->side[1 - d->from];
  while (!d->queue.empty() && !evutil_timercmp(&d->queue.front().due, &now, >)) {
    Chunk c = d->queue.front();
    d->queue.pop_front();
    if (c.data == nullptr) {
      // Deliver the close once everything before it is written.
      p->closing = true;
      bufferevent_disable(p->side[d->from], EV_READ);
      if (evbuffer_get_length(bufferevent_get_output(dst)) == 0) {
        freePair(p);
      } else {
        bufferevent_setcb(dst, nullptr, closeWhenDrained, nullptr, p);
        bufferevent_setcb(p->side[d->from], nullptr, nullptr, nullptr, nullptr);
      }
      return;
    }
    bufferevent_write_buffer(dst, c.data);
    evbuffer_free(c.data);
  }
  if (!d->queue.empty()) {
    timeval wait;
    evutil_timersub(&d->queue.front().due, &now, &wait);
    evtimer_add(d->timer, &wait);
  }
}

void enqueue(Direction* d, evbuffer* data) {
  timeval now, due;
  gettimeofday(&now, nullptr);
  evutil_timeradd(&now, &g_one_way, &due);
  d->queue.push_back({due, data});
  if (!evtimer_pending(d->timer, nullptr)) evtimer_add(d->timer, &g_one_way);
}

void onRead(bufferevent* bev, void* arg) {
  auto* p = static_cast<Pair*>(arg);
  if (p->closing) return;
  int from = bev == p->side[0] ? 0 : 1;
  evbuffer* chunk = evbuffer_new();
  evbuffer_add_buffer(chunk, bufferevent_get_input(bev));
  enqueue(&p->dir[from], chunk);
}

void onEvent(bufferevent* bev, short what, void* arg) {
  auto* p = static_cast<Pair*>(arg);
  if (what & BEV_EVENT_CONNECTED) {
    int fd = bufferevent_getfd(bev);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return;
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
    int from = bev == p->side[0] ? 0 : 1;
    bufferevent_disable(bev, EV_READ);
    if (!p->closing) enqueue(&p->dir[from], nullptr);
  }
}

void onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
  auto* m = static_cast<Mapping*>(arg);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto* p = new Pair;
  p->side[0] = bufferevent_socket_new(g_base, fd, BEV_OPT_CLOSE_ON_FREE);
  p->side[1] = bufferevent_socket_new(g_base, -1, BEV_OPT_CLOSE_ON_FREE);
  for (int i = 0; i < 2; ++i) {
    p->dir[i].pair = p;
    p->dir[i].from = i;
    p->dir[i].timer = evtimer_new(g_base, onTimer, &p->dir[i]);
    bufferevent_setcb(p->side[i], onRead, nullptr, onEvent, p);
    bufferevent_enable(p->side[i], EV_READ | EV_WRITE);
  }
  if (bufferevent_socket_connect(p->side[1], reinterpret_cast<sockaddr*>(&m->target_addr),
                                 static_cast<int>(m->target_len)) != 0) {
    freePair(p);
  }
}

void onSignal(evutil_socket_t, short, void*) { event_base_loopexit(g_base, nullptr); }

}  // namespace

int main(int argc, char** argv) {
  double delay_ms = 141;
  std::vector<Mapping> maps;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], v = argv[i + 1];
    if (flag == "--delay-ms") {
      delay_ms = atof(v.c_str());
    } else if (flag == "--map") {
      auto eq = v.find('=');
      if (eq == std::string::npos) return fprintf(stderr, "bad --map %s\n", v.c_str()), 2;
      maps.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else {
      fprintf(stderr, "usage: cell-delay-relay --delay-ms MS --map LHOST:LPORT=HOST:PORT...\n");
      return 2;
    }
  }
  if (maps.empty()) return fprintf(stderr, "cell-delay-relay: no --map\n"), 2;
  signal(SIGPIPE, SIG_IGN);
  long one_way_us = static_cast<long>(delay_ms * 500.0);
  g_one_way = {one_way_us / 1000000, one_way_us % 1000000};
  g_base = event_base_new();
  std::vector<evconnlistener*> listeners;
  for (auto& m : maps) {
    sockaddr_storage la{};
    socklen_t ll = 0;
    if (!resolve(m.listen, &la, &ll) || !resolve(m.target, &m.target_addr, &m.target_len)) {
      fprintf(stderr, "cell-delay-relay: cannot resolve %s=%s\n", m.listen.c_str(),
              m.target.c_str());
      return 1;
    }
    auto* l =
        evconnlistener_new_bind(g_base, onAccept, &m, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                512, reinterpret_cast<sockaddr*>(&la), static_cast<int>(ll));
    if (!l) {
      fprintf(stderr, "cell-delay-relay: cannot listen on %s\n", m.listen.c_str());
      return 1;
    }
    listeners.push_back(l);
  }
  event* sigint = evsignal_new(g_base, SIGINT, onSignal, nullptr);
  event* sigterm = evsignal_new(g_base, SIGTERM, onSignal, nullptr);
  evsignal_add(sigint, nullptr);
  evsignal_add(sigterm, nullptr);
  printf("cell-delay-relay ready (%zu listeners, round trip %.1f ms)\n", maps.size(), delay_ms);
  fflush(stdout);
  event_base_dispatch(g_base);
  return 0;
}
