#include "proxy/http/http2/client_codec.h"

#include <event2/buffer.h>

#include <cstring>
#include <string>

#include "proxy/http/http2/client_session.h"

namespace ferry::http::http2 {

Http2ClientCodec::Http2ClientCodec(Buffer& output, ClientConnectionCallbacks& callbacks,
                                   const Http2ClientSettings& settings, std::string scheme,
                                   event::Dispatcher* dispatcher)
    : output_(output),
      callbacks_(callbacks),
      dispatcher_(dispatcher),
      settings_(settings),
      scheme_(std::move(scheme)) {
  Scope scope(*this);
  if (dispatcher_ != nullptr)
    late_timer_ = dispatcher_->createTimer([this] { deliverLateResets(); });
  session_ = newClientSession(*this);
  if (session_ == nullptr) {
    fail("nghttp2 session could not be created");
    return;
  }
  // The client connection preface (RFC 9113 §3.4): nghttp2 writes the magic before SETTINGS.
  const nghttp2_settings_entry entries[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},  // §8.4: ferry takes no pushed responses
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings_.initial_stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings_.max_response_header_bytes},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},  // RFC 9218 §2.1
  };
  int rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries,
                                   sizeof(entries) / sizeof(entries[0]));
  // §6.9.2: the connection window starts at 65,535 whatever SETTINGS say; widen it.
  if (rv == 0) {
    rv = nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                               static_cast<int32_t>(settings_.connection_window));
  }
  if (rv != 0) fail(nghttp2_strerror(rv));
}

Http2ClientCodec::~Http2ClientCodec() {
  if (dispatcher_ != nullptr && flush_queued_) dispatcher_->cancelFlush(*this);
  if (session_ != nullptr) nghttp2_session_del(session_);
}

ClientStream& Http2ClientCodec::newStream(ResponseDecoder& decoder,
                                          ClientStreamCallbacks& callbacks) {
  unsent_.push_back(std::make_unique<ClientStream>(*this, decoder, callbacks));
  return *unsent_.back();
}

void Http2ClientCodec::registerStream(ClientStream& stream) {
  for (auto it = unsent_.begin(); it != unsent_.end(); ++it) {
    if (it->get() == &stream) {
      streams_.emplace(stream.id(), std::move(*it));
      unsent_.erase(it);
      return;
    }
  }
}

ClientStream* Http2ClientCodec::find(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void Http2ClientCodec::maybeRetire(ClientStream& stream) {
  if (!stream.closed_ || !(stream.detached_ || stream.reset_raised_)) return;
  if (stream.id_ > 0) {
    auto it = streams_.find(stream.id_);
    if (it != streams_.end() && it->second.get() == &stream) {
      retired_.push_back(std::move(it->second));
      streams_.erase(it);
    }
    return;
  }
  for (auto it = unsent_.begin(); it != unsent_.end(); ++it) {
    if (it->get() == &stream) {
      retired_.push_back(std::move(*it));
      unsent_.erase(it);
      return;
    }
  }
}

void Http2ClientCodec::noteReset(ClientStream& stream, ClientResetReason reason, uint32_t code) {
  resets_.push_back({&stream, reason, code});
}

bool Http2ClientCodec::dispatch(Buffer& data) {
  {
    Scope scope(*this);
    dispatching_ = true;
    while (!failed_ && !data.empty()) {
      evbuffer_iovec chunk;
      if (evbuffer_peek(data.raw(), -1, nullptr, &chunk, 1) < 1) break;
      const ssize_t consumed = nghttp2_session_mem_recv(
          session_, static_cast<const uint8_t*>(chunk.iov_base), chunk.iov_len);
      if (consumed < 0) {
        // Fatal for the session: a bad frame, a flood, a compression error (§5.4.1).
        fail(nghttp2_strerror(static_cast<int>(consumed)));
        break;
      }
      data.drain(static_cast<size_t>(consumed));
      deliverEvents();
    }
    if (failed_) data.drain(data.length());
  }
  dispatching_ = false;
  return !failed_;
}

void Http2ClientCodec::fail(std::string detail) {
  if (failed_) return;
  failed_ = true;
  error_ = std::move(detail);
  // The GOAWAY nghttp2 queues (PROTOCOL_ERROR) is written on the way out; the connection
  // closes after. Every open stream is lost with it.
  if (session_ != nullptr) nghttp2_session_terminate_session(session_, NGHTTP2_PROTOCOL_ERROR);
  onConnectionClosed();
}

void Http2ClientCodec::onConnectionClosed() {
  Scope scope(*this);
  auto lose = [this](ClientStream& stream) {
    if (stream.closed_) return;
    stream.closed_ = true;
    ClientResetReason reason =
        stream.headers_sent_ ? ClientResetReason::ConnectionLost : ClientResetReason::NotSent;
    if (goaway_received_ && stream.id_ > goaway_last_stream_) {
      reason = ClientResetReason::GoAwayRefused;
    }
    // Its response was found malformed before the connection went (its RST_STREAM may not
    // have been written yet): that is what ended it, however the reads fell.
    if (stream.protocol_error_) reason = ClientResetReason::ProtocolError;
    noteReset(stream, reason, 0);
  };
  for (auto& [id, stream] : streams_) lose(*stream);
  for (auto& stream : unsent_) lose(*stream);
}

void Http2ClientCodec::sendPing() {
  Scope scope(*this);
  if (failed_) return;
  uint8_t opaque[8];
  ++ping_seq_;
  std::memcpy(opaque, &ping_seq_, sizeof(opaque));
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, opaque);
}

void Http2ClientCodec::goAway() {
  Scope scope(*this);
  if (failed_) return;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
}

void Http2ClientCodec::onAboveWriteBufferHighWatermark() {
  Scope scope(*this);
  paused_ = true;
}

void Http2ClientCodec::onBelowWriteBufferLowWatermark() {
  Scope scope(*this);
  paused_ = false;
  for (auto& [id, stream] : streams_) stream->resumeData();
}

uint32_t Http2ClientCodec::remoteMaxConcurrentStreams() const {
  if (session_ == nullptr) return 0;
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

void Http2ClientCodec::flushNow() { Scope::flushNow(*this); }

void Http2ClientCodec::writeAndDeliver() {
  Scope::writeRounds(*this);
  // A stream still named by an event waits for the next entry.
  if (resets_.empty() && sent_.empty() && drained_.empty()) retired_.clear();
  if (!late_resets_.empty()) late_timer_->fireSoon();
}

void Http2ClientCodec::writeFrames() {
  if (session_ == nullptr || (paused_ && !failed_)) return;
  const int rv = nghttp2_session_send(session_);
  if (rv != 0 && !failed_) fail(nghttp2_strerror(rv));
}

bool Http2ClientCodec::deliverEvents() {
  bool told = false;
  // Swapped out first: a user's reaction may add to any list.
  std::vector<PendingReset> resets;
  resets.swap(resets_);
  for (const auto& reset : resets) {
    reset.stream->raiseReset(reset.reason, reset.code);
    maybeRetire(*reset.stream);
    told = true;
  }
  std::vector<ClientStream*> sent;
  sent.swap(sent_);
  for (ClientStream* stream : sent) {
    if (!stream->detached_ && !stream->reset_raised_) stream->callbacks_.onRequestSent();
    told = true;
  }
  std::vector<ClientStream*> drained;
  drained.swap(drained_);
  for (ClientStream* stream : drained) {
    stream->checkLowWatermark();
    told = true;
  }
  return told;
}

// ---- nghttp2 callbacks.

int Http2ClientCodec::onBeginHeaders(const nghttp2_frame& frame) {
  if (frame.hd.type != NGHTTP2_HEADERS) return 0;
  if (ClientStream* stream = find(frame.hd.stream_id)) stream->beginHeaders();
  return 0;
}

int Http2ClientCodec::onHeader(const nghttp2_frame& frame, std::string_view name,
                               std::string_view value) {
  if (frame.hd.type != NGHTTP2_HEADERS) return 0;
  ClientStream* stream = find(frame.hd.stream_id);
  if (stream == nullptr || stream->addField(name, value)) return 0;
  // Over the head limit: nghttp2 resets the stream (RST_STREAM INTERNAL_ERROR).
  stream->protocol_error_ = true;
  return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

int Http2ClientCodec::onInvalidHeader(const nghttp2_frame& frame, std::string_view /*name*/) {
  // A field nghttp2 found malformed (§8.2.1), or a malformed head (§8.1.1): the response is.
  ClientStream* stream = find(frame.hd.stream_id);
  if (stream != nullptr) stream->protocol_error_ = true;
  return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

int Http2ClientCodec::onInvalidFrame(const nghttp2_frame& frame, int /*lib_error*/) {
  // A malformed response HEADERS (RFC 9113 §8.1.1): nghttp2 resets the stream itself, so this
  // always returns 0 (a nonzero return here would be fatal for the session).
  if (frame.hd.stream_id == 0) return 0;
  if (ClientStream* stream = find(frame.hd.stream_id)) stream->protocol_error_ = true;
  return 0;
}

int Http2ClientCodec::onFrameRecv(const nghttp2_frame& frame) {
  switch (frame.hd.type) {
    case NGHTTP2_HEADERS: {
      ClientStream* stream = find(frame.hd.stream_id);
      if (stream == nullptr) break;
      const bool end_stream = (frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
      if (!stream->endHeaders(end_stream)) {
        stream->protocol_error_ = true;
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, frame.hd.stream_id,
                                  NGHTTP2_PROTOCOL_ERROR);
      }
      break;
    }
    case NGHTTP2_DATA:
      if (ClientStream* stream = find(frame.hd.stream_id)) {
        stream->endData((frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
      }
      break;
    case NGHTTP2_RST_STREAM:
      if (ClientStream* stream = find(frame.hd.stream_id)) {
        stream->rst_received_ = true;
        stream->rst_code_ = frame.rst_stream.error_code;
      }
      break;
    case NGHTTP2_GOAWAY:
      // nghttp2 closes the streams above last_stream_id right after this (REFUSED_STREAM).
      goaway_received_ = true;
      goaway_last_stream_ = frame.goaway.last_stream_id;
      callbacks_.onGoAway(frame.goaway.last_stream_id, frame.goaway.error_code);
      break;
    case NGHTTP2_SETTINGS:
      if ((frame.hd.flags & NGHTTP2_FLAG_ACK) == 0) callbacks_.onRemoteSettings();
      break;
    case NGHTTP2_PING:
      if ((frame.hd.flags & NGHTTP2_FLAG_ACK) != 0) callbacks_.onPingAck();
      break;
    default:
      break;
  }
  return 0;
}

int Http2ClientCodec::onDataChunk(int32_t stream_id, const uint8_t* data, size_t length) {
  // Connection credit goes back at once (§6.9): the bytes are held under the stream's window.
  nghttp2_session_consume_connection(session_, length);
  ClientStream* stream = find(stream_id);
  if (stream == nullptr || stream->detached_ || stream->reset_raised_) return 0;
  stream->addData(data, length);
  stream->unconsumed_ += length;
  return 0;
}

int Http2ClientCodec::onStreamClose(int32_t stream_id, uint32_t error_code) {
  ClientStream* stream = find(stream_id);
  if (stream == nullptr) return 0;
  stream->closed_ = true;
  if (!stream->response_ended_ && !stream->detached_) {
    ClientResetReason reason = ClientResetReason::ConnectionLost;
    if (stream->protocol_error_) {
      reason = ClientResetReason::ProtocolError;
    } else if (stream->rst_received_) {
      reason = stream->rst_code_ == NGHTTP2_REFUSED_STREAM ? ClientResetReason::Refused
                                                           : ClientResetReason::RemoteReset;
    } else if (goaway_received_ && stream_id > goaway_last_stream_) {
      reason = ClientResetReason::GoAwayRefused;
    } else if (!stream->headers_sent_) {
      reason = ClientResetReason::NotSent;
    }
    if (stream->final_head_seen_ && late_timer_ != nullptr) {
      // The response head (and body bytes) that came in this same read are on their way to
      // the client, written at the end of this read callback; the cut follows on the next
      // loop turn, so the client sees them before its stream is reset, as it would had the
      // reset come in a read of its own.
      late_resets_.push_back({stream_id, reason, error_code});
      return 0;
    }
    noteReset(*stream, reason, error_code);
    return 0;
  }
  maybeRetire(*stream);
  return 0;
}

void Http2ClientCodec::deliverLateResets() {
  Scope scope(*this);
  std::vector<LateReset> late;
  late.swap(late_resets_);
  // A stream its user let go of meanwhile is retired and not found: nothing to tell.
  for (const auto& reset : late) {
    if (ClientStream* stream = find(reset.id)) noteReset(*stream, reset.reason, reset.code);
  }
}

int Http2ClientCodec::onFrameSend(const nghttp2_frame& frame) {
  if (frame.hd.type == NGHTTP2_GOAWAY && frame.goaway.error_code != NGHTTP2_NO_ERROR && !failed_) {
    // nghttp2 found a connection error in the owner's bytes (§5.4.1) and wrote its GOAWAY:
    // the connection is done, and so is every stream on it.
    failed_ = true;
    error_ = "connection error, GOAWAY sent (error code " +
             std::to_string(frame.goaway.error_code) + ")";
    onConnectionClosed();
    return 0;
  }
  if (frame.hd.type != NGHTTP2_HEADERS && frame.hd.type != NGHTTP2_DATA) return 0;
  ClientStream* stream = find(frame.hd.stream_id);
  if (stream == nullptr) return 0;
  if (frame.hd.type == NGHTTP2_HEADERS) {
    stream->headers_sent_ = true;
    stream->bytes_sent_ += 9 + frame.hd.length;
  }
  if ((frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    stream->end_stream_sent_ = true;
    sent_.push_back(stream);
  }
  return 0;
}

int Http2ClientCodec::onFrameNotSend(const nghttp2_frame& frame, int) {
  if (frame.hd.type != NGHTTP2_HEADERS) return 0;
  // The request's HEADERS could not go (after the owner's GOAWAY, or the connection is
  // shutting down): the stream never opened, and nghttp2 will not close it.
  ClientStream* stream = find(frame.hd.stream_id);
  if (stream == nullptr || stream->closed_) return 0;
  stream->closed_ = true;
  if (!stream->detached_) {
    noteReset(*stream, ClientResetReason::NotSent, 0);
  } else {
    maybeRetire(*stream);
  }
  return 0;
}

ssize_t Http2ClientCodec::onSend(const uint8_t* data, size_t length) {
  output_.add(data, length);
  return static_cast<ssize_t>(length);
}

int Http2ClientCodec::onSendData(nghttp2_frame& frame, const uint8_t* frame_header, size_t length,
                                 ClientStream& stream) {
  stream.writeDataFrame(output_, frame, frame_header, length);
  return 0;
}

}  // namespace ferry::http::http2
