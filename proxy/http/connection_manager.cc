#include "proxy/http/connection_manager.h"

#include <algorithm>

#include "proxy/http/codec_selection.h"
#include "proxy/http/http1/codec_factory.h"
#include "proxy/http/local_reply.h"

namespace ferry::http {

namespace {
// Between the drain's first GOAWAY and the final one: a round trip or two (RFC 9113 §6.8).
constexpr event::Millis kDrainGoAwayDelay{1'000};
}  // namespace

ConnectionManager::ConnectionManager(ConnectionManagerOwner& owner, net::ConnectionPtr connection,
                                     event::WorkerContext& worker,
                                     const ConnectionManagerConfig& config,
                                     stats::ProxyStats& stats)
    : owner_(owner),
      connection_(std::move(connection)),
      worker_(worker),
      dispatcher_(worker.dispatcher()),
      config_(config),
      stats_(stats) {
  connection_->setCallbacks(*this);
  connection_->setWriteWatermark(config.high_watermark);
  // Read ahead at most a head's worth plus one watermark while nobody consumes input.
  connection_->setReadLimit(config.high_watermark);
  idle_timer_ = dispatcher_.createTimer([this] { onKeepAliveIdle(); });
  head_timer_ = dispatcher_.createTimer([this] { onRequestHeadTimeout(); });
  resume_timer_ = dispatcher_.createTimer([this] { dispatchInput(); });
  stats_.downstream_connections_total.inc();
  stats_.downstream_connections_active.add(1);
  armTimers();
}

ConnectionManager::~ConnectionManager() {
  stats_.downstream_connections_active.sub(1);
  for (auto& stream : streams_) stream->onDownstreamReset();
}

void ConnectionManager::onData(Buffer& input) { dispatchInput(); }

bool ConnectionManager::createCodec() {
  if (codec_ != nullptr) return true;
  switch (chooseCodec(config_.http2_enabled, connection_->tls(), connection_->tlsAlpn(),
                      connection_->input())) {
    case CodecChoice::NeedMoreBytes:
      return false;
    case CodecChoice::Http2:
      codec_ = http2::createServerCodec(connection_->output(), *this, config_.http2, &dispatcher_);
      connection_->setWriteBatching(true);
      share_ = std::make_unique<ConnectionShare>(config_.max_active_requests_per_connection,
                                                 dispatcher_, stats_);
      stats_.downstream_http2_connections_total.inc();
      break;
    case CodecChoice::Http1: {
      http1::CodecSettings settings;
      settings.max_request_header_bytes = config_.max_request_header_bytes;
      settings.max_request_headers = config_.max_request_headers;
      codec_ = http1::createServerCodec(connection_->output(), *this, settings);
      break;
    }
  }
  // A drain that began before the first bytes applies to this codec too.
  if (draining_) codec_->shutdownNotice();
  return true;
}

void ConnectionManager::dispatchInput() {
  if (closed_ || next_request_held_) return;
  Buffer& input = connection_->input();
  if (!createCodec()) {
    armTimers();
    return;
  }
  if (streams_.empty() && !codec_->requestHeadInProgress() && !input.empty()) {
    head_started_ = std::chrono::system_clock::now();
  }
  if (!input.empty()) {
    dispatching_ = true;
    const bool ok = codec_->dispatch(input);
    dispatching_ = false;
    if (!ok) {
      onCodecError();
      return;
    }
    if (close_after_dispatch_) {
      close(net::CloseMode::FlushWrite);
      return;
    }
  }
  if (!closed_) armTimers();
}

void ConnectionManager::onKeepAliveIdle() {
  // HTTP/2 says goodbye with a GOAWAY (RFC 9113 §6.8); HTTP/1.1 has nothing to say.
  if (codec_ != nullptr) codec_->goAway();
  close(net::CloseMode::FlushWrite);
}

void ConnectionManager::armTimers() {
  // Until the first request's head is complete the request_head deadline runs from accept: a
  // client that connects and sends nothing holds a socket for request_head, not keepalive_idle.
  if (first_request_ && streams_.empty()) {
    idle_timer_->disable();
    if (!head_timer_->enabled()) head_timer_->enable(config_.request_head_timeout);
    return;
  }
  if (codec_ == nullptr) return;  // still choosing: the head timer from accept runs
  if (streams_.empty() && !codec_->requestHeadInProgress()) {
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

RequestDecoder& ConnectionManager::onNewRequest(ResponseEncoder& encoder) {
  first_request_ = false;
  streams_.push_back(
      std::make_unique<ActiveStream>(*this, encoder, worker_, config_.stream, stats_));
  return *streams_.back();
}

namespace {
// The refusals that have a series of their own besides ferry_parse_errors_total.
stats::Counter* refusalCounter(stats::ProxyStats& stats, CodecErrorKind kind) {
  switch (kind) {
    case CodecErrorKind::TooManyFields:
      return &stats.refused_too_many_headers;
    case CodecErrorKind::InvalidHost:
      return &stats.refused_invalid_host;
    case CodecErrorKind::InvalidTarget:
      return &stats.refused_invalid_target;
    case CodecErrorKind::UnknownMethod:
      return &stats.refused_unknown_method;
    case CodecErrorKind::BodyFraming:
      return &stats.refused_body_framing;
    case CodecErrorKind::ChunkLineTooLong:
      return &stats.refused_chunk_line_too_long;
    case CodecErrorKind::Http2Protocol:
      return &stats.refused_http2_protocol;
    case CodecErrorKind::Http2Flood:
      return &stats.refused_http2_flood;
    default:
      return nullptr;
  }
}
}  // namespace

void ConnectionManager::onCodecError() {
  stats_.parse_errors.inc();
  const CodecError& error = codec_->error();
  if (stats::Counter* counter = refusalCounter(stats_, error.kind)) counter->inc();
  std::string code = error.http_status == 431   ? "request_header_fields_too_large"
                     : error.http_status == 501 ? "not_implemented"
                                                : "bad_request";
  if (error.http_status == 0) {
    // The codec answered itself (HTTP/2 GOAWAY); open streams are reset by the close.
    close(net::CloseMode::FlushWrite);
    return;
  }
  if (!streams_.empty() && !streams_.back()->complete()) {
    // HTTP/1.1 (one stream at most): the head was fine; the body's framing was not. Answer if
    // the response has not started.
    streams_.back()->sendLocalReply(error.http_status, code, error.detail, {});
    close(net::CloseMode::FlushWrite);
    return;
  }
  writeErrorAndClose(error.http_status, code, error.detail);
}

void ConnectionManager::onStreamRefused(const CodecError& error) {
  stats_.parse_errors.inc();
  if (stats::Counter* counter = refusalCounter(stats_, error.kind)) counter->inc();
  recordRefusal(error.http_status, error.detail);
}

std::string_view ConnectionManager::downstreamAddress() {
  if (!peer_address_known_) {
    peer_address_known_ = true;
    peer_address_ = connection_->peerAddress();
  }
  return peer_address_;
}

void ConnectionManager::recordRefusal(int status, std::string_view detail) {
  const auto duration =
      std::max(std::chrono::microseconds(0), std::chrono::duration_cast<std::chrono::microseconds>(
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
  if (codec_ != nullptr && codec_->protocol() == "HTTP/2") {
    // No stream to answer on (a head that never finished): a GOAWAY says goodbye.
    codec_->goAway();
  } else {
    stats_.countResponse(status);
    connection_->output().add(renderHttp1AndClose(makeLocalReply(status, code, message)));
  }
  close(net::CloseMode::FlushWrite);
}

void ConnectionManager::onRequestHeadTimeout() {
  stats_.request_head_timeouts.inc();
  if (first_request_ && connection_->input().empty() &&
      (codec_ == nullptr || !codec_->requestHeadInProgress())) {
    // Not a byte arrived: nothing to answer (as nginx does; a 408 here would race a client
    // that sends its first request just now).
    close(net::CloseMode::NoFlush);
    return;
  }
  writeErrorAndClose(408, "request_timeout", "the request head did not arrive in time");
}

bool ConnectionManager::tryStartStream(ActiveStream& stream) {
  return share_ == nullptr || share_->tryStart(stream);
}

void ConnectionManager::onStreamComplete(ActiveStream& stream, bool cut) {
  if (share_ != nullptr) share_->onStreamEnd(stream);
  // The stream is done; delete it once the current callbacks unwind.
  auto it = std::find_if(streams_.begin(), streams_.end(),
                         [&stream](const auto& s) { return s.get() == &stream; });
  if (it != streams_.end()) {
    dispatcher_.deferredDelete(std::move(*it));
    std::swap(*it, streams_.back());
    streams_.pop_back();
  }
  if (closed_) return;
  if (read_paused_ && streams_.empty()) readDisableConnection(false);
  // A cut HTTP/1.1 response (the codec wants the close then) ends the connection before the
  // body's end; a finished one is flushed first either way.
  if (codec_->wantsClose() || (draining_ && streams_.empty())) {
    if (streams_.empty()) {
      codec_->goAway();  // HTTP/2: the final GOAWAY, if it has not gone yet
      closeAfterCodecWrites();
    }
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
    if (!next_request_held_) stats_.next_request_pauses.inc();
    next_request_held_ = true;
    return;
  }
  next_request_held_ = false;
  // The next pipelined request may already be in the input buffer (bytes that arrive later
  // come with their own read callback).
  if (!connection_->input().empty()) resume_timer_->fireSoon();
}

void ConnectionManager::readDisableConnection(bool pause) {
  if (pause == read_paused_ || closed_) return;
  read_paused_ = pause;
  connection_->readDisable(pause);
  if (!pause) resume_timer_->fireSoon();
}

void ConnectionManager::drain() {
  draining_ = true;
  if (codec_ == nullptr) {
    close(net::CloseMode::FlushWrite);  // nothing was said yet
    return;
  }
  if (streams_.empty() && !codec_->requestHeadInProgress()) {
    codec_->goAway();
    close(net::CloseMode::FlushWrite);
    return;
  }
  codec_->shutdownNotice();
  if (!goaway_timer_) goaway_timer_ = dispatcher_.createTimer([this] { onDrainGoAway(); });
  goaway_timer_->enable(kDrainGoAwayDelay);
}

void ConnectionManager::onDrainGoAway() {
  if (closed_ || codec_ == nullptr) return;
  codec_->goAway();
  if (streams_.empty() && !codec_->requestHeadInProgress()) close(net::CloseMode::FlushWrite);
}

ConnectionManager::DrainEnd ConnectionManager::endDrain() {
  draining_ = true;
  DrainEnd end;
  if (closed_) return end;
  if (codec_ != nullptr) codec_->goAway();
  // Completing the feeds closes the connection after their last bytes (onStreamComplete).
  // endLiveFeed may complete (and unlink) a stream: iterate over a snapshot.
  std::vector<ActiveStream*> open;
  for (auto& stream : streams_) open.push_back(stream.get());
  bool cut = false;
  for (ActiveStream* stream : open) {
    if (stream->complete()) continue;
    switch (stream->endLiveFeed()) {
      case ActiveStream::LiveFeedEnd::LastChunk:
        ++end.live_feeds_ended;
        break;
      case ActiveStream::LiveFeedEnd::Retry503:
        ++end.long_polls_answered;
        break;
      case ActiveStream::LiveFeedEnd::None:
        ++end.streams_cut;
        cut = true;
        break;
    }
  }
  if (cut ||
      (!closed_ && streams_.empty() && end.live_feeds_ended + end.long_polls_answered == 0)) {
    close(net::CloseMode::NoFlush);
  }
  return end;
}

void ConnectionManager::closeAfterCodecWrites() {
  if (dispatching_) {
    close_after_dispatch_ = true;
    return;
  }
  close(net::CloseMode::FlushWrite);
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
  share_.reset();  // its waiting streams go with the connection
  idle_timer_->disable();
  head_timer_->disable();
  resume_timer_->disable();
  if (goaway_timer_) goaway_timer_->disable();
  // The client left (or we cut it) before the responses ended: cancel the upstream work.
  for (auto& stream : streams_) {
    stream->onDownstreamReset();
    dispatcher_.deferredDelete(std::move(stream));
  }
  streams_.clear();
  owner_.onConnectionClosed(*this);
}

void ConnectionManager::onAboveWriteBufferHighWatermark() {
  if (codec_ != nullptr) codec_->onAboveWriteBufferHighWatermark();
}

void ConnectionManager::onBelowWriteBufferLowWatermark() {
  if (codec_ != nullptr) {
    codec_->onBelowWriteBufferLowWatermark();
    // HTTP/2 writes what it held while paused; a connection error found meanwhile (a GOAWAY
    // it queued) shows only now.
    if (codec_->wantsClose() && streams_.empty()) {
      close(net::CloseMode::FlushWrite);
      return;
    }
  }
  if (next_request_held_) resumeNextRequest();
}

}  // namespace ferry::http
