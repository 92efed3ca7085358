/* The floor of an HTTP proxy's cost (issue #23): an epoll byte relay that parses nothing.
 *
 *   floor-epoll-relay LISTEN_PORT ORIGIN_PORT [--parse]
 *
 * Listens on 127.0.0.1:LISTEN_PORT; each accepted client connection gets its own connection to
 * 127.0.0.1:ORIGIN_PORT, and bytes are copied both ways (read, write; a full peer stops reading
 * its source until it drains). One thread, level-triggered epoll, one 64 KiB buffer per
 * direction, TCP_NODELAY both sides, epoll_ctl only when a side's interest changes (never on a
 * request whose writes complete): what any proxy must at least do per request, so the
 * pass-through bench can show every proxy's CPU as a multiple of it. It carries HTTP/1.1 and
 * h2c alike (the h2c floor is this relay in front of an h2c origin).
 *
 * --parse (the `floor-parse` arm): every byte read also goes through llhttp before it is
 * written on, requests from the client side and responses from the origin side, with no
 * callback but the end of each message: the least any proxy that frames HTTP/1.1 messages
 * pays on top of relaying them (llhttp is ferry's parser). Bytes llhttp rejects close the
 * pair. HTTP/1.1 only (not h2c).
 *
 * Prints "listening on 127.0.0.1:PORT" once ready. Only ever connects to 127.0.0.1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "llhttp.h"

enum { kBufferBytes = 64 * 1024, kMaxEvents = 256 };

/* One direction of a connection pair: bytes read from `fd` wait in `buf` for `peer`. */
struct side {
  int fd;
  struct side* peer;
  char buf[kBufferBytes];
  size_t start, end; /* unwritten bytes: buf[start..end) */
  int read_closed;   /* EOF from fd: shut the peer's write side once buf is empty */
  uint32_t watched;  /* the events registered with epoll for fd (epoll_ctl only on a change) */
  int dead;          /* closed; freed after the current batch of events */
  llhttp_t parser;   /* --parse: the messages read from fd (requests or responses) */
};

static int parse_mode;
static llhttp_settings_t parse_settings;

/* A framer is told where each message ends; the call is the cost, nothing is done with it. */
static int on_message_complete(llhttp_t* parser) {
  (void)parser;
  return 0;
}

static int epfd;
/* Pairs closed during a batch of events: another event of the batch may still name them. */
static struct side* closed_pairs[2 * kMaxEvents];
static int closed_count;

static void watch(struct side* s) {
  /* Read while there is room in our buffer; write while the peer's buffer holds bytes. A relay
   * whose writes complete never changes its interest: no epoll_ctl per request. */
  struct epoll_event ev = {0};
  if (!s->read_closed && s->end < kBufferBytes) ev.events |= EPOLLIN;
  if (s->peer->end > s->peer->start) ev.events |= EPOLLOUT;
  if (ev.events == s->watched) return;
  s->watched = ev.events;
  ev.data.ptr = s;
  epoll_ctl(epfd, EPOLL_CTL_MOD, s->fd, &ev);
}

static void close_pair(struct side* s) {
  struct side* p = s->peer;
  close(s->fd);
  close(p->fd);
  s->dead = p->dead = 1;
  closed_pairs[closed_count++] = s < p ? s : p; /* both sides live in one allocation */
}

/* Writes what `from` holds to its peer's socket; 0 on success, -1 when the pair must close. */
static int flush(struct side* from) {
  while (from->end > from->start) {
    ssize_t n = write(from->peer->fd, from->buf + from->start, from->end - from->start);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    from->start += (size_t)n;
  }
  from->start = from->end = 0;
  if (from->read_closed) shutdown(from->peer->fd, SHUT_WR);
  return 0;
}

static void on_event(struct side* s, uint32_t events) {
  if (s->dead) return;
  if (events & EPOLLOUT) {
    if (flush(s->peer) < 0) return close_pair(s);
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    ssize_t n = read(s->fd, s->buf + s->end, kBufferBytes - s->end);
    if (n > 0) {
      if (parse_mode && llhttp_execute(&s->parser, s->buf + s->end, (size_t)n) != HPE_OK) {
        return close_pair(s);
      }
      s->end += (size_t)n;
      if (flush(s) < 0) return close_pair(s);
    } else if (n == 0) {
      s->read_closed = 1;
      if (flush(s) < 0) return close_pair(s);
      if (s->peer->read_closed && s->peer->end == s->peer->start) return close_pair(s);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return close_pair(s);
    }
  }
  watch(s);
  watch(s->peer);
}

static int tcp_socket(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

static void on_accept(int listener, int origin_port) {
  for (;;) {
    int client = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client < 0) return;
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int upstream = tcp_socket();
    struct sockaddr_in origin = loopback(origin_port);
    if (connect(upstream, (struct sockaddr*)&origin, sizeof(origin)) < 0 && errno != EINPROGRESS) {
      close(client);
      close(upstream);
      continue;
    }
    struct side* pair = calloc(2, sizeof(struct side));
    pair[0].fd = client;
    pair[1].fd = upstream;
    pair[0].peer = &pair[1];
    pair[1].peer = &pair[0];
    llhttp_init(&pair[0].parser, HTTP_REQUEST, &parse_settings);
    llhttp_init(&pair[1].parser, HTTP_RESPONSE, &parse_settings);
    for (int i = 0; i < 2; ++i) {
      struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &pair[i]};
      pair[i].watched = EPOLLIN;
      epoll_ctl(epfd, EPOLL_CTL_ADD, pair[i].fd, &ev);
    }
  }
}

int main(int argc, char** argv) {
  parse_mode = argc == 4 && strcmp(argv[3], "--parse") == 0;
  if (argc != 3 && !parse_mode) {
    fprintf(stderr, "usage: %s LISTEN_PORT ORIGIN_PORT [--parse]\n", argv[0]);
    return 2;
  }
  llhttp_settings_init(&parse_settings);
  parse_settings.on_message_complete = on_message_complete;
  /* A client that closes while its response is still coming makes the next write EPIPE: the
   * pair closes on that error, as in any proxy, instead of SIGPIPE ending the relay. */
  signal(SIGPIPE, SIG_IGN);
  int origin_port = atoi(argv[2]);
  int listener = tcp_socket();
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in at = loopback(atoi(argv[1]));
  socklen_t len = sizeof(at);
  if (bind(listener, (struct sockaddr*)&at, sizeof(at)) < 0 || listen(listener, 1024) < 0 ||
      getsockname(listener, (struct sockaddr*)&at, &len) < 0) {
    perror("floor-epoll-relay: listen");
    return 1;
  }
  epfd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(epfd, EPOLL_CTL_ADD, listener, &lev);
  printf("listening on 127.0.0.1:%d\n", ntohs(at.sin_port));
  fflush(stdout);
  struct epoll_event events[kMaxEvents];
  for (;;) {
    int n = epoll_wait(epfd, events, kMaxEvents, -1);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == NULL) {
        on_accept(listener, origin_port);
      } else {
        on_event(events[i].data.ptr, events[i].events);
      }
    }
    for (int i = 0; i < closed_count; ++i) free(closed_pairs[i]);
    closed_count = 0;
  }
}
