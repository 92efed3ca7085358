#pragma once
// Fakes around one ActiveStream: the connection manager (StreamOwner), the client's encoder, a
// scripted filter and a recording terminal filter. Every event lands in one shared log so tests
// can check the order across filters, the terminal and the client.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/http/active_stream.h"
#include "proxy/http/filter.h"
#include "proxy/http/terminal_filter.h"

namespace ferry::http::testing {

using Log = std::vector<std::string>;

class FakeStreamOwner : public StreamOwner {
 public:
  void onStreamComplete(ActiveStream&, bool cut) override {
    ++completions;
    last_cut = cut;
    if (on_complete) on_complete();
  }
  bool tryStartStream(ActiveStream&) override { return !hold_new_streams; }
  std::function<void()> on_complete;  // e.g. to end a test's dispatcher run
  bool hold_new_streams = false;      // the connection's share is used up
  int completions = 0;
  bool last_cut = false;
};

class FakeResponseEncoder : public ResponseEncoder {
 public:
  explicit FakeResponseEncoder(Log& log) : log_(log) {}
  void setStreamCallbacks(StreamCallbacks& callbacks) override { stream_callbacks = &callbacks; }
  void resetStream() override { ++resets; }
  void readDisable(bool disable) override { pauses.push_back(disable); }
  bool canEndEarly() const override { return can_end_early; }
  void encodeInformational(const ResponseHeaders& h) override {
    informational.push_back(h.status);
    log_.push_back("client:1xx " + std::to_string(h.status));
  }
  void encodeHeaders(const ResponseHeaders& h, bool end_stream) override {
    ++header_calls;
    headers = h;
    if (end_stream) ended = true;
    log_.push_back("client:headers " + std::to_string(h.status) + (end_stream ? " end" : ""));
  }
  void encodeData(Buffer& data, bool end_stream) override {
    std::string bytes = data.toString();
    data.clear();
    body += bytes;
    if (end_stream) ended = true;
    log_.push_back("client:data " + bytes + (end_stream ? " end" : ""));
  }
  int header_calls = 0;
  std::optional<ResponseHeaders> headers;
  std::string body;
  bool ended = false;
  std::vector<int> informational;
  StreamCallbacks* stream_callbacks = nullptr;
  int resets = 0;
  std::vector<bool> pauses;    // readDisable calls
  bool can_end_early = false;  // true: chunked or HTTP/2 framing (a drain may end it now)

 private:
  Log& log_;
};

// A filter whose answers the test chooses per callback; records what it saw.
class ScriptedFilter : public StreamFilter {
 public:
  ScriptedFilter(std::string name, Log& log) : name_(std::move(name)), log_(log) {}

  FilterStatus onRequestHeaders(RequestHeaders& h, bool end_stream) override {
    log_.push_back(name_ + ":reqh " + h.path + (end_stream ? " end" : ""));
    return on_request_headers ? on_request_headers(h, end_stream) : FilterStatus::Continue;
  }
  FilterStatus onRequestBody(Buffer& data, bool end_stream) override {
    log_.push_back(name_ + ":reqb " + data.toString() + (end_stream ? " end" : ""));
    return on_request_body ? on_request_body(data, end_stream) : FilterStatus::Continue;
  }
  FilterStatus onResponseHeaders(ResponseHeaders& h, bool end_stream) override {
    log_.push_back(name_ + ":resh " + std::to_string(h.status) + (end_stream ? " end" : ""));
    return on_response_headers ? on_response_headers(h, end_stream) : FilterStatus::Continue;
  }
  FilterStatus onResponseBody(Buffer& data, bool end_stream) override {
    log_.push_back(name_ + ":resb " + data.toString() + (end_stream ? " end" : ""));
    return on_response_body ? on_response_body(data, end_stream) : FilterStatus::Continue;
  }
  bool onUpstreamFailure(const UpstreamFailure& failure) override {
    failures.push_back(failure);
    return on_failure ? on_failure(failure) : false;
  }
  void onResponseWatermark(bool above) override {
    log_.push_back(name_ + ":watermark " + (above ? "above" : "below"));
  }
  bool onEndLiveFeed() override {
    log_.push_back(name_ + ":end-live-feed");
    return on_end_live_feed ? on_end_live_feed() : false;
  }
  void onDestroy() override { ++destroyed; }

  StreamFilterCallbacks& callbacks() { return *callbacks_; }

  std::function<FilterStatus(RequestHeaders&, bool)> on_request_headers;
  std::function<FilterStatus(Buffer&, bool)> on_request_body;
  std::function<FilterStatus(ResponseHeaders&, bool)> on_response_headers;
  std::function<FilterStatus(Buffer&, bool)> on_response_body;
  std::function<bool(const UpstreamFailure&)> on_failure;
  std::function<bool()> on_end_live_feed;  // a drain's deadline; unset: cannot end
  std::vector<UpstreamFailure> failures;
  int destroyed = 0;

 private:
  std::string name_;
  Log& log_;
};

class ScriptedFilterFactory : public FilterFactory {
 public:
  ScriptedFilterFactory(std::string name, Log& log) : name_(std::move(name)), log_(log) {}
  StreamFilterPtr createFilter(event::WorkerContext& worker) const override {
    auto f = std::make_unique<ScriptedFilter>(name_, log_);
    created.push_back(f.get());
    workers.push_back(&worker);
    if (on_create) on_create(*f);
    return f;
  }
  mutable std::vector<ScriptedFilter*> created;
  mutable std::vector<event::WorkerContext*> workers;  // the context each filter was made for
  // Scripts a filter before the stream calls it (a stream a codec creates runs it at once).
  std::function<void(ScriptedFilter&)> on_create;

 private:
  std::string name_;
  Log& log_;
};

// Records what the stream asks of the upstream side; the test plays the upstream through
// callbacks(). Body bytes are consumed (moved to a wire and drained) as the router does.
class FakeTerminal : public TerminalFilter {
 public:
  explicit FakeTerminal(Log& log) : log_(log) {}

  struct Replay {
    UpstreamTarget target;
    HeaderMap extra_headers;
    std::string body;
  };

  FilterStatus onRequestHeaders(RequestHeaders& h, bool end_stream) override {
    ++request_headers_calls;
    request_path = h.path;
    if (end_stream) request_ended = true;
    log_.push_back(std::string("T:reqh ") + h.path + (end_stream ? " end" : ""));
    return FilterStatus::Continue;
  }
  FilterStatus onRequestBody(Buffer& data, bool end_stream) override {
    Buffer wire;
    wire.move(data);
    std::string bytes = wire.toString();
    wire.clear();  // "written": nothing of these bytes stays alive here
    body += bytes;
    (replays.empty() ? body_before_replay : body_after_replay) += bytes;
    if (end_stream) request_ended = true;
    log_.push_back("T:reqb " + bytes + (end_stream ? " end" : ""));
    return FilterStatus::Continue;
  }
  void setTerminalCallbacks(TerminalFilterCallbacks& cb) override { terminal_callbacks_ = &cb; }
  const UpstreamTarget& localTarget() const override { return local; }
  void replay(const UpstreamRoute& route, Buffer& b) override {
    replays.push_back({route.target, route.extra_headers, b.toString()});
    log_.push_back("T:replay " + route.target.name + " " + b.toString());
    b.clear();  // the router moves it into its own buffer
  }
  void pauseResponse(bool pause) override { response_pauses.push_back(pause); }
  // A recognisable policy: 599 fake_failure_policy, the failure's kind as the message.
  void sendUpstreamFailureReply(const UpstreamFailure& failure) override {
    failure_replies.push_back(failure);
    callbacks().sendLocalReply(599, "fake_failure_policy",
                               std::string(failureKindName(failure.kind)), {});
  }
  void resetUpstream() override { ++resets; }
  bool isLiveFeed(const RequestHeaders& request) const override {
    return request.path.find("live=") != std::string::npos;  // the rules' stand-in
  }
  void onDestroy() override { ++destroyed; }

  TerminalFilterCallbacks& callbacks() { return *terminal_callbacks_; }

  // Plays the upstream's answer.
  void respond(int status, const std::vector<std::pair<std::string, std::string>>& fields,
               bool end_stream) {
    auto h = std::make_unique<ResponseHeaders>();
    h->status = status;
    for (const auto& [n, v] : fields) h->headers.add(n, v);
    callbacks().onUpstreamHeaders(std::move(h), end_stream);
  }
  void respondData(const std::string& bytes, bool end_stream) {
    Buffer b;
    b.add(bytes);
    callbacks().onUpstreamData(b, end_stream);
  }

  UpstreamTarget local{"local", "http", "127.0.0.1", 8080, ""};
  int request_headers_calls = 0;
  std::string request_path;
  bool request_ended = false;
  std::string body;
  std::string body_before_replay;
  std::string body_after_replay;
  std::vector<Replay> replays;
  std::vector<bool> response_pauses;
  std::vector<UpstreamFailure> failure_replies;  // sendUpstreamFailureReply() calls
  int resets = 0;
  int destroyed = 0;

 private:
  Log& log_;
  TerminalFilterCallbacks* terminal_callbacks_ = nullptr;
};

class FakeTerminalFactory : public TerminalFilterFactory {
 public:
  explicit FakeTerminalFactory(Log& log) : log_(log) {}
  std::unique_ptr<TerminalFilter> createTerminalFilter(
      event::WorkerContext& worker) const override {
    auto t = std::make_unique<FakeTerminal>(log_);
    last = t.get();
    last_worker = &worker;
    return t;
  }
  mutable FakeTerminal* last = nullptr;
  mutable event::WorkerContext* last_worker = nullptr;

 private:
  Log& log_;
};

}  // namespace ferry::http::testing
