#include "proxy/http/http2/stream.h"

#include <vector>

#include "proxy/http/http2/data_frames.h"
#include "proxy/http/http2/field_rules.h"
#include "proxy/http/http2/response_conversion.h"
#include "proxy/http/http2/server_codec.h"
#include "proxy/http/http2/session_callbacks.h"

namespace ferry::http::http2 {

namespace {

// RFC 9110 §6.4.1: 204 and 304 responses never have content.
bool statusForbidsBody(int status) { return status == 204 || status == 304; }

}  // namespace

Stream::Stream(Http2ServerCodec& codec, int32_t id)
    : codec_(codec),
      id_(id),
      head_(codec.settings().max_request_header_bytes, codec.settings().max_request_headers) {}

void Stream::deliverData(bool end_stream) {
  const size_t length = request_data_.length();
  if (decoder_ == nullptr || coreDone()) {
    discardData(length);
    request_data_.clear();
    return;
  }
  // Empty DATA frames without END_STREAM mean nothing (CVE-2019-9518 sends floods of them):
  // they cost the core no call.
  if (length == 0 && !end_stream) return;
  decoder_->onRequestData(request_data_, end_stream);
  request_data_.clear();
  // The decoder took the bytes (it may have read-disabled the stream while doing so). The
  // client's window reopens only when the core can take more (RFC 9113 §5.2.2).
  if (read_disabled_ > 0) {
    held_credit_ += length;
  } else if (length > 0 && !closed) {
    nghttp2_session_consume_stream(codec_.session(), id_, length);
  }
}

void Stream::discardData(size_t length) {
  if (length > 0 && !closed) nghttp2_session_consume_stream(codec_.session(), id_, length);
}

void Stream::readDisable(bool disable) {
  Http2ServerCodec::Scope scope(codec_);
  if (disable) {
    ++read_disabled_;
    return;
  }
  if (read_disabled_ == 0 || --read_disabled_ > 0) return;
  if (held_credit_ > 0 && !closed) {
    nghttp2_session_consume_stream(codec_.session(), id_, held_credit_);
  }
  held_credit_ = 0;
}

void Stream::raiseReset(StreamResetReason reason) {
  if (coreDone()) return;
  reset_raised_ = true;
  pending_.clear();
  if (callbacks_ != nullptr) callbacks_->onStreamReset(reason);
}

void Stream::encodeInformational(const ResponseHeaders& headers) {
  // RFC 9113 §8.1: 1xx heads before the final one; 101 would switch protocols, which HTTP/2
  // forbids (§8.6).
  if (response_started_ || coreDone() || closed) return;
  if (headers.status < 100 || headers.status >= 200 || headers.status == 101) return;
  Http2ServerCodec::Scope scope(codec_);
  ResponseFieldList fields(headers);
  nghttp2_submit_headers(codec_.session(), NGHTTP2_FLAG_NONE, id_, nullptr, fields.data(),
                         fields.size(), nullptr);
}

void Stream::encodeHeaders(const ResponseHeaders& headers, bool end_stream) {
  if (response_started_ || coreDone()) return;
  Http2ServerCodec::Scope scope(codec_);
  response_started_ = true;
  if (end_stream) response_ended_ = true;
  if (!closed) {
    ResponseFieldList fields(headers);
    // A HEAD response, a 204 and a 304 carry no content (RFC 9110 §9.3.2, §6.4.1): END_STREAM
    // goes on the HEADERS, and body bytes the core may still encode are dropped.
    body_sent_with_head_ = end_stream || head_request_ || statusForbidsBody(headers.status);
    if (body_sent_with_head_) {
      nghttp2_submit_response(codec_.session(), id_, fields.data(), fields.size(), nullptr);
    } else {
      nghttp2_data_provider provider = responseBodyProvider(*this);
      nghttp2_submit_response(codec_.session(), id_, fields.data(), fields.size(), &provider);
    }
  }
  codec_.maybeRetire(*this);
}

void Stream::encodeData(Buffer& data, bool end_stream) {
  if (!response_started_ || coreDone()) {
    data.clear();
    return;
  }
  Http2ServerCodec::Scope scope(codec_);
  if (end_stream) response_ended_ = true;
  if (body_sent_with_head_ || closed) {
    data.clear();
    codec_.maybeRetire(*this);
    return;
  }
  pending_.move(data);
  const size_t high = codec_.settings().stream_write_high_watermark;
  if (!above_high_ && pending_.length() > high) {
    above_high_ = true;
    // No call once the response's end was encoded (StreamCallbacks' contract).
    if (callbacks_ != nullptr && !response_ended_) callbacks_->onAboveWriteBufferHighWatermark();
  }
  if (data_deferred_) {
    data_deferred_ = false;
    nghttp2_session_resume_data(codec_.session(), id_);
  }
  codec_.maybeRetire(*this);
}

void Stream::encodeTrailers(const HeaderMap& trailers) {
  if (!response_started_ || coreDone()) return;
  auto kept = std::make_unique<HeaderMap>();
  for (const auto& field : trailers.fields()) {
    if (isForbiddenTrailer(field.name) || !writable(field)) continue;
    kept->add(field.name, field.value);
  }
  if (kept->size() > 0 && !body_sent_with_head_) trailers_ = std::move(kept);
  Buffer none;
  encodeData(none, true);
}

void Stream::resetStream() {
  if (coreDone()) return;
  Http2ServerCodec::Scope scope(codec_);
  local_reset_ = true;
  pending_.clear();
  // RFC 9113 §8.1: a response cut after its head went out; the other streams go on.
  if (!closed) {
    nghttp2_submit_rst_stream(codec_.session(), NGHTTP2_FLAG_NONE, id_, NGHTTP2_INTERNAL_ERROR);
  }
  codec_.maybeRetire(*this);
}

ssize_t Stream::readResponse(size_t max_length, uint32_t* data_flags) {
  if (local_reset_ || reset_raised_) {
    // The RST_STREAM is on its way; nothing more goes out.
    data_deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (codec_.outputPaused()) {
    // The connection's output is above its high watermark (possibly since a moment ago, told
    // from inside the codec's own writes): no more DATA; Http2ServerCodec resumes it.
    data_deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  const ssize_t offered =
      offerPendingData(max_length, pending_.length(), response_ended_, data_deferred_, data_flags);
  if (offered >= 0 && (*data_flags & NGHTTP2_DATA_FLAG_EOF) != 0 && trailers_ != nullptr) {
    // The body's last DATA goes without END_STREAM; the trailers' HEADERS carries it (nghttp2
    // wants them submitted from this callback).
    std::vector<nghttp2_nv> nv;
    nv.reserve(trailers_->size());
    for (const auto& field : trailers_->fields()) nv.push_back(makeNv(field.name, field.value));
    if (nghttp2_submit_trailer(codec_.session(), id_, nv.data(), nv.size()) == 0) {
      *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    }
    trailers_.reset();
  }
  return offered;
}

void Stream::resumeData() {
  if (!data_deferred_ || closed || local_reset_ || reset_raised_) return;
  if (pending_.empty() && !response_ended_) return;
  data_deferred_ = false;
  nghttp2_session_resume_data(codec_.session(), id_);
}

// Called by nghttp2 right after readResponse() offered `length` bytes, within the same write
// (no call into the core in between), so the pending buffer still holds them.
void Stream::writeDataFrame(Buffer& output, const nghttp2_frame& frame, const uint8_t* frame_header,
                            size_t length) {
  http2::writeDataFrame(output, pending_, frame, frame_header, length);
  if (above_high_) codec_.noteDrained(*this);
}

void Stream::checkLowWatermark() {
  if (!above_high_) return;
  if (pending_.length() >= codec_.settings().stream_write_high_watermark / 2) return;
  above_high_ = false;
  if (callbacks_ != nullptr && !coreDone()) callbacks_->onBelowWriteBufferLowWatermark();
}

}  // namespace ferry::http::http2
