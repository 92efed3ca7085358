#include "proxy/server/readiness_probe.h"

#include <cstdio>

#include "proxy/http/http1/parser.h"

namespace ferry::server {
namespace {

// A readiness answer is a status and a word or two; more is not read.
constexpr size_t kMaxAnswerBytes = 4096;
constexpr size_t kMaxReasonBytes = 200;

// Holds a finished probe's connection until the current callback unwinds.
struct ClosedConnection : event::DeferredDeletable {
  explicit ClosedConnection(net::ConnectionPtr c) : connection(std::move(c)) {}
  net::ConnectionPtr connection;
};

// The body's first line, printable ASCII only, for the /ready body and the log.
std::string summary(std::string_view body) {
  std::string out;
  for (char c : body) {
    if (c == '\r' || c == '\n' || out.size() >= kMaxReasonBytes) break;
    out += c >= 0x20 && c < 0x7f ? c : '?';
  }
  return out;
}

}  // namespace

ReadinessProbe::ReadinessProbe(event::Dispatcher& dispatcher, const config::LocalInstance& instance,
                               stats::Store& store)
    : dispatcher_(dispatcher),
      host_(instance.host),
      port_(instance.port),
      settings_(instance.readiness),
      ready_gauge_(store.gauge("ferry_local_instance_ready",
                               "1 while the last probe of local_instance.readiness succeeded")),
      successes_(store.counter("ferry_readiness_probes_total",
                               "Probes of the local instance's readiness route",
                               {{"result", "ready"}})),
      failures_(store.counter("ferry_readiness_probes_total",
                              "Probes of the local instance's readiness route",
                              {{"result", "not_ready"}})) {
  next_timer_ = dispatcher_.createTimer([this] { probe(); });
  timeout_timer_ = dispatcher_.createTimer([this] {
    finish(false, "no answer to GET " + settings_.path + " within " +
                      std::to_string(settings_.timeout.count()) + " ms");
  });
}

ReadinessProbe::~ReadinessProbe() {
  if (connection_ != nullptr) connection_->close(net::CloseMode::NoFlush);
}

void ReadinessProbe::start() { next_timer_->enable(event::Millis(0)); }

void ReadinessProbe::probe() {
  answer_.clear();
  connection_ = net::Connection::connect(dispatcher_, host_, port_);
  connection_->setCallbacks(*this);
  std::string authority = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
  connection_->output().add("GET " + settings_.path + " HTTP/1.1\r\nHost: " + authority + ":" +
                            std::to_string(port_) +
                            "\r\nUser-Agent: ferry-readiness\r\nConnection: close\r\n\r\n");
  timeout_timer_->enable(settings_.timeout);
}

void ReadinessProbe::onData(Buffer& input) {
  size_t take =
      std::min(input.length(), kMaxAnswerBytes - std::min(kMaxAnswerBytes, answer_.size()));
  answer_.append(input.linearize(take));
  input.clear();
  evaluate(false);
}

void ReadinessProbe::onEvent(net::ConnectionEvent event) {
  if (connection_ == nullptr) return;
  if (event == net::ConnectionEvent::ConnectFailed) {
    finish(false, "cannot connect to the local instance");
  } else if (event == net::ConnectionEvent::RemoteClose) {
    evaluate(true);
  }
}

void ReadinessProbe::evaluate(bool closed) {
  if (connection_ == nullptr) return;
  // The answer so far, read by the HTTP/1 parser every upstream response goes through (a fresh
  // one each time: an answer is at most kMaxAnswerBytes).
  http::http1::Parser parser(HTTP_RESPONSE, kMaxAnswerBytes);
  std::string_view rest = answer_;
  bool head = false;
  bool complete = false;
  while (!complete) {
    const http::http1::Parser::Result r = parser.execute(rest);
    if (r.error) {
      finish(false, "GET " + settings_.path + ": malformed answer (" + parser.errorDetail() + ")");
      return;
    }
    head = head || r.head_complete;
    complete = r.message_complete;
    rest.remove_prefix(r.consumed);
    if (r.consumed == 0 && !r.head_complete && !complete) break;  // wants more bytes
  }
  if (!complete && closed) complete = parser.finish();  // a close-delimited body ended
  const bool full = answer_.size() >= kMaxAnswerBytes;
  if (!head) {
    if (closed || full) finish(false, "GET " + settings_.path + ": no complete answer");
    return;
  }
  // The whole body when it is short; a long one is judged on what came.
  if (!complete && !closed && !full) return;
  const int status = parser.statusCode();
  if (status >= 200 && status < 300) {
    finish(true, "");
    return;
  }
  Buffer& body = parser.body();
  const std::string text = summary(body.empty() ? std::string_view() : body.linearize());
  finish(false, "GET " + settings_.path + " answered " + std::to_string(status) +
                    (text.empty() ? "" : ": " + text));
}

void ReadinessProbe::finish(bool ok, std::string reason) {
  timeout_timer_->disable();
  if (connection_ != nullptr) {
    connection_->close(net::CloseMode::NoFlush);
    dispatcher_.deferredDelete(std::make_unique<ClosedConnection>(std::move(connection_)));
  }
  (ok ? successes_ : failures_).inc();
  if (ok != ready_ || (!ok && reason != reason_)) {
    // Transitions only: a steady state is not logged every interval.
    if (ok) {
      std::fprintf(stderr, "ferry: local instance ready (GET %s)\n", settings_.path.c_str());
    } else if (ready_ || reason != reason_) {
      std::fprintf(stderr, "ferry: local instance not ready: %s\n", reason.c_str());
    }
  }
  ready_ = ok;
  reason_ = ok ? "" : std::move(reason);
  ready_gauge_.set(ok ? 1 : 0);
  next_timer_->enable(settings_.interval);
}

}  // namespace ferry::server
