#pragma once
// One HTTP/2 stream on the server side (RFC 9113 §5.1): the request head and body coming in,
// the response going out. Created by the server codec when a request's HEADERS begins, and
// handed to the core (ServerConnectionCallbacks::onNewRequest) as its ResponseEncoder once the head
// is complete and valid.
//
// Lifetime: the codec owns every Stream. It keeps one until both nghttp2 has closed the stream
// and the core is done with it (the response's end was encoded, resetStream() was called, or
// onStreamReset() was raised); a Stream never handed to the core goes when nghttp2 closes it.
// A retired Stream is freed when the codec's outermost entry (dispatch, an encoder call, ...)
// returns, so a Stream whose method is running is never freed under it.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/http2/request_conversion.h"

namespace ferry::http::http2 {

class Http2ServerCodec;

class Stream : public ResponseEncoder {
 public:
  Stream(Http2ServerCodec& codec, int32_t id);
  // nghttp2 holds its address (the data provider's source).
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int32_t id() const { return id_; }

  // ---- Request side; called by the codec from nghttp2's receive callbacks.
  RequestHeadBuilder& head() { return head_; }
  // The head was accepted: the stream is handed to the core (onNewRequest, which may already
  // encode through it), then its request events go to `decoder`.
  void handOver(bool head_request) {
    handed_over_ = true;
    head_request_ = head_request;
  }
  void setDecoder(RequestDecoder& decoder) { decoder_ = &decoder; }
  bool handedOver() const { return handed_over_; }
  RequestDecoder* decoder() const { return decoder_; }
  // Bytes of the DATA frame being received; deliverData() hands them to the decoder (with
  // `end_stream` from the frame's flag) and returns their flow-control credit unless the
  // stream is read-disabled (RFC 9113 §5.2.2: credit is how a receiver applies backpressure).
  Buffer& requestData() { return request_data_; }
  void deliverData(bool end_stream);
  // Credit for bytes that never reach a decoder (a refused stream, or after the core is done).
  void discardData(size_t length);

  // ---- Life cycle, as the codec tracks it.
  // The core is done with the stream: the codec will make no more calls into it.
  bool coreDone() const {
    return !handed_over_ || response_ended_ || local_reset_ || reset_raised_;
  }
  bool responseStarted() const { return response_started_; }
  // The core ended the response, but its last frame has not gone out yet (it waits for the
  // client's flow-control credit or for the output to drain).
  bool responseTailPending() const {
    return response_ended_ && !end_stream_sent && !closed && !local_reset_;
  }
  // The codec answered the request itself (RST_STREAM or a status) without a decoder.
  bool refused = false;
  std::string refusal_detail;    // why nghttp2 or the codec refused its head
  bool request_ended = false;    // the client's END_STREAM was received
  bool end_stream_sent = false;  // our END_STREAM went out
  bool reset_received = false;   // the client sent RST_STREAM
  bool closed = false;           // nghttp2 closed the stream (on_stream_close)
  // The stream ended before its response did: tells the core, once.
  void raiseReset(StreamResetReason reason);

  // ---- Response body, pulled by nghttp2 (data provider with NGHTTP2_DATA_FLAG_NO_COPY).
  ssize_t readResponse(size_t max_length, uint32_t* data_flags);
  // Writes one DATA frame into `output`, moving the payload out of the pending bytes.
  void writeDataFrame(Buffer& output, const nghttp2_frame& frame, const uint8_t* frame_header,
                      size_t length);
  // The output is writable again: offers the DATA held back while it was paused.
  void resumeData();
  // After frames were written: onBelowWriteBufferLowWatermark when the pending bytes fell below it.
  void checkLowWatermark();
  size_t pendingResponseBytes() const { return pending_.length(); }

  // ResponseEncoder
  void setStreamCallbacks(StreamCallbacks& callbacks) override { callbacks_ = &callbacks; }
  void encodeInformational(const ResponseHeaders& headers) override;
  void encodeHeaders(const ResponseHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;
  // After the body's last DATA, a HEADERS frame with the fields and END_STREAM (RFC 9113 §8.1).
  void encodeTrailers(const HeaderMap& trailers) override;
  // HTTP/2 ends a response at any point with END_STREAM (RFC 9113 §8.1).
  bool canEndEarly() const override { return response_started_ && !response_ended_; }
  void resetStream() override;
  void readDisable(bool disable) override;

 private:
  Http2ServerCodec& codec_;
  const int32_t id_;
  RequestHeadBuilder head_;
  bool handed_over_ = false;
  RequestDecoder* decoder_ = nullptr;
  StreamCallbacks* callbacks_ = nullptr;
  bool head_request_ = false;
  Buffer request_data_;
  int read_disabled_ = 0;
  uint64_t held_credit_ = 0;  // bytes delivered while read-disabled, credit not yet returned

  Buffer pending_;  // response body bytes not yet in a DATA frame
  // encodeTrailers' fields, submitted when the data provider reaches the body's end.
  std::unique_ptr<HeaderMap> trailers_;
  bool response_started_ = false;     // the final head was encoded
  bool response_ended_ = false;       // the core encoded the response's end
  bool body_sent_with_head_ = false;  // END_STREAM went on the HEADERS (no body on the wire)
  bool data_deferred_ = false;        // nghttp2 parked the data provider (NGHTTP2_ERR_DEFERRED)
  bool above_high_ = false;
  bool local_reset_ = false;
  bool reset_raised_ = false;
};

}  // namespace ferry::http::http2
