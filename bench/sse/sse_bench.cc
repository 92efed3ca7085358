// sse-bench: one publisher, N SSE subscribers, delivery latency per event per subscriber
// (bench/sse/README.md). One process, one libevent loop, one clock (CLOCK_MONOTONIC).
//
//   sse-bench --publish HOST:PORT --subscribe HOST:PORT --stream NAME --events 20000
//             [--subscribers 1] [--interval-us 50] [--window 16] [--create]
//             [--drain-timeout-ms 10000] [--connect-timeout-ms 10000] [--arm NAME]
//             [--pad BYTES] [--stall-ms MS] [--stall-at 0.25] [--per-subscriber]
//
// 1. --create: PUT /v1/stream/NAME (application/json) on the --publish address (the owner).
// 2. --subscribers connections to --subscribe send
//    GET /v1/stream/NAME?offset=-1&live=sse; each must answer 200 and send its first control
//    frame before publishing starts.
// 3. The publisher appends --events JSON messages {"seq":i,"t":<send ns>,"pad":".."} with
//    POST /v1/stream/NAME on ONE keep-alive connection to --publish, pipelining at most
//    --window requests. --interval-us > 0: open-loop schedule, event i is due at
//    start + i * interval (late events are sent as soon as possible, never skipped);
//    --interval-us 0: unpaced, the window is kept full.
// 4. Each subscriber parses the chunked SSE stream (llhttp + a line parser) and records, per
//    event, receive time - send time (the time the POST was handed to the socket). Receive
//    time is taken once per read callback.
// 5. Ends when every subscriber has every published event, or when nothing arrived for
//    --drain-timeout-ms after the last publish was acknowledged.
// --stall-ms: once --stall-at of the events are published, every subscriber stops reading for
// MS (socket and proxy buffers fill; the proxy must apply backpressure, not drop), then resumes.
// --pad adds BYTES of padding to each event. --per-subscriber adds each subscriber's p50/p99.
// --h2: the subscribers are streams of ONE HTTP/2 connection (h2c, prior knowledge) to
// --subscribe (h2_feeds.h); --h2-window sets the stream window offered to the server.
// --stall-one (with --h2): subscriber 0's stream window is never reopened while the others
// run: the server must hold that stream back and keep serving the others. Once every other
// subscriber has every event, its window reopens and it must then get every event too. Its
// latencies are left out of the percentiles; "held" in the JSON says what it got meanwhile.
// Prints one JSON object on stdout: counts (published, delivered, missing, duplicates, out of
// order, feeds ended early) and latency percentiles in microseconds.
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/common/host_port.h"
#include "bench/sse/h2_feeds.h"
#include "llhttp.h"

namespace {

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

using Addr = ferry::bench::HostPort;

bool resolve(const std::string& hostport, Addr* t) {
  return ferry::bench::resolveHostPort(hostport, t);
}

struct Options {
  Addr publish, subscribe;
  std::string stream = "ssebench", arm;
  int subscribers = 1;
  long events = 2000;
  double interval_us = 50;
  int window = 16;
  int pad = 0;
  bool create = false;
  bool per_subscriber = false;
  int stall_ms = 0;        // > 0: every subscriber stops reading for this long ...
  double stall_at = 0.25;  // ... once this fraction of the events was published
  int drain_timeout_ms = 10000;
  int connect_timeout_ms = 10000;
  bool h2 = false;         // subscribers are streams of one h2c connection
  int h2_window = 65535;   // SETTINGS_INITIAL_WINDOW_SIZE offered to the server
  bool stall_one = false;  // --h2: subscriber 0's stream window stays closed until the rest
                           // have every event
};

Options g_opt;
event_base* g_base = nullptr;
llhttp_settings_t g_pub_settings, g_sub_settings;

[[noreturn]] void die(const std::string& why) {
  fprintf(stderr, "sse-bench: %s\n", why.c_str());
  exit(1);
}

bufferevent* connectTo(const Addr& a, bufferevent_data_cb rd, bufferevent_event_cb ev, void* arg) {
  bufferevent* bev = bufferevent_socket_new(g_base, -1, BEV_OPT_CLOSE_ON_FREE);
  bufferevent_setcb(bev, rd, nullptr, ev, arg);
  bufferevent_enable(bev, EV_READ | EV_WRITE);
  if (bufferevent_socket_connect(bev, reinterpret_cast<const sockaddr*>(&a.addr),
                                 static_cast<int>(a.len)) != 0)
    die("connect to " + a.text + " failed");
  return bev;
}

void setNoDelay(bufferevent* bev) {
  int one = 1;
  setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// ------------------------------------------------------------------ state

enum class Phase { Create, Subscribe, Publish, Drain, Done };
Phase g_phase = Phase::Create;

std::vector<int64_t> g_send_ns;  // per seq: when the POST was written
long g_next_seq = 0;             // next event to publish
long g_acked = 0, g_ack_ok = 0;  // publish responses seen / 2xx
std::vector<int> g_ack_statuses;
int64_t g_start_ns = 0, g_last_send_ns = 0, g_last_ack_ns = 0, g_last_progress_ns = 0;
int64_t g_all_delivered_ns = 0;
std::vector<int64_t> g_sched_lag_ns;  // paced: actual send - scheduled send
event* g_pub_timer = nullptr;
event* g_watchdog = nullptr;
long g_pub_requests_sent = 0;  // including the PUT
long g_pub_responses = 0;

struct Publisher {
  bufferevent* bev = nullptr;
  llhttp_t parser;
  int status = 0;
} g_pub;

struct Subscriber {
  int id = 0;
  bufferevent* bev = nullptr;
  llhttp_t parser;
  int status = 0;
  bool forwarded_to = false;
  std::string field, value;
  bool ready = false;  // got 200 and the first control frame
  bool ended = false;  // the feed ended (EOF, error or last chunk)
  std::string ended_how;
  // SSE line parser
  std::string line;
  std::string event_type;
  std::string data;
  // delivery
  std::vector<uint8_t> got;
  long unique = 0, duplicates = 0, out_of_order = 0, data_frames = 0, control_frames = 0;
  long keepalives = 0, max_seq_seen = -1;
  int64_t read_ns = 0;          // time of the current read callback
  std::vector<int64_t> lat_ns;  // this subscriber's latencies (for --per-subscriber)
};
std::vector<Subscriber> g_subs;
long g_subs_ready = 0, g_subs_complete = 0;
ferry::bench::H2Feeds g_h2;
bool g_holding = false;      // --stall-one: subscriber 0 is held
long g_held_delivered = -1;  // what it had when the others were complete
int64_t g_released_ns = 0, g_held_complete_ns = 0, g_others_complete_ns = 0;
size_t g_held_bytes = 0;
int64_t g_h2_read_ns = 0;  // time of the h2 connection's current read callback
std::vector<int64_t> g_lat_ns;
int64_t g_bytes_received = 0;

void finish();
void pump();
void maybeDone();

// ------------------------------------------------------------------ publisher

void writePost(long seq) {
  const int64_t t = nowNs();
  char body[256];
  int n = snprintf(body, sizeof body, "{\"seq\":%ld,\"t\":%" PRId64 "%s}", seq, t,
                   g_opt.pad > 0 ? ",\"pad\":\"" : "");
  std::string b(body, static_cast<size_t>(n));
  if (g_opt.pad > 0) b.append(static_cast<size_t>(g_opt.pad), 'x').append("\"}");
  std::string req =
      "POST /v1/stream/" + g_opt.stream + " HTTP/1.1\r\nHost: " + g_opt.publish.text +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(b.size()) +
      "\r\n\r\n" + b;
  bufferevent_write(g_pub.bev, req.data(), req.size());
  g_send_ns[static_cast<size_t>(seq)] = t;
  g_last_send_ns = t;
  g_pub_requests_sent++;
}

long inFlight() { return g_pub_requests_sent - g_pub_responses; }

// --stall-ms: every subscriber stops reading (its socket buffers fill, then the proxy's), then
// resumes; nothing may be lost.
bool g_stalled = false;
event* g_stall_timer = nullptr;
void subscribersRead(bool on);
void onStallEnd(evutil_socket_t, short, void*) { subscribersRead(true); }
void startStall() {
  g_stalled = true;
  subscribersRead(false);
  g_stall_timer = evtimer_new(g_base, onStallEnd, nullptr);
  timeval tv{g_opt.stall_ms / 1000, (g_opt.stall_ms % 1000) * 1000};
  evtimer_add(g_stall_timer, &tv);
}

// Sends what is due (paced) or what the window allows (unpaced); arms the timer for the next.
void pump() {
  if (g_phase != Phase::Publish) return;
  const int64_t now = nowNs();
  while (g_next_seq < g_opt.events && inFlight() < g_opt.window) {
    if (g_opt.interval_us > 0) {
      const int64_t due = g_start_ns + static_cast<int64_t>(g_next_seq * g_opt.interval_us * 1000);
      if (due > now) {
        timeval tv{0, std::max<long>(1, static_cast<long>((due - now) / 1000))};
        evtimer_add(g_pub_timer, &tv);
        return;
      }
      g_sched_lag_ns.push_back(now - due);
    }
    writePost(g_next_seq++);
    if (g_opt.stall_ms > 0 && !g_stalled &&
        g_next_seq == static_cast<long>(g_opt.stall_at * static_cast<double>(g_opt.events)))
      startStall();
  }
}

void onPubTimer(evutil_socket_t, short, void*) { pump(); }

int onPubComplete(llhttp_t* p) {
  g_pub_responses++;
  const int status = p->status_code;
  if (g_phase == Phase::Create) {
    if (status != 201 && status != 200) die("create got " + std::to_string(status));
    return 0;
  }
  g_acked++;
  if (status >= 200 && status < 300)
    g_ack_ok++;
  else
    g_ack_statuses.push_back(status);
  g_last_ack_ns = nowNs();
  return 0;
}

void startSubscribers();

void onPubRead(bufferevent* bev, void*) {
  evbuffer* in = bufferevent_get_input(bev);
  size_t n = evbuffer_get_length(in);
  if (n == 0) return;
  const char* data = reinterpret_cast<const char*>(evbuffer_pullup(in, -1));
  llhttp_errno_t err = llhttp_execute(&g_pub.parser, data, n);
  evbuffer_drain(in, n);
  if (err != HPE_OK) die(std::string("publisher: bad response: ") + llhttp_errno_name(err));
  if (g_phase == Phase::Create && g_pub_responses == 1) {
    startSubscribers();
    return;
  }
  if (g_phase == Phase::Publish) {
    if (g_acked == g_opt.events) {
      g_phase = Phase::Drain;
      g_last_progress_ns = nowNs();
      maybeDone();
      return;
    }
    pump();
  }
}

void onPubEvent(bufferevent* bev, short what, void*) {
  if (what & BEV_EVENT_CONNECTED) {
    setNoDelay(bev);
    return;
  }
  if (g_phase == Phase::Publish || g_phase == Phase::Create)
    die("publisher connection lost (" + std::to_string(what) + ")");
}

// ------------------------------------------------------------------ subscribers

void subscriberEnded(Subscriber& s, const char* how) {
  if (s.ended) return;
  s.ended = true;
  s.ended_how = how;
  if (g_phase == Phase::Subscribe) die(std::string("subscriber feed ended before ready: ") + how);
}

void onDataFrame(Subscriber& s) {
  s.data_frames++;
  // data is a JSON array of {"seq":N,...} objects: scan for "seq":
  const char* p = s.data.c_str();
  while ((p = strstr(p, "\"seq\":")) != nullptr) {
    p += 6;
    char* end = nullptr;
    long seq = strtol(p, &end, 10);
    p = end;
    if (seq < 0 || seq >= g_opt.events) continue;
    if (seq < s.max_seq_seen) s.out_of_order++;
    s.max_seq_seen = std::max(s.max_seq_seen, seq);
    if (s.got[static_cast<size_t>(seq)]) {
      s.duplicates++;
      continue;
    }
    s.got[static_cast<size_t>(seq)] = 1;
    s.unique++;
    const int64_t lat = s.read_ns - g_send_ns[static_cast<size_t>(seq)];
    if (!(g_opt.stall_one && s.id == 0)) g_lat_ns.push_back(lat);  // held: its wait is no latency
    if (g_opt.per_subscriber) s.lat_ns.push_back(lat);
    if (s.unique == g_opt.events) {
      g_subs_complete++;
      if (g_opt.stall_one && s.id == 0 && !g_holding) g_held_complete_ns = s.read_ns;
    }
  }
}

void onSseLine(Subscriber& s) {
  std::string& l = s.line;
  if (!l.empty() && l.back() == '\r') l.pop_back();
  if (l.empty()) {  // dispatch
    if (s.event_type == "data") {
      onDataFrame(s);
    } else if (s.event_type == "control") {
      s.control_frames++;
      if (!s.ready) {
        s.ready = true;
        g_subs_ready++;
      }
    }
    s.event_type.clear();
    s.data.clear();
    return;
  }
  if (l[0] == ':') {
    s.keepalives++;
    return;
  }
  if (l.compare(0, 6, "event:") == 0) {
    size_t i = 6;
    while (i < l.size() && l[i] == ' ') i++;
    s.event_type = l.substr(i);
  } else if (l.compare(0, 5, "data:") == 0) {
    size_t i = 5;
    if (i < l.size() && l[i] == ' ') i++;
    if (!s.data.empty()) s.data.push_back('\n');
    s.data.append(l, i, std::string::npos);
  }
}

// SSE bytes of a feed (HTTP/1.1 chunked body or HTTP/2 DATA), split into lines.
void feedSse(Subscriber& s, const char* at, size_t n) {
  const char* end = at + n;
  while (at < end) {
    const char* nl = static_cast<const char*>(memchr(at, '\n', static_cast<size_t>(end - at)));
    if (nl == nullptr) {
      s.line.append(at, static_cast<size_t>(end - at));
      break;
    }
    s.line.append(at, static_cast<size_t>(nl - at));
    onSseLine(s);
    s.line.clear();
    at = nl + 1;
  }
}

int onSubBody(llhttp_t* p, const char* at, size_t n) {
  feedSse(*static_cast<Subscriber*>(p->data), at, n);
  return 0;
}

int onSubHeaderField(llhttp_t* p, const char* at, size_t n) {
  static_cast<Subscriber*>(p->data)->field.append(at, n);
  return 0;
}
int onSubHeaderValue(llhttp_t* p, const char* at, size_t n) {
  static_cast<Subscriber*>(p->data)->value.append(at, n);
  return 0;
}
int onSubHeaderValueComplete(llhttp_t* p) {
  auto& s = *static_cast<Subscriber*>(p->data);
  std::string f = s.field;
  std::transform(f.begin(), f.end(), f.begin(), ::tolower);
  if (f == "streams-forwarded-to") s.forwarded_to = true;
  s.field.clear();
  s.value.clear();
  return 0;
}
int onSubHeadersComplete(llhttp_t* p) {
  auto& s = *static_cast<Subscriber*>(p->data);
  s.status = p->status_code;
  if (s.status != 200)
    die("subscriber " + std::to_string(s.id) + " got " + std::to_string(s.status));
  return 0;
}
int onSubComplete(llhttp_t* p) {
  subscriberEnded(*static_cast<Subscriber*>(p->data), "last_chunk");
  return 0;
}

void maybeDone() {
  if (g_phase != Phase::Drain) return;
  if (g_holding) {
    // Every other subscriber complete while subscriber 0 is held: reopen its window.
    const long held_complete = g_subs[0].unique == g_opt.events ? 1 : 0;
    if (g_subs_complete - held_complete == static_cast<long>(g_subs.size()) - 1) {
      g_others_complete_ns = nowNs();
      g_held_delivered = g_subs[0].unique;
      g_held_bytes = g_h2.heldBytes();
      g_holding = false;
      g_released_ns = g_others_complete_ns;
      if (held_complete) g_held_complete_ns = g_released_ns;
      g_h2.release();
    }
    return;
  }
  if (g_subs_complete == static_cast<long>(g_subs.size())) finish();
}

void afterInput(int64_t read_ns);

void onSubRead(bufferevent* bev, void* arg) {
  auto& s = *static_cast<Subscriber*>(arg);
  s.read_ns = nowNs();
  evbuffer* in = bufferevent_get_input(bev);
  // Parse every contiguous segment without pulling up (large reads under fanout).
  while (evbuffer_get_length(in) > 0) {
    evbuffer_iovec v;
    if (evbuffer_peek(in, -1, nullptr, &v, 1) < 1) break;
    const size_t n = v.iov_len;
    g_bytes_received += static_cast<int64_t>(n);
    llhttp_errno_t err = llhttp_execute(&s.parser, static_cast<const char*>(v.iov_base), n);
    evbuffer_drain(in, n);
    if (err != HPE_OK) {
      subscriberEnded(s, "parse_error");
      break;
    }
  }
  afterInput(s.read_ns);
}

// After a read: start publishing once every feed is ready; note when all was delivered.
void afterInput(int64_t read_ns) {
  g_last_progress_ns = read_ns;
  if (g_phase == Phase::Subscribe && g_subs_ready == static_cast<long>(g_subs.size())) {
    g_phase = Phase::Publish;
    g_start_ns = nowNs();
    g_last_progress_ns = g_start_ns;
    pump();
  }
  if (g_subs_complete == static_cast<long>(g_subs.size()) && g_all_delivered_ns == 0 &&
      g_acked == g_opt.events)
    g_all_delivered_ns = read_ns;
  maybeDone();
}

void onSubEvent(bufferevent* bev, short what, void* arg) {
  auto& s = *static_cast<Subscriber*>(arg);
  if (what & BEV_EVENT_CONNECTED) {
    setNoDelay(bev);
    return;
  }
  if ((what & BEV_EVENT_EOF) && llhttp_finish(&s.parser) == HPE_OK) {
    subscriberEnded(s, "eof");
  } else {
    subscriberEnded(s, (what & BEV_EVENT_EOF) ? "eof_mid_body" : "io_error");
  }
  bufferevent_disable(bev, EV_READ | EV_WRITE);
}

void subscribersRead(bool on) {
  if (g_opt.h2) g_h2.setReading(on);
  for (auto& s : g_subs) {
    if (s.bev == nullptr || s.ended) continue;
    if (on) {
      bufferevent_enable(s.bev, EV_READ);
    } else {
      bufferevent_disable(s.bev, EV_READ);
    }
  }
  g_last_progress_ns = nowNs();
}

void startH2Subscribers() {
  ferry::bench::H2Feeds::Callbacks cb;
  cb.on_headers = [](size_t i, int status, bool forwarded_to) {
    if (status != 200) die("subscriber " + std::to_string(i) + " got " + std::to_string(status));
    g_subs[i].status = status;
    g_subs[i].forwarded_to = forwarded_to;
  };
  cb.on_data = [](size_t i, const char* data, size_t n) {
    auto& s = g_subs[i];
    s.read_ns = g_h2_read_ns;
    g_bytes_received += static_cast<int64_t>(n);
    feedSse(s, data, n);
  };
  cb.on_closed = [](size_t i, const char* how) { subscriberEnded(g_subs[i], how); };
  cb.on_read_begin = []() { g_h2_read_ns = nowNs(); };
  cb.on_read_done = []() { afterInput(g_h2_read_ns); };
  cb.on_connection_lost = [](const std::string& why) {
    for (auto& s : g_subs) subscriberEnded(s, "connection_lost");
    fprintf(stderr, "sse-bench: h2 connection lost: %s\n", why.c_str());
  };
  const std::string path = "/v1/stream/" + g_opt.stream + "?offset=-1&live=sse";
  if (g_opt.stall_one) {
    g_holding = true;
    g_h2.hold(0);
  }
  if (!g_h2.start(g_base, reinterpret_cast<const sockaddr*>(&g_opt.subscribe.addr),
                  static_cast<int>(g_opt.subscribe.len), g_opt.subscribe.text, path, g_subs.size(),
                  g_opt.h2_window, std::move(cb)))
    die("h2 connection to " + g_opt.subscribe.text + " failed");
}

void startSubscribers() {
  g_phase = Phase::Subscribe;
  if (g_opt.h2) {
    startH2Subscribers();
    return;
  }
  const std::string req = "GET /v1/stream/" + g_opt.stream +
                          "?offset=-1&live=sse HTTP/1.1\r\nHost: " + g_opt.subscribe.text +
                          "\r\nAccept: text/event-stream\r\n\r\n";
  for (auto& s : g_subs) {
    s.bev = connectTo(g_opt.subscribe, onSubRead, onSubEvent, &s);
    bufferevent_write(s.bev, req.data(), req.size());
  }
}

// ------------------------------------------------------------------ end

double pct(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return -1;
  size_t i = static_cast<size_t>(q * static_cast<double>(sorted.size()));
  if (i >= sorted.size()) i = sorted.size() - 1;
  return static_cast<double>(sorted[i]) / 1000.0;
}

void finish() {
  if (g_phase == Phase::Done) return;
  const Phase at = g_phase;
  g_phase = Phase::Done;
  const int64_t end_ns = nowNs();
  std::sort(g_lat_ns.begin(), g_lat_ns.end());
  std::sort(g_sched_lag_ns.begin(), g_sched_lag_ns.end());
  long delivered = 0, dups = 0, ooo = 0, ended = 0, complete = 0, forwarded = 0, frames = 0;
  long min_unique = g_opt.events;
  std::string ended_how;
  for (auto& s : g_subs) {
    delivered += s.unique;
    dups += s.duplicates;
    ooo += s.out_of_order;
    frames += s.data_frames;
    min_unique = std::min(min_unique, s.unique);
    if (s.unique == g_opt.events) complete++;
    if (s.forwarded_to) forwarded++;
    if (s.ended) {
      ended++;
      if (ended_how.find(s.ended_how) == std::string::npos)
        ended_how += (ended_how.empty() ? "" : ",") + s.ended_how;
    }
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  // Publish rate: acknowledged appends over [start, last acknowledgement].
  const double pub_s = static_cast<double>(g_last_ack_ns - g_start_ns) * 1e-9;
  const double expected = static_cast<double>(g_ack_ok) * static_cast<double>(g_subs.size());
  std::string statuses;
  for (int st : g_ack_statuses) {
    if (statuses.size() > 200) break;
    statuses += (statuses.empty() ? "" : ",") + std::to_string(st);
  }
  std::string per_sub;
  if (g_opt.per_subscriber) {
    for (auto& s : g_subs) {
      std::sort(s.lat_ns.begin(), s.lat_ns.end());
      char buf[96];
      snprintf(buf, sizeof buf, "%s[%.1f,%.1f]", per_sub.empty() ? "" : ",", pct(s.lat_ns, 0.5),
               pct(s.lat_ns, 0.99));
      per_sub += buf;
    }
  }
  std::string h2json = ",\"h2\":" + std::string(g_opt.h2 ? "true" : "false");
  if (g_opt.stall_one) {
    const Subscriber& h = g_subs[0];
    char buf[512];
    snprintf(buf, sizeof buf,
             ",\"held\":{\"delivered_while_held\":%ld,\"held_bytes\":%zu,\"released\":%s,"
             "\"complete_after_release\":%s,\"delivered\":%ld,\"duplicates\":%ld,"
             "\"out_of_order\":%ld,\"ended\":%s,\"others_complete_after_last_ack_ms\":%.3f,"
             "\"release_to_complete_ms\":%.3f}",
             g_held_delivered, g_held_bytes, g_released_ns ? "true" : "false",
             h.unique == g_opt.events ? "true" : "false", h.unique, h.duplicates, h.out_of_order,
             h.ended ? "true" : "false",
             g_others_complete_ns ? static_cast<double>(g_others_complete_ns - g_last_ack_ns) / 1e6
                                  : -1.0,
             g_held_complete_ns && g_released_ns
                 ? static_cast<double>(g_held_complete_ns - g_released_ns) / 1e6
                 : -1.0);
    h2json += buf;
  }
  printf(
      "{\"arm\":\"%s\",\"stream\":\"%s\",\"subscribers\":%zu,\"events\":%ld,"
      "\"interval_us\":%g,\"window\":%d,\"stall_ms\":%d,\"published\":%ld,\"publish_acked\":%ld,"
      "\"publish_errors\":%ld,\"publish_error_statuses\":[%s],"
      "\"publish_seconds\":%.6f,\"publish_rate\":%.1f,\"achieved_interval_us\":%.3f,"
      "\"sched_lag_us\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
      "\"delivered\":%ld,\"expected\":%.0f,\"delivered_ratio\":%.6f,\"missing\":%.0f,"
      "\"min_delivered_per_subscriber\":%ld,\"subscribers_complete\":%ld,"
      "\"duplicates\":%ld,\"out_of_order\":%ld,\"data_frames\":%ld,"
      "\"feeds_ended_early\":%ld,\"ended_how\":\"%s\",\"forwarded_to_headers\":%ld,"
      "\"stopped_in\":\"%s\",\"drain_after_last_ack_ms\":%.3f,"
      "\"latency_us\":{\"samples\":%zu,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,"
      "\"p999\":%.1f,\"max\":%.1f},\"per_subscriber_p50_p99_us\":[%s],\"bytes_received\":%" PRId64
      ",\"tool_cpu_s\":%.3f%s}\n",
      g_opt.arm.c_str(), g_opt.stream.c_str(), g_subs.size(), g_opt.events, g_opt.interval_us,
      g_opt.window, g_opt.stall_ms, g_next_seq, g_ack_ok, g_acked - g_ack_ok, statuses.c_str(),
      pub_s, pub_s > 0 ? static_cast<double>(g_ack_ok) / pub_s : 0.0,
      g_ack_ok > 0 ? pub_s * 1e6 / static_cast<double>(g_ack_ok) : 0.0, pct(g_sched_lag_ns, 0.5),
      pct(g_sched_lag_ns, 0.99),
      g_sched_lag_ns.empty() ? -1.0 : static_cast<double>(g_sched_lag_ns.back()) / 1000.0,
      delivered, expected, expected > 0 ? static_cast<double>(delivered) / expected : 0.0,
      expected - static_cast<double>(delivered), min_unique, complete, dups, ooo, frames, ended,
      ended_how.c_str(), forwarded, at == Phase::Drain ? "drain" : "publish",
      (g_all_delivered_ns ? g_all_delivered_ns : end_ns) - g_last_ack_ns > 0
          ? static_cast<double>((g_all_delivered_ns ? g_all_delivered_ns : end_ns) -
                                g_last_ack_ns) /
                1e6
          : 0.0,
      g_lat_ns.size(), pct(g_lat_ns, 0.5), pct(g_lat_ns, 0.9), pct(g_lat_ns, 0.99),
      pct(g_lat_ns, 0.999), g_lat_ns.empty() ? -1.0 : static_cast<double>(g_lat_ns.back()) / 1000.0,
      per_sub.c_str(), g_bytes_received, cpu, h2json.c_str());
  fflush(stdout);
  event_base_loopbreak(g_base);
}

// Every 100 ms: connect/subscribe timeout, drain timeout.
void onWatchdog(evutil_socket_t, short, void*) {
  const int64_t now = nowNs();
  static int64_t started = now;
  if ((g_phase == Phase::Create || g_phase == Phase::Subscribe) &&
      now - started > static_cast<int64_t>(g_opt.connect_timeout_ms) * 1000000)
    die("subscribers not ready after --connect-timeout-ms (" + std::to_string(g_subs_ready) +
        " of " + std::to_string(g_subs.size()) + ")");
  if ((g_phase == Phase::Drain || g_phase == Phase::Publish) &&
      now - g_last_progress_ns > static_cast<int64_t>(g_opt.drain_timeout_ms) * 1000000 &&
      now - g_last_ack_ns > static_cast<int64_t>(g_opt.drain_timeout_ms) * 1000000) {
    fprintf(stderr, "sse-bench: no progress for %d ms, stopping\n", g_opt.drain_timeout_ms);
    finish();
  }
}

int usage() {
  fprintf(stderr,
          "usage: sse-bench --publish HOST:PORT --subscribe HOST:PORT --stream NAME "
          "[--events N] [--subscribers N] [--interval-us US (0: unpaced)] [--window N] "
          "[--pad BYTES] [--create] [--per-subscriber] [--stall-ms MS] [--stall-at FRACTION] "
          "[--drain-timeout-ms MS] [--connect-timeout-ms MS] "
          "[--arm NAME] [--h2 [--h2-window BYTES] [--stall-one]]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  std::string pub, sub;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--create") {
      g_opt.create = true;
      continue;
    }
    if (f == "--per-subscriber") {
      g_opt.per_subscriber = true;
      continue;
    }
    if (f == "--h2") {
      g_opt.h2 = true;
      continue;
    }
    if (f == "--stall-one") {
      g_opt.stall_one = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const char* v = argv[++i];
    if (f == "--publish")
      pub = v;
    else if (f == "--subscribe")
      sub = v;
    else if (f == "--stream")
      g_opt.stream = v;
    else if (f == "--arm")
      g_opt.arm = v;
    else if (f == "--subscribers")
      g_opt.subscribers = atoi(v);
    else if (f == "--events")
      g_opt.events = atol(v);
    else if (f == "--interval-us")
      g_opt.interval_us = atof(v);
    else if (f == "--window")
      g_opt.window = atoi(v);
    else if (f == "--pad")
      g_opt.pad = atoi(v);
    else if (f == "--stall-ms")
      g_opt.stall_ms = atoi(v);
    else if (f == "--stall-at")
      g_opt.stall_at = atof(v);
    else if (f == "--drain-timeout-ms")
      g_opt.drain_timeout_ms = atoi(v);
    else if (f == "--connect-timeout-ms")
      g_opt.connect_timeout_ms = atoi(v);
    else if (f == "--h2-window")
      g_opt.h2_window = atoi(v);
    else
      return usage();
  }
  if (pub.empty() || sub.empty() || g_opt.events <= 0 || g_opt.subscribers <= 0 ||
      g_opt.window <= 0 || (g_opt.stall_one && (!g_opt.h2 || g_opt.subscribers < 2)) ||
      g_opt.h2_window <= 0)
    return usage();
  if (!resolve(pub, &g_opt.publish) || !resolve(sub, &g_opt.subscribe)) die("bad address");

  // Precise timers (timerfd): the paced schedule needs microsecond wake-ups.
  event_config* cfg = event_config_new();
  event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
  g_base = event_base_new_with_config(cfg);
  event_config_free(cfg);
  if (g_base == nullptr) die("event_base_new failed");

  llhttp_settings_init(&g_pub_settings);
  g_pub_settings.on_message_complete = onPubComplete;
  llhttp_settings_init(&g_sub_settings);
  g_sub_settings.on_header_field = onSubHeaderField;
  g_sub_settings.on_header_value = onSubHeaderValue;
  g_sub_settings.on_header_value_complete = onSubHeaderValueComplete;
  g_sub_settings.on_headers_complete = onSubHeadersComplete;
  g_sub_settings.on_body = onSubBody;
  g_sub_settings.on_message_complete = onSubComplete;

  g_send_ns.assign(static_cast<size_t>(g_opt.events), 0);
  g_lat_ns.reserve(static_cast<size_t>(g_opt.events) * static_cast<size_t>(g_opt.subscribers));
  g_subs.resize(static_cast<size_t>(g_opt.subscribers));
  for (size_t i = 0; i < g_subs.size(); ++i) {
    auto& s = g_subs[i];
    s.id = static_cast<int>(i);
    s.got.assign(static_cast<size_t>(g_opt.events), 0);
    llhttp_init(&s.parser, HTTP_RESPONSE, &g_sub_settings);
    s.parser.data = &s;
  }
  llhttp_init(&g_pub.parser, HTTP_RESPONSE, &g_pub_settings);
  g_pub.parser.data = &g_pub;

  g_pub_timer = evtimer_new(g_base, onPubTimer, nullptr);
  g_watchdog = event_new(g_base, -1, EV_PERSIST, onWatchdog, nullptr);
  timeval wd{0, 100000};
  event_add(g_watchdog, &wd);

  g_pub.bev = connectTo(g_opt.publish, onPubRead, onPubEvent, &g_pub);
  if (g_opt.create) {
    const std::string req = "PUT /v1/stream/" + g_opt.stream +
                            " HTTP/1.1\r\nHost: " + g_opt.publish.text +
                            "\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n";
    bufferevent_write(g_pub.bev, req.data(), req.size());
    g_pub_requests_sent++;
  } else {
    startSubscribers();
  }
  event_base_dispatch(g_base);
  for (auto& s : g_subs)
    if (s.bev) bufferevent_free(s.bev);
  bufferevent_free(g_pub.bev);
  g_h2.close();
  event_free(g_pub_timer);
  event_free(g_watchdog);
  if (g_stall_timer) event_free(g_stall_timer);
  event_base_free(g_base);
  return 0;
}
