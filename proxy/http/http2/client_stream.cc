#include "proxy/http/http2/client_stream.h"

#include <charconv>

#include "proxy/http/http2/client_codec.h"
#include "proxy/http/http2/client_session.h"
#include "proxy/http/http2/data_frames.h"
#include "proxy/http/http2/request_fields.h"

namespace ferry::http::http2 {

void ClientStream::encodeHeaders(const RequestHeaders& headers, bool end_stream) {
  Http2ClientCodec::Scope scope(codec_);
  if (submitted_ || detached_ || reset_raised_ || closed_) return;
  submitted_ = true;
  request_ended_ = end_stream;
  if (codec_.failed() || codec_.goAwayReceived()) {
    // §6.8: no new stream after the owner's GOAWAY; the owner sees nothing of this one.
    closed_ = true;
    codec_.noteReset(*this, ClientResetReason::NotSent, 0);
    return;
  }
  RequestFieldList fields(headers, codec_.scheme());
  nghttp2_data_provider provider = requestBodyProvider(*this);
  const int32_t id = nghttp2_submit_request(codec_.session(), nullptr, fields.data(), fields.size(),
                                            end_stream ? nullptr : &provider, this);
  if (id < 0) {
    // Out of stream ids (a very long connection) or memory: this stream never starts.
    closed_ = true;
    codec_.noteReset(*this, ClientResetReason::NotSent, 0);
    return;
  }
  id_ = id;
  codec_.registerStream(*this);
}

void ClientStream::encodeData(Buffer& data, bool end_stream) {
  Http2ClientCodec::Scope scope(codec_);
  if (detached_ || reset_raised_ || closed_ || !submitted_ || request_ended_) {
    data.drain(data.length());
    return;
  }
  request_ended_ = end_stream;
  pending_.move(data);
  if (!above_high_ && pending_.length() > codec_.settings().stream_write_high_watermark) {
    above_high_ = true;
    callbacks_.onAboveWriteBufferHighWatermark();
  }
  resumeData();
}

void ClientStream::readDisable(bool disable) {
  if (disable) {
    ++read_disabled_;
    return;
  }
  if (read_disabled_ == 0 || --read_disabled_ > 0) return;
  Http2ClientCodec::Scope scope(codec_);
  returnCredit();
}

void ClientStream::returnCredit() {
  if (unconsumed_ == 0 || closed_ || id_ <= 0) return;
  // The bytes went to the decoder: the owner may send as many again on this stream (§6.9).
  nghttp2_session_consume_stream(codec_.session(), id_, unconsumed_);
  unconsumed_ = 0;
}

void ClientStream::detach() {
  Http2ClientCodec::Scope scope(codec_);
  if (detached_) return;
  detached_ = true;
  if (!closed_) {
    if (id_ > 0) {
      // A whole exchange closes on its own; anything else is cancelled (§8.7: CANCEL, the
      // response is no longer wanted).
      if (!(request_ended_ && response_ended_)) {
        nghttp2_submit_rst_stream(codec_.session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_CANCEL);
      }
    } else {
      closed_ = true;  // never submitted: nothing to tell the owner
    }
  }
  pending_.drain(pending_.length());
  codec_.maybeRetire(*this);
}

void ClientStream::beginHeaders() {
  // Not make_unique: that would zero-fill the map's inline storage first (see HeaderMap()).
  head_ = std::make_unique_for_overwrite<ResponseHeaders>();
  head_->status = 0;
  head_bytes_ = 0;
  head_valid_ = true;
}

bool ClientStream::addField(std::string_view name, std::string_view value) {
  if (!head_valid_ || head_ == nullptr) return false;
  head_bytes_ += name.size() + value.size();
  if (head_bytes_ > codec_.settings().max_response_header_bytes) {
    head_valid_ = false;
    return false;
  }
  if (name == ":status") {
    // nghttp2 checked it is exactly three digits (§8.3.2).
    int status = 0;
    std::from_chars(value.data(), value.data() + value.size(), status);
    head_->status = status;
    return true;
  }
  if (!name.empty() && name.front() == ':') return true;  // nghttp2 refuses any other
  head_->headers.add(name, value);
  return true;
}

bool ClientStream::endHeaders(bool end_stream) {
  if (!head_valid_ || head_ == nullptr) return false;
  ResponseHeadersPtr head = std::move(head_);
  if (final_head_seen_) {
    // Trailers (§8.1; nghttp2 made sure they carry END_STREAM and no pseudo-header): they end
    // the body, and go on to the client with its end.
    if (end_stream && !response_ended_) {
      response_ended_ = true;
      if (!detached_ && !reset_raised_) decoder_.onResponseTrailers(std::move(head->headers));
    }
    return true;
  }
  const int status = head->status;
  // §8.6: 101 is not used in HTTP/2; 1xx never ends a stream (§8.1).
  if (status < 100 || status > 599 || status == 101) return false;
  if (status < 200) {
    if (end_stream) return false;
    if (!detached_ && !reset_raised_) decoder_.onInformational(std::move(head));
    return true;
  }
  final_head_seen_ = true;
  response_ended_ = end_stream;
  if (!detached_ && !reset_raised_) decoder_.onResponseHeaders(std::move(head), end_stream);
  return true;
}

void ClientStream::endData(bool end_stream) {
  if (detached_ || reset_raised_) {
    received_.drain(received_.length());
    return;
  }
  if (end_stream) response_ended_ = true;
  if (!received_.empty() || end_stream) decoder_.onResponseData(received_, end_stream);
  received_.drain(received_.length());
  if (read_disabled_ == 0) returnCredit();
}

ssize_t ClientStream::readRequest(size_t max_length, uint32_t* data_flags) {
  if (detached_ || reset_raised_ || codec_.outputPaused()) {
    data_deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return offerPendingData(max_length, pending_.length(), request_ended_, data_deferred_,
                          data_flags);
}

// Called by nghttp2 right after readRequest() offered `length` bytes, within the same write,
// so the pending buffer still holds them.
void ClientStream::writeDataFrame(Buffer& output, const nghttp2_frame& frame,
                                  const uint8_t* frame_header, size_t length) {
  http2::writeDataFrame(output, pending_, frame, frame_header, length);
  bytes_sent_ += 9 + frame.hd.length;
  if (above_high_) codec_.noteDrained(*this);
}

void ClientStream::resumeData() {
  if (!data_deferred_ || closed_ || id_ <= 0 || reset_raised_) return;
  if (pending_.empty() && !request_ended_) return;
  data_deferred_ = false;
  nghttp2_session_resume_data(codec_.session(), id_);
}

void ClientStream::checkLowWatermark() {
  if (!above_high_) return;
  if (pending_.length() >= codec_.settings().stream_write_high_watermark / 2) return;
  above_high_ = false;
  if (!detached_ && !reset_raised_) callbacks_.onBelowWriteBufferLowWatermark();
}

void ClientStream::raiseReset(ClientResetReason reason, uint32_t code) {
  if (reset_raised_ || detached_ || response_ended_) return;
  reset_raised_ = true;
  pending_.drain(pending_.length());
  callbacks_.onStreamReset(reason, code);
}

}  // namespace ferry::http::http2
