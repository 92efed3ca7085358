#include "proxy/http/connection_manager.h"

#include <algorithm>

#include "proxy/http/http1/codec_factory.h"
#include "proxy/http/local_reply.h"

namespace ferry::http {

ConnectionManager::ConnectionManager(ConnectionManagerOwner& owner, net::ConnectionPtr connection,
                                     event::Dispatcher& dispatcher,
                                     const ConnectionManagerConfig& config,
                                     stats::ProxyStats& stats)
    : owner_(owner),
      connection_(std::move(connection)),
      dispatcher_(dispatcher),
      config_(config),
      stats_(stats) {
  http1::CodecSettings settings;
  settings.max_request_header_bytes = config.max_request_header_bytes;
  settings.max_request_headers = config.max_request_headers;
  codec_ = http1::createServerCodec(connection_->output(), *this, settings);
  connection_->setCallbacks(*this);
  connection_->setWriteWatermark(config.high_watermark);
  // Read ahead at most a head's worth plus one watermark while nobody consumes input.
  connection_->setReadLimit(config.high_watermark);
  idle_timer_ = dispatcher_.createTimer([this] { close(net::CloseMode::NoFlush); });
  head_timer_ = dispatcher_.createTimer([this] { onRequestHeadTimeout(); });
  resume_timer_ = dispatcher_.createTimer([this] { dispatchInput(); });
  stats_.downstream_connections_total.inc();
  stats_.downstream_connections_active.add(1);
  armTimers();
}

ConnectionManager::~ConnectionManager() {
  stats_.downstream_connections_active.sub(1);
  if (stream_) stream_->onDownstreamReset();
}

void ConnectionManager::onData(Buffer& input) { dispatchInput(); }

void ConnectionManager::dispatchInput() {
  if (closed_ || next_request_held_) return;
  Buffer& input = connection_->input();
  if (stream_ == nullptr && !codec_->requestHeadInProgress() && !input.empty()) {
    head_started_ = std::chrono::system_clock::now();
  }
  if (!input.empty() && !codec_->dispatch(input)) {
    onCodecError();
    return;
  }
  if (!closed_) armTimers();
}

void ConnectionManager::armTimers() {
  // Until the first request's head is complete the request_head deadline runs from accept: a
  // client that connects and sends nothing holds a socket for request_head, not keepalive_idle.
  if (first_request_ && stream_ == nullptr) {
    idle_timer_->disable();
    if (!head_timer_->enabled()) head_timer_->enable(config_.request_head_timeout);
    return;
  }
  if (stream_ == nullptr && !codec_->requestHeadInProgress()) {
    head_timer_->disable();
    idle_timer_->enable(config_.keepalive_idle_timeout);
  } else {
    idle_timer_->disable();
    if (codec_->requestHeadInProgress()) {
      if (!head_timer_->enabled()) head_timer_->enable(config_.request_head_timeout);
    } else {
      head_timer_->disable();
    }
  }
}

RequestDecoder& ConnectionManager::newStream(ResponseEncoder& encoder) {
  first_request_ = false;
  stream_ = std::make_unique<ActiveStream>(*this, encoder, dispatcher_, config_.stream, stats_);
  return *stream_;
}

namespace {
// The refusals that have a series of their own besides ferry_parse_errors_total.
stats::Counter* refusalCounter(stats::ProxyStats& stats, CodecErrorKind kind) {
  switch (kind) {
    case CodecErrorKind::TooManyFields: return &stats.refused_too_many_headers;
    case CodecErrorKind::InvalidHost: return &stats.refused_invalid_host;
    case CodecErrorKind::InvalidTarget: return &stats.refused_invalid_target;
    case CodecErrorKind::UnknownMethod: return &stats.refused_unknown_method;
    case CodecErrorKind::BodyFraming: return &stats.refused_body_framing;
    case CodecErrorKind::ChunkLineTooLong: return &stats.refused_chunk_line_too_long;
    default: return nullptr;
  }
}
}  // namespace

void ConnectionManager::onCodecError() {
  stats_.parse_errors.inc();
  const CodecError& error = codec_->error();
  if (stats::Counter* counter = refusalCounter(stats_, error.kind)) counter->inc();
  std::string code = error.http_status == 431 ? "request_header_fields_too_large"
                     : error.http_status == 501 ? "not_implemented"
                                                : "bad_request";
  if (stream_ != nullptr && !stream_->complete()) {
    // The head was fine; the body's framing was not. Answer if the response has not started.
    stream_->sendLocalReply(error.http_status, code, error.detail, {});
    close(net::CloseMode::FlushWrite);
    return;
  }
  writeErrorAndClose(error.http_status, code, error.detail);
}

std::string_view ConnectionManager::downstreamAddress() {
  if (!peer_address_known_) {
    peer_address_known_ = true;
    peer_address_ = connection_->peerAddress();
  }
  return peer_address_;
}

void ConnectionManager::recordRefusal(int status, std::string_view detail) {
  const auto duration = std::max(std::chrono::microseconds(0),
                                 std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now() - head_started_));
  stats_.countCompleted({}, status, static_cast<uint64_t>(duration.count()));
  const auto& log = config_.stream.access_log;
  if (!log) return;
  access_log::Entry entry;
  entry.start = head_started_;
  entry.duration = duration;
  entry.client = downstreamAddress();
  entry.status = status;
  entry.end = "refused";
  entry.error = detail;
  entry.peer = connection_->tlsPeerIdentity();
  log->write(entry);
}

void ConnectionManager::writeErrorAndClose(int status, std::string_view code,
                                           std::string_view message) {
  // No stream exists for a request whose head is malformed: write the answer directly.
  recordRefusal(status, message);
  stats_.countResponse(status);
  connection_->output().add(renderHttp1AndClose(makeLocalReply(status, code, message)));
  close(net::CloseMode::FlushWrite);
}

void ConnectionManager::onRequestHeadTimeout() {
  stats_.request_head_timeouts.inc();
  if (first_request_ && connection_->input().empty() && !codec_->requestHeadInProgress()) {
    // Not a byte arrived: nothing to answer (as nginx does; a 408 here would race a client
    // that sends its first request just now).
    close(net::CloseMode::NoFlush);
    return;
  }
  writeErrorAndClose(408, "request_timeout", "the request head did not arrive in time");
}

void ConnectionManager::onStreamComplete(bool cut) {
  // The stream is done; delete it once the current callbacks unwind.
  dispatcher_.deferredDelete(std::move(stream_));
  if (read_paused_) pauseDownstreamRead(false);
  if (cut || draining_ || codec_->closeAfterResponse()) {
    // A cut response ends the HTTP/1.1 connection before the body's end (the client sees a
    // short body or a missing last chunk); a finished one is flushed first either way.
    close(net::CloseMode::FlushWrite);
    return;
  }
  resumeNextRequest();
  armTimers();
}

void ConnectionManager::resumeNextRequest() {
  if (connection_->aboveHighWatermark()) {
    // A pipelining client that does not read would otherwise have every answer buffered here
    // (RFC 9112 §9.3.2 lets the server take pipelined requests at its own pace). Input stays
    // bounded by the connection's read limit meanwhile.
    if (!next_request_held_) stats_.watermark_pauses_next_request.inc();
    next_request_held_ = true;
    return;
  }
  next_request_held_ = false;
  // The next pipelined request may already be in the input buffer (bytes that arrive later
  // come with their own read callback).
  if (!connection_->input().empty()) resume_timer_->fireSoon();
}

void ConnectionManager::pauseDownstreamRead(bool pause) {
  if (pause == read_paused_ || closed_) return;
  read_paused_ = pause;
  connection_->readDisable(pause);
  if (!pause) resume_timer_->fireSoon();
}

void ConnectionManager::drain() {
  draining_ = true;
  codec_->closeAfterCurrentResponse();
  if (stream_ == nullptr && !codec_->requestHeadInProgress()) close(net::CloseMode::FlushWrite);
}

ConnectionManager::DrainEnd ConnectionManager::endDrain() {
  draining_ = true;
  if (closed_) return DrainEnd::Closed;
  const bool active = stream_ != nullptr && !stream_->complete();
  // Completing the feed closes the connection after its last bytes (onStreamComplete).
  if (active) {
    switch (stream_->endLiveFeed()) {
      case ActiveStream::LiveFeedEnd::LastChunk: return DrainEnd::LiveFeedEnded;
      case ActiveStream::LiveFeedEnd::Retry503: return DrainEnd::LongPollAnswered;
      case ActiveStream::LiveFeedEnd::None: break;
    }
  }
  close(net::CloseMode::NoFlush);
  return active ? DrainEnd::StreamCut : DrainEnd::Closed;
}

void ConnectionManager::close(net::CloseMode mode) {
  if (closed_) return;
  connection_->close(mode);
}

void ConnectionManager::onEvent(net::ConnectionEvent event) {
  if (event != net::ConnectionEvent::RemoteClose && event != net::ConnectionEvent::LocalClose) {
    return;
  }
  if (closed_) return;
  closed_ = true;
  idle_timer_->disable();
  head_timer_->disable();
  resume_timer_->disable();
  if (stream_ != nullptr) {
    // The client left (or we cut it) before the response ended: cancel the upstream work.
    stream_->onDownstreamReset();
    dispatcher_.deferredDelete(std::move(stream_));
  }
  owner_.onConnectionClosed(*this);
}

void ConnectionManager::onAboveWriteHighWatermark() {
  if (stream_ != nullptr) stream_->onDownstreamWatermark(true);
}

void ConnectionManager::onBelowWriteLowWatermark() {
  if (stream_ != nullptr) stream_->onDownstreamWatermark(false);
  if (next_request_held_) resumeNextRequest();
}

}  // namespace ferry::http
