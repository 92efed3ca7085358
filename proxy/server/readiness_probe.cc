#include "proxy/server/readiness_probe.h"

#include <cstdio>
#include <optional>

#include "proxy/http/header_map.h"

namespace ferry::server {
namespace {

using http::equalsIgnoreCase;  // field names compare case-insensitively (RFC 9110 §5.1)

// A readiness answer is a status and a word or two; more is not read.
constexpr size_t kMaxAnswerBytes = 4096;
constexpr size_t kMaxReasonBytes = 200;

// Holds a finished probe's connection until the current callback unwinds.
struct ClosedConnection : event::DeferredDeletable {
  explicit ClosedConnection(net::ConnectionPtr c) : connection(std::move(c)) {}
  net::ConnectionPtr connection;
};

// The Content-Length of `head` (status line and fields, without the blank line), if any.
std::optional<size_t> contentLength(std::string_view head) {
  while (!head.empty()) {
    size_t end = head.find("\r\n");
    std::string_view line = head.substr(0, end);
    head = end == std::string_view::npos ? std::string_view() : head.substr(end + 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !equalsIgnoreCase(line.substr(0, colon), "content-length")) {
      continue;
    }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    size_t n = 0;
    size_t digits = 0;
    for (char c : value) {
      if (c < '0' || c > '9') break;
      n = n * 10 + static_cast<size_t>(c - '0');
      if (++digits > 9) return std::nullopt;
    }
    if (digits == 0) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

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

ReadinessProbe::ReadinessProbe(event::Dispatcher& dispatcher,
                               const config::LocalInstance& instance, stats::Store& store)
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
  size_t take = std::min(input.length(), kMaxAnswerBytes - std::min(kMaxAnswerBytes, answer_.size()));
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
  const size_t head_end = answer_.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    if (closed || answer_.size() >= kMaxAnswerBytes) {
      finish(false, "GET " + settings_.path + ": no complete answer");
    }
    return;
  }
  std::string_view head(answer_.data(), head_end);
  std::string_view body = std::string_view(answer_).substr(head_end + 4);
  std::optional<size_t> length = contentLength(head);
  // The whole body when it is short; a long or unframed one is judged on what came.
  if (!closed && answer_.size() < kMaxAnswerBytes && (!length || body.size() < *length)) return;
  if (length && body.size() > *length) body = body.substr(0, *length);
  // "HTTP/1.1 200 ..." (RFC 9112 §4).
  int status = 0;
  if (head.size() >= 12 && head.substr(0, 5) == "HTTP/" && head[8] == ' ') {
    for (size_t i = 9; i < 12 && head[i] >= '0' && head[i] <= '9'; ++i) {
      status = status * 10 + (head[i] - '0');
    }
  }
  if (status < 100 || status > 599) {
    finish(false, "GET " + settings_.path + ": malformed status line");
  } else if (status >= 200 && status < 300) {
    finish(true, "");
  } else {
    std::string text = summary(body);
    finish(false, "GET " + settings_.path + " answered " + std::to_string(status) +
                      (text.empty() ? "" : ": " + text));
  }
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
