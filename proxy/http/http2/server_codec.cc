#include "proxy/http/http2/server_codec.h"

#include <event2/buffer.h>

#include <string>

#include "proxy/http/http2/session_callbacks.h"

namespace ferry::http::http2 {

namespace {

constexpr int32_t kMaxStreamId = (1u << 31) - 1;

// A bodiless answer to a request the core never sees (431, 400, 501).
void submitStatusOnly(nghttp2_session* session, int32_t stream_id, int status) {
  const std::string code = std::to_string(status);
  nghttp2_nv nv[] = {
      {reinterpret_cast<uint8_t*>(const_cast<char*>(":status")),
       reinterpret_cast<uint8_t*>(const_cast<char*>(code.data())), 7, code.size(),
       NGHTTP2_NV_FLAG_NONE},
      {reinterpret_cast<uint8_t*>(const_cast<char*>("content-length")),
       reinterpret_cast<uint8_t*>(const_cast<char*>("0")), 14, 1, NGHTTP2_NV_FLAG_NONE},
  };
  nghttp2_submit_response(session, stream_id, nv, 2, nullptr);
}

}  // namespace

Http2ServerCodec::Http2ServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                                   const Http2Settings& settings, event::Dispatcher* dispatcher)
    : output_(output),
      callbacks_(callbacks),
      dispatcher_(dispatcher),
      settings_(settings),
      flood_(settings.rapid_reset_min_streams) {
  Scope scope(*this);
  session_ = newServerSession(*this);
  if (session_ == nullptr) {
    failed_ = true;
    error_ = CodecError{0, "nghttp2 session could not be created", CodecErrorKind::Http2Protocol};
    return;
  }
  // The server's connection preface (RFC 9113 §3.4), sent at once.
  const nghttp2_settings_entry entries[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, settings_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings_.initial_stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, settings_.max_request_header_bytes},
      // RFC 9218 §2.1: ferry does not schedule by RFC 7540 priorities, so the client need not
      // send them (and nghttp2 keeps no priority tree).
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  int rv = nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, entries,
                                   sizeof(entries) / sizeof(entries[0]));
  // RFC 9113 §6.9.2: the connection window starts at 65,535 whatever SETTINGS say; widen it.
  if (rv == 0 && settings_.connection_window <= static_cast<uint32_t>(NGHTTP2_MAX_WINDOW_SIZE)) {
    rv = nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                               static_cast<int32_t>(settings_.connection_window));
  } else if (rv == 0) {
    rv = NGHTTP2_ERR_INVALID_ARGUMENT;
  }
  if (rv != 0) {
    // Settings out of the protocol's ranges (a window over 2^31-1): the configuration layer
    // should have refused them; the connection is closed rather than run with other values.
    fail(CodecErrorKind::Http2Protocol,
         std::string("invalid HTTP/2 settings: ") + nghttp2_strerror(rv), NGHTTP2_INTERNAL_ERROR);
  }
}

Http2ServerCodec::~Http2ServerCodec() {
  if (flush_queued_) dispatcher_->cancelFlush(*this);
  // nghttp2_session_del calls no callback; the streams go after the session that points at
  // them.
  nghttp2_session_del(session_);
}

Stream* Http2ServerCodec::find(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

bool Http2ServerCodec::dispatch(Buffer& data) {
  {
    Scope scope(*this);
    dispatching_ = true;
    while (!failed_ && !data.empty()) {
      evbuffer_iovec chunk;
      if (evbuffer_peek(data.raw(), -1, nullptr, &chunk, 1) < 1) break;
      const ssize_t consumed = nghttp2_session_mem_recv(
          session_, static_cast<const uint8_t*>(chunk.iov_base), chunk.iov_len);
      if (consumed < 0) {
        // Fatal for the session: a bad client preface (RFC 9113 §3.4), an ACK flood, ...
        const bool flood = consumed == NGHTTP2_ERR_FLOODED;
        fail(flood ? CodecErrorKind::Http2Flood : CodecErrorKind::Http2Protocol,
             nghttp2_strerror(static_cast<int>(consumed)),
             flood ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
        data.clear();
        break;
      }
      data.drain(static_cast<size_t>(consumed));
      deliverEvents();
    }
    if (failed_) data.clear();
  }  // writes the frames, which may reveal a connection error (a GOAWAY nghttp2 queued)
  dispatching_ = false;
  return !failed_;
}

bool Http2ServerCodec::requestHeadInProgress() const {
  return !failed_ && (!preface_received_ || open_head_ != 0);
}

bool Http2ServerCodec::wantsClose() const {
  if (failed_) return true;
  const bool going_away =
      final_goaway_sent_ || goaway_received_ ||
      (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0);
  if (!going_away) return false;
  // A response the core finished may still have its tail waiting for the client's credit:
  // closing now would cut it. The manager asks again after the next dispatch.
  for (const auto& [id, stream] : streams_) {
    if (stream->responseTailPending()) return false;
  }
  return true;
}

void Http2ServerCodec::shutdownNotice() {
  if (failed_ || goaway_submitted_) return;
  Scope scope(*this);
  // RFC 9113 §6.8: GOAWAY with the highest stream id warns the client to stop opening
  // streams, while those already in flight are still taken.
  nghttp2_submit_shutdown_notice(session_);
}

void Http2ServerCodec::goAway() {
  if (!failed_ && !goaway_submitted_) {
    Scope scope(*this);
    goaway_submitted_ = true;
    goaway_last_stream_ = nghttp2_session_get_last_proc_stream_id(session_);
    nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, goaway_last_stream_, NGHTTP2_NO_ERROR,
                          nullptr, 0);
  }
  // The connection may close right after: frames still waiting for the end of a read
  // callback (the last stream's DATA) go into the output now.
  writeQueued();
}

void Http2ServerCodec::writeQueued() {
  if (!flush_queued_ || depth_ > 0) return;
  dispatcher_->cancelFlush(*this);
  flushNow();
}

void Http2ServerCodec::onAboveWriteBufferHighWatermark() {
  Scope scope(*this);
  paused_ = true;
}

void Http2ServerCodec::onBelowWriteBufferLowWatermark() {
  Scope scope(*this);
  paused_ = false;
  // Streams whose DATA was held back while paused (Stream::readResponse) are offered again.
  for (auto& [id, stream] : streams_) stream->resumeData();
}

void Http2ServerCodec::maybeRetire(Stream& stream) {
  if (!stream.closed || !stream.coreDone()) return;
  auto it = streams_.find(stream.id());
  if (it == streams_.end()) return;
  retired_.push_back(std::move(it->second));
  streams_.erase(it);
}

void Http2ServerCodec::fail(CodecErrorKind kind, std::string detail, uint32_t h2_error) {
  if (failed_) return;
  failed_ = true;
  error_ = CodecError{0, std::move(detail), kind};
  // GOAWAY with the error (RFC 9113 §5.4.1); the connection closes once it is written. The
  // output is written even if paused: it is the last thing this connection says.
  nghttp2_session_terminate_session(session_, h2_error);
}

void Http2ServerCodec::flushNow() { Scope::flushNow(*this); }

void Http2ServerCodec::writeAndDeliver() {
  Scope::writeRounds(*this);
  retired_.clear();
}

void Http2ServerCodec::writeFrames() {
  if (session_ == nullptr) return;
  if (paused_ && !failed_) return;
  const int rv = nghttp2_session_send(session_);
  if (rv != 0 && !failed_) {
    failed_ = true;
    error_ = CodecError{0, nghttp2_strerror(rv), CodecErrorKind::Http2Protocol};
  }
}

bool Http2ServerCodec::deliverEvents() {
  bool told = false;
  // Swapped out first: the core's reaction may add to either list.
  std::vector<std::pair<int32_t, StreamResetReason>> resets;
  resets.swap(resets_);
  for (const auto& [id, reason] : resets) {
    Stream* stream = find(id);
    if (stream == nullptr) continue;
    stream->raiseReset(reason);
    maybeRetire(*stream);
    told = true;
  }
  std::vector<int32_t> drained;
  drained.swap(drained_);
  for (int32_t id : drained) {
    Stream* stream = find(id);
    if (stream == nullptr) continue;
    stream->checkLowWatermark();
    told = true;
  }
  return told;
}

// ---- Receiving ---------------------------------------------------------------------------

int Http2ServerCodec::onBeginHeaders(const nghttp2_frame& frame) {
  block_bytes_ = 0;
  block_fields_ = 0;
  if (frame.hd.type != NGHTTP2_HEADERS || frame.headers.cat != NGHTTP2_HCAT_REQUEST) {
    open_head_ = frame.hd.stream_id;  // trailers: a header block is open all the same
    return 0;
  }
  const int32_t id = frame.hd.stream_id;
  if (goaway_submitted_ && id > goaway_last_stream_) {
    // After the final GOAWAY no new stream is taken (RFC 9113 §6.8); REFUSED_STREAM tells the
    // client it may retry it elsewhere (§8.7). No Stream: its fields are decoded and dropped.
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  open_head_ = id;
  flood_.onStreamOpened();
  streams_.emplace(id, std::make_unique<Stream>(*this, id));
  return 0;
}

int Http2ServerCodec::onHeader(const nghttp2_frame& frame, std::string_view name,
                               std::string_view value) {
  // Every header block counts against the request head's limits: a request head, trailers, or
  // the block of a stream refused after GOAWAY (only one block is open at a time, §6.10).
  block_bytes_ += name.size() + value.size();
  if (name.empty() || name.front() != ':') ++block_fields_;
  const bool request_head =
      frame.hd.type == NGHTTP2_HEADERS && frame.headers.cat == NGHTTP2_HCAT_REQUEST;
  Stream* stream = request_head ? find(frame.hd.stream_id) : nullptr;
  // Request trailers (RFC 9113 §8.1) are decoded (HPACK state must follow) but dropped: the
  // HTTP/1.1 upstream leg carries none.
  if (stream != nullptr) stream->head().addField(name, value);  // counted the same way
  if (block_bytes_ > settings_.max_request_header_bytes ||
      block_fields_ > settings_.max_request_headers) {
    return cutOversizedBlock(stream);
  }
  return 0;
}

int Http2ServerCodec::cutOversizedBlock(Stream* stream) {
  // An HPACK bomb (a few bytes referencing a large dynamic table entry over and over) decodes
  // megabytes per block. Keeping the connection means decoding the rest of every such block to
  // keep the HPACK state, and nghttp2 checks each decoded value: ~half a core for one attacker
  // (nghttpx answers 431 and goes on the same way). ferry does what HAProxy does: the
  // connection ends here, before another field of the block is decoded. The stream still gets
  // its 431 (before the GOAWAY ENHANCE_YOUR_CALM, RFC 9113 §5.4.1), so a client that sent one
  // oversized head by mistake learns why.
  if (stream != nullptr && !stream->refused) refuse(*stream, stream->head().finish().error);
  failed_ = true;
  error_ = CodecError{0, "request header list over the limit: connection closed",
                      CodecErrorKind::Http2Flood};
  // Not nghttp2_session_terminate_session: nghttp2 sends nothing after it, not even the 431
  // queued before. The codec stops reading (failed_), so no other frame is taken.
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE,
                        nghttp2_session_get_last_proc_stream_id(session_),
                        NGHTTP2_ENHANCE_YOUR_CALM, nullptr, 0);
  // Stops nghttp2_session_mem_recv at once: the rest of the input is never decoded.
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

int Http2ServerCodec::onInvalidHeader(const nghttp2_frame& frame, std::string_view name) {
  // nghttp2 would drop a field whose name or value is not valid HTTP/2 and go on; RFC 9113
  // §8.2.1 makes the request malformed. Failing here makes nghttp2 reset the stream with
  // PROTOCOL_ERROR (§8.1.1).
  Stream* stream = find(frame.hd.stream_id);
  if (stream != nullptr && stream->refusal_detail.empty()) {
    stream->refusal_detail = "invalid header field: " + std::string(name.substr(0, 64));
  }
  return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

int Http2ServerCodec::onInvalidFrame(const nghttp2_frame& frame, int lib_error) {
  // nghttp2 refused a stream's frame (HTTP messaging rules, RFC 9113 §8.1.1): keep why.
  Stream* stream = find(frame.hd.stream_id);
  if (stream != nullptr && stream->refusal_detail.empty()) {
    stream->refusal_detail = std::string("malformed request: ") + nghttp2_strerror(lib_error);
  }
  return 0;
}

int Http2ServerCodec::onFrameRecv(const nghttp2_frame& frame) {
  Stream* stream = frame.hd.stream_id != 0 ? find(frame.hd.stream_id) : nullptr;
  const bool end_stream = (frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  switch (frame.hd.type) {
    case NGHTTP2_SETTINGS:
      if ((frame.hd.flags & NGHTTP2_FLAG_ACK) == 0) preface_received_ = true;
      break;
    case NGHTTP2_HEADERS:
      if (open_head_ == frame.hd.stream_id) open_head_ = 0;
      if (stream == nullptr) break;
      if (end_stream) stream->request_ended = true;
      if (frame.headers.cat == NGHTTP2_HCAT_REQUEST) {
        onRequestHead(*stream, end_stream);
      } else if (end_stream) {
        // Trailers end the body (nghttp2 requires END_STREAM on them).
        stream->deliverData(true);
      }
      break;
    case NGHTTP2_DATA:
      if (stream == nullptr) break;
      if (end_stream) stream->request_ended = true;
      stream->deliverData(end_stream);
      break;
    case NGHTTP2_RST_STREAM:
      if (stream != nullptr) stream->reset_received = true;
      // A reset before the response head went out cost ferry work for nothing.
      flood_.onClientReset(stream == nullptr || !stream->responseStarted());
      if (flood_.flooded()) {
        fail(CodecErrorKind::Http2Flood, "rapid reset: most streams reset by the client",
             NGHTTP2_ENHANCE_YOUR_CALM);
      }
      break;
    case NGHTTP2_GOAWAY:
      goaway_received_ = true;
      break;
    default:
      break;
  }
  return 0;
}

void Http2ServerCodec::onRequestHead(Stream& stream, bool end_stream) {
  const bool head_request = stream.head().isHeadRequest();
  RequestHeadBuilder::Result result = stream.head().finish();
  if (!result.headers) {
    refuse(stream, std::move(result.error));
    return;
  }
  stream.handOver(head_request);
  RequestDecoder& decoder = callbacks_.onNewRequest(stream);
  stream.setDecoder(decoder);
  // The core may have answered or reset the stream from onNewRequest already.
  if (stream.coreDone()) return;
  decoder.onRequestHeaders(std::move(result.headers), end_stream);
}

void Http2ServerCodec::refuse(Stream& stream, CodecError error) {
  stream.refused = true;
  if (error.http_status == 0) {
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream.id(), NGHTTP2_PROTOCOL_ERROR);
  } else {
    submitStatusOnly(session_, stream.id(), error.http_status);
  }
  callbacks_.onStreamRefused(error);
}

int Http2ServerCodec::onDataChunk(int32_t stream_id, const uint8_t* data, size_t length) {
  // Connection-level credit goes back at once: bytes held for a slow stream are bounded by
  // that stream's own window, and must not stall the others (RFC 9113 §5.2).
  nghttp2_session_consume_connection(session_, length);
  Stream* stream = find(stream_id);
  if (stream == nullptr) return 0;
  if (stream->coreDone()) {
    stream->discardData(length);
    return 0;
  }
  stream->requestData().add(data, length);
  return 0;
}

int Http2ServerCodec::onStreamClose(int32_t stream_id, uint32_t error_code) {
  if (open_head_ == stream_id) open_head_ = 0;
  Stream* stream = find(stream_id);
  if (stream == nullptr) return 0;
  stream->closed = true;
  if (!stream->handedOver()) {
    if (!stream->refused) {
      // nghttp2 refused the head (its HTTP messaging checks, or the codec's on_invalid_header).
      stream->refused = true;
      callbacks_.onStreamRefused(CodecError{
          0, stream->refusal_detail.empty() ? "malformed request" : stream->refusal_detail,
          CodecErrorKind::Http2Protocol});
    }
  } else if (!stream->coreDone() && !stream->end_stream_sent) {
    // Told after this nghttp2 call returns (deliverEvents), so the core never re-enters it.
    StreamResetReason reason = StreamResetReason::ConnectionClosed;
    if (stream->reset_received) {
      reason = StreamResetReason::RemoteReset;
    } else if (error_code != NGHTTP2_NO_ERROR) {
      reason = StreamResetReason::ProtocolError;  // e.g. content-length not matching the DATA
    }
    resets_.emplace_back(stream_id, reason);
    return 0;
  }
  maybeRetire(*stream);
  return 0;
}

// ---- Sending -----------------------------------------------------------------------------

ssize_t Http2ServerCodec::onSend(const uint8_t* data, size_t length) {
  output_.add(data, length);
  return static_cast<ssize_t>(length);
}

int Http2ServerCodec::onSendData(nghttp2_frame& frame, const uint8_t* frame_header, size_t length,
                                 Stream& stream) {
  // Never NGHTTP2_ERR_WOULDBLOCK: nghttp2 would keep this frame and call back later with the
  // stream's pointer even if the stream closed (and was freed) meanwhile. Pausing is done in
  // Stream::readResponse instead, before a frame is made.
  stream.writeDataFrame(output_, frame, frame_header, length);
  return 0;
}

int Http2ServerCodec::onFrameSend(const nghttp2_frame& frame) {
  switch (frame.hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA: {
      if ((frame.hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) break;
      Stream* stream = find(frame.hd.stream_id);
      if (stream == nullptr) break;
      stream->end_stream_sent = true;
      // RFC 9113 §8.1: the response is complete before the request; RST_STREAM NO_ERROR asks
      // the client to stop sending the rest of it.
      if (!stream->request_ended && !stream->closed) {
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream->id(), NGHTTP2_NO_ERROR);
      }
      break;
    }
    case NGHTTP2_RST_STREAM:
      // A stream refused before it had a Stream: nghttp2 over SETTINGS_MAX_CONCURRENT_STREAMS
      // (RFC 9113 §5.1.2), or a new stream after the final GOAWAY.
      if (frame.rst_stream.error_code == NGHTTP2_REFUSED_STREAM &&
          find(frame.hd.stream_id) == nullptr) {
        callbacks_.onStreamRefused(
            CodecError{0, "stream refused (REFUSED_STREAM)", CodecErrorKind::Http2Protocol});
      }
      break;
    case NGHTTP2_GOAWAY:
      if (frame.goaway.error_code != NGHTTP2_NO_ERROR) {
        // A connection error nghttp2 found by itself (RFC 9113 §5.4.1), or ours. nghttp2 says
        // ENHANCE_YOUR_CALM for a SETTINGS flood, and INTERNAL_ERROR when its RST_STREAM token
        // bucket ran dry (resets of streams already answered, which FloodGuard lets by).
        if (!failed_) {
          const uint32_t code = frame.goaway.error_code;
          const bool flood = code == NGHTTP2_ENHANCE_YOUR_CALM ||
                             (code == NGHTTP2_INTERNAL_ERROR && flood_.clientResets() > 0);
          failed_ = true;
          error_ =
              CodecError{0, "connection error, GOAWAY " + std::string(nghttp2_http2_strerror(code)),
                         flood ? CodecErrorKind::Http2Flood : CodecErrorKind::Http2Protocol};
        }
      } else if (frame.goaway.last_stream_id != kMaxStreamId) {
        final_goaway_sent_ = true;
      }
      break;
    default:
      break;
  }
  return 0;
}

int Http2ServerCodec::onFrameNotSend(const nghttp2_frame& frame, int lib_error) {
  // A response HEADERS or DATA nghttp2 could not write (e.g. a head over its 64 KiB block
  // limit): without it the stream would hang, so it is cut like resetStream() and the core told.
  if (frame.hd.type != NGHTTP2_HEADERS && frame.hd.type != NGHTTP2_DATA) return 0;
  Stream* stream = find(frame.hd.stream_id);
  if (stream == nullptr || stream->closed) return 0;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream->id(), NGHTTP2_INTERNAL_ERROR);
  if (stream->handedOver() && !stream->coreDone()) {
    resets_.emplace_back(stream->id(), StreamResetReason::LocalReset);
  }
  return 0;
}

}  // namespace ferry::http::http2
