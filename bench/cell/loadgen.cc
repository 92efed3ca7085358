// cell-loadgen: closed-loop appenders for the cell bench (bench/README.md, "Cell bench").
//
//   cell-loadgen --mode pinned|edge --edge HOST:PORT --pin inst-1=HOST:PORT ...
//                --members inst-1,inst-2,inst-3,inst-4 [--shards 16] [--streams 16]
//                [--connections 64] [--duration 10] [--warmup 1] [--body-bytes 200]
//                [--max-replays 3] [--timeout-ms 10000] [--prefix cellbench] [--seed 1]
//                [--create] [--arm NAME]
//
// Each of --connections appenders loops: pick a random stream, POST a ~body-bytes append to
// /v1/stream/<prefix>-<n>, wait for the answer, repeat. Keep-alive HTTP/1.1, one connection
// per appender and target. Mode `pinned` sends to the owner's --pin address (ownership math
// from integration/streams_emulator/ownership.h); mode `edge` sends to --edge (the load
// balancer picks an instance). In both modes the client behaves like a Streams client SDK: a
// 409 carrying Streams-Replay-To is counted (client-visible 409) and the append is sent again
// the same way (a client replay), at most --max-replays times; past that it is an error.
// --create first PUTs every stream at its owner's --pin address (not measured).
// Prints one JSON object on stdout.
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/common/host_port.h"
#include "integration/streams_emulator/ownership.h"
#include "llhttp.h"

namespace {

double nowSec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

using Target = ferry::bench::HostPort;

bool resolve(const std::string& hostport, Target* t) {
  return ferry::bench::resolveHostPort(hostport, t);
}

struct Options {
  std::string mode = "edge", arm;
  std::string edge;
  std::map<std::string, std::string> pins;
  std::vector<std::string> members;
  uint32_t shards = 16;
  int streams = 16, connections = 64, body_bytes = 200, max_replays = 3;
  double duration = 10, warmup = 1;
  int timeout_ms = 10000;
  std::string prefix = "cellbench";
  unsigned seed = 1;
  bool create = false;
};

struct Stats {
  long appends = 0;            // completed 2xx appends inside the window
  long client_409 = 0;         // 409 responses the client saw (inside the window)
  long replays = 0;            // appends the client sent again because of a 409
  long forwarded_answers = 0;  // 2xx answers carrying Streams-Forwarded-To
  std::map<std::string, long> errors;
  std::map<int, long> statuses;
  std::vector<double> latencies_ms;
};

event_base* g_base = nullptr;
Options g_opt;
std::vector<Target> g_targets;     // 0: edge (if any), then one per member (pins)
std::vector<int> g_stream_target;  // stream -> target index when pinned
std::vector<int> g_stream_owner_pin;
Stats g_stats;
double g_window_start = 0, g_window_end = 0;
bool g_stopping = false;
long g_create_pending = 0;
long g_busy = 0;  // appenders with an append in flight (timed phase)
std::string g_body;

struct Appender;

struct Conn {
  Appender* owner = nullptr;
  int target = 0;
  bufferevent* bev = nullptr;
  llhttp_t parser;
  bool reused = false;
  bool got_bytes = false;
  bool complete = false;
  int status = 0;
  bool replay_to = false, forwarded_to = false;
  std::string field, value;
};

llhttp_settings_t g_settings;

struct Appender {
  int id = 0;
  std::mt19937 rng;
  std::map<int, Conn*> conns;
  // current request
  bool create_mode = false;
  int stream = 0;
  int target = 0;
  int attempts = 0;
  int stale_retries = 0;
  double started = 0;
  std::vector<int> create_queue;
};

void startRequest(Appender* a);
void sendAttempt(Appender* a);

void closeConn(Conn* c) {
  if (c->owner) c->owner->conns.erase(c->target);
  bufferevent_free(c->bev);
  delete c;
}

bool inWindow(double t) { return t >= g_window_start && t <= g_window_end; }

void recordError(Appender* a, const std::string& kind) {
  if (a->create_mode) {
    fprintf(stderr, "cell-loadgen: create of stream %d failed: %s\n", a->stream, kind.c_str());
    exit(1);
  }
  if (inWindow(nowSec())) g_stats.errors[kind]++;
  startRequest(a);
}

void finishResponse(Conn* c) {
  Appender* a = c->owner;
  int status = c->status;
  const bool replay_to = c->replay_to, forwarded_to = c->forwarded_to;
  double t = nowSec();
  bool keep = llhttp_should_keep_alive(&c->parser);
  bufferevent_set_timeouts(c->bev, nullptr, nullptr);
  if (!keep) closeConn(c);
  if (a->create_mode) {
    if (status != 200 && status != 201) {
      fprintf(stderr, "cell-loadgen: create got %d\n", status);
      exit(1);
    }
    startRequest(a);
    return;
  }
  if (inWindow(t)) g_stats.statuses[status]++;
  if (status == 409 && replay_to) {
    if (inWindow(t)) g_stats.client_409++;
    if (a->attempts > g_opt.max_replays) {
      recordError(a, "replays_exhausted");
      return;
    }
    if (inWindow(t)) g_stats.replays++;
    sendAttempt(a);
    return;
  }
  if (status >= 200 && status < 300) {
    if (inWindow(a->started) && inWindow(t)) {
      g_stats.appends++;
      g_stats.latencies_ms.push_back((t - a->started) * 1000.0);
      if (forwarded_to) g_stats.forwarded_answers++;
    }
    startRequest(a);
    return;
  }
  recordError(a, "status_" + std::to_string(status));
}

int onHeaderField(llhttp_t* p, const char* at, size_t n) {
  static_cast<Conn*>(p->data)->field.append(at, n);
  return 0;
}
int onHeaderValue(llhttp_t* p, const char* at, size_t n) {
  static_cast<Conn*>(p->data)->value.append(at, n);
  return 0;
}
int onHeaderValueComplete(llhttp_t* p) {
  auto* c = static_cast<Conn*>(p->data);
  std::string f = c->field;
  std::transform(f.begin(), f.end(), f.begin(), ::tolower);
  if (f == "streams-replay-to" && !c->value.empty()) c->replay_to = true;
  if (f == "streams-forwarded-to") c->forwarded_to = true;
  c->field.clear();
  c->value.clear();
  return 0;
}
int onMessageComplete(llhttp_t* p) {
  auto* c = static_cast<Conn*>(p->data);
  c->status = p->status_code;
  c->complete = true;
  return HPE_PAUSED;
}

void onRead(bufferevent* bev, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  evbuffer* in = bufferevent_get_input(bev);
  size_t n = evbuffer_get_length(in);
  if (n == 0) return;
  c->got_bytes = true;
  const char* data = reinterpret_cast<const char*>(evbuffer_pullup(in, -1));
  llhttp_errno_t err = llhttp_execute(&c->parser, data, n);
  if (err == HPE_PAUSED) {
    evbuffer_drain(in, n);  // one response at a time: nothing may follow it
    llhttp_resume(&c->parser);
    finishResponse(c);
    return;
  }
  evbuffer_drain(in, n);
  if (err != HPE_OK) {
    Appender* a = c->owner;
    closeConn(c);
    recordError(a, "parse");
  }
}

void onEvent(bufferevent* bev, short what, void* arg) {
  auto* c = static_cast<Conn*>(arg);
  if (what & BEV_EVENT_CONNECTED) {
    int one = 1;
    setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return;
  }
  Appender* a = c->owner;
  bool busy = a->conns.count(c->target) && a->conns[c->target] == c && a->started > 0 &&
              a->target == c->target && !c->complete;
  if (!busy) {  // an idle keep-alive connection went away
    closeConn(c);
    return;
  }
  // EOF at end of a close-delimited body completes the message.
  if ((what & BEV_EVENT_EOF) && llhttp_finish(&c->parser) == HPE_OK && c->complete) {
    finishResponse(c);
    return;
  }
  bool stale = c->reused && !c->got_bytes;
  closeConn(c);
  if (stale && a->stale_retries++ < 2) {  // the server closed an idle connection: resend
    sendAttempt(a);
    return;
  }
  recordError(a, (what & BEV_EVENT_TIMEOUT) ? "timeout" : (what & BEV_EVENT_EOF) ? "eof" : "io");
}

Conn* connFor(Appender* a, int target) {
  auto it = a->conns.find(target);
  if (it != a->conns.end()) {
    it->second->reused = true;
    return it->second;
  }
  auto* c = new Conn;
  c->owner = a;
  c->target = target;
  c->bev = bufferevent_socket_new(g_base, -1, BEV_OPT_CLOSE_ON_FREE);
  bufferevent_setcb(c->bev, onRead, nullptr, onEvent, c);
  bufferevent_enable(c->bev, EV_READ | EV_WRITE);
  const Target& t = g_targets[target];
  if (bufferevent_socket_connect(c->bev, reinterpret_cast<const sockaddr*>(&t.addr),
                                 static_cast<int>(t.len)) != 0) {
    bufferevent_free(c->bev);
    delete c;
    return nullptr;
  }
  a->conns[target] = c;
  return c;
}

void sendAttempt(Appender* a) {
  a->attempts++;
  Conn* c = connFor(a, a->target);
  if (c == nullptr) {
    recordError(a, "connect");
    return;
  }
  llhttp_init(&c->parser, HTTP_RESPONSE, &g_settings);
  c->parser.data = c;
  c->got_bytes = c->complete = c->replay_to = c->forwarded_to = false;
  c->status = 0;
  c->field.clear();
  c->value.clear();
  timeval tv{g_opt.timeout_ms / 1000, (g_opt.timeout_ms % 1000) * 1000};
  bufferevent_set_timeouts(c->bev, &tv, nullptr);
  std::string path = "/v1/stream/" + g_opt.prefix + "-" + std::to_string(a->stream);
  const std::string& host = g_targets[a->target].text;
  std::string head;
  if (a->create_mode) {
    head = "PUT " + path + " HTTP/1.1\r\nHost: " + host +
           "\r\nContent-Type: application/octet-stream\r\nContent-Length: 0\r\n\r\n";
    bufferevent_write(c->bev, head.data(), head.size());
    return;
  }
  head = "POST " + path + " HTTP/1.1\r\nHost: " + host +
         "\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
         std::to_string(g_body.size()) + "\r\n\r\n";
  head += g_body;
  bufferevent_write(c->bev, head.data(), head.size());
}

void startRequest(Appender* a) {
  a->attempts = 0;
  a->stale_retries = 0;
  if (a->create_mode) {
    if (a->create_queue.empty()) {
      a->create_mode = false;
      a->started = 0;
      if (--g_create_pending == 0) event_base_loopbreak(g_base);
      return;
    }
    a->stream = a->create_queue.back();
    a->create_queue.pop_back();
    a->target = g_stream_owner_pin[a->stream];
    a->started = nowSec();
    sendAttempt(a);
    return;
  }
  if (g_stopping) {
    a->started = 0;
    if (--g_busy == 0) event_base_loopbreak(g_base);
    return;
  }
  std::uniform_int_distribution<int> pick(0, g_opt.streams - 1);
  a->stream = pick(a->rng);
  a->target = g_opt.mode == "pinned" ? g_stream_owner_pin[a->stream] : 0;
  a->started = nowSec();
  sendAttempt(a);
}

// End of the window: issue nothing new and let the appends in flight finish (so that every
// forward ferry made for this run is counted before run.py scrapes /stats), at most
// --timeout-ms more.
void onStop(evutil_socket_t, short, void*) {
  g_stopping = true;
  timeval tv{g_opt.timeout_ms / 1000, (g_opt.timeout_ms % 1000) * 1000};
  event_base_loopexit(g_base, &tv);
}

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t e = s.find(sep, pos);
    out.push_back(s.substr(pos, e == std::string::npos ? std::string::npos : e - pos));
    if (e == std::string::npos) break;
    pos = e + 1;
  }
  return out;
}

int usage() {
  fprintf(stderr, "usage: see the header of bench/cell/loadgen.cc\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    if (f == "--create") {
      g_opt.create = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (f == "--mode")
      g_opt.mode = v;
    else if (f == "--arm")
      g_opt.arm = v;
    else if (f == "--edge")
      g_opt.edge = v;
    else if (f == "--pin") {
      auto eq = v.find('=');
      if (eq == std::string::npos) return usage();
      g_opt.pins[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (f == "--members")
      g_opt.members = split(v, ',');
    else if (f == "--shards")
      g_opt.shards = static_cast<uint32_t>(atoi(v.c_str()));
    else if (f == "--streams")
      g_opt.streams = atoi(v.c_str());
    else if (f == "--connections")
      g_opt.connections = atoi(v.c_str());
    else if (f == "--duration")
      g_opt.duration = atof(v.c_str());
    else if (f == "--warmup")
      g_opt.warmup = atof(v.c_str());
    else if (f == "--body-bytes")
      g_opt.body_bytes = atoi(v.c_str());
    else if (f == "--max-replays")
      g_opt.max_replays = atoi(v.c_str());
    else if (f == "--timeout-ms")
      g_opt.timeout_ms = atoi(v.c_str());
    else if (f == "--prefix")
      g_opt.prefix = v;
    else if (f == "--seed")
      g_opt.seed = static_cast<unsigned>(atoi(v.c_str()));
    else
      return usage();
  }
  if (g_opt.members.empty() || (g_opt.mode != "pinned" && g_opt.mode != "edge")) return usage();
  if (g_opt.mode == "edge" && g_opt.edge.empty()) return usage();
  signal(SIGPIPE, SIG_IGN);
  g_base = event_base_new();

  g_targets.resize(1 + g_opt.members.size());
  if (!g_opt.edge.empty() && !resolve(g_opt.edge, &g_targets[0])) {
    fprintf(stderr, "cell-loadgen: cannot resolve %s\n", g_opt.edge.c_str());
    return 1;
  }
  bool need_pins = g_opt.mode == "pinned" || g_opt.create;
  for (size_t m = 0; m < g_opt.members.size(); ++m) {
    auto it = g_opt.pins.find(g_opt.members[m]);
    if (it == g_opt.pins.end()) {
      if (need_pins) {
        fprintf(stderr, "cell-loadgen: no --pin for %s\n", g_opt.members[m].c_str());
        return 1;
      }
      continue;
    }
    if (!resolve(it->second, &g_targets[1 + m])) {
      fprintf(stderr, "cell-loadgen: cannot resolve %s\n", it->second.c_str());
      return 1;
    }
  }
  for (int s = 0; s < g_opt.streams; ++s) {
    int owner = ferry::streams::ownerIndex(g_opt.prefix + "-" + std::to_string(s), g_opt.shards,
                                           g_opt.members);
    g_stream_owner_pin.push_back(1 + owner);
  }
  g_body.assign(static_cast<size_t>(g_opt.body_bytes), 'x');
  for (size_t i = 0; i < g_body.size(); i += 50) g_body[i] = '\n';

  llhttp_settings_init(&g_settings);
  g_settings.on_header_field = onHeaderField;
  g_settings.on_header_value = onHeaderValue;
  g_settings.on_header_value_complete = onHeaderValueComplete;
  g_settings.on_message_complete = onMessageComplete;

  std::vector<Appender> appenders(static_cast<size_t>(g_opt.connections));
  for (size_t i = 0; i < appenders.size(); ++i) {
    appenders[i].id = static_cast<int>(i);
    appenders[i].rng.seed(g_opt.seed * 7919u + static_cast<unsigned>(i));
  }

  if (g_opt.create) {
    for (int s = 0; s < g_opt.streams; ++s)
      appenders[static_cast<size_t>(s) % appenders.size()].create_queue.push_back(s);
    g_create_pending = static_cast<long>(appenders.size());
    for (auto& a : appenders) {
      a.create_mode = true;
      startRequest(&a);
    }
    if (g_create_pending > 0) event_base_dispatch(g_base);
  }

  double t0 = nowSec();
  g_window_start = t0 + g_opt.warmup;
  g_window_end = g_window_start + g_opt.duration;
  event* stop = evtimer_new(g_base, onStop, nullptr);
  double total = g_opt.warmup + g_opt.duration;
  timeval tv{static_cast<long>(total), static_cast<long>((total - static_cast<long>(total)) * 1e6)};
  evtimer_add(stop, &tv);
  g_busy = static_cast<long>(appenders.size());
  for (auto& a : appenders) startRequest(&a);
  event_base_dispatch(g_base);

  long errors = 0;
  for (auto& [k, v] : g_stats.errors) errors += v;
  double p50 = percentile(g_stats.latencies_ms, 0.50);
  double p99 = percentile(g_stats.latencies_ms, 0.99);
  printf(
      "{\"arm\":\"%s\",\"mode\":\"%s\",\"connections\":%d,\"streams\":%d,\"duration_s\":%.3f,"
      "\"appends\":%ld,\"appends_per_s\":%.2f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,"
      "\"client_409\":%ld,\"client_replays\":%ld,\"forwarded_answers\":%ld,\"errors\":%ld,"
      "\"error_kinds\":{",
      g_opt.arm.c_str(), g_opt.mode.c_str(), g_opt.connections, g_opt.streams, g_opt.duration,
      g_stats.appends, static_cast<double>(g_stats.appends) / g_opt.duration, p50, p99,
      g_stats.client_409, g_stats.replays, g_stats.forwarded_answers, errors);
  bool first = true;
  for (auto& [k, v] : g_stats.errors) {
    printf("%s\"%s\":%ld", first ? "" : ",", k.c_str(), v);
    first = false;
  }
  printf("},\"statuses\":{");
  first = true;
  for (auto& [k, v] : g_stats.statuses) {
    printf("%s\"%d\":%ld", first ? "" : ",", k, v);
    first = false;
  }
  printf("}}\n");
  fflush(stdout);
  // Idle keep-alive connections are dropped with the process.
  _exit(0);
}
