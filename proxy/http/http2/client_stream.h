#pragma once
// One stream of the upstream HTTP/2 codec (client_codec.h): the RequestEncoder the pool's
// stream writes the request to, the response head being decoded, the request body waiting for
// the owner's flow-control credit, and the stream's own receive credit. Owned by its
// Http2ClientCodec. Its events that are not response bytes go to the http::ClientStreamCallbacks
// given to newStream (codec.h, the same interface as the HTTP/1.1 codec's).

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>

#include "proxy/buffer/buffer.h"
#include "proxy/http/codec.h"
#include "proxy/http/header_map.h"

namespace ferry::http::http2 {

class Http2ClientCodec;

class ClientStream : public RequestEncoder {
 public:
  ClientStream(Http2ClientCodec& codec, ResponseDecoder& decoder, ClientStreamCallbacks& callbacks)
      : codec_(codec), decoder_(decoder), callbacks_(callbacks) {}

  // RequestEncoder (from the user). encodeHeaders submits the request (its id is known then).
  void encodeHeaders(const RequestHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;

  // Stops / resumes returning this stream's receive credit (the user's client reads slowly).
  void readDisable(bool disable);
  // The user lets go; no call reaches it afterwards. A stream whose request and response both
  // ended is simply forgotten; any other is reset (RST_STREAM CANCEL).
  void detach();

  int32_t id() const { return id_; }
  // Bytes of frames for this stream written into the connection's output (HEADERS and DATA).
  uint64_t bytesSent() const { return bytes_sent_; }
  bool headersSent() const { return headers_sent_; }
  bool responseStarted() const { return final_head_seen_; }
  bool responseEnded() const { return response_ended_; }

  // nghttp2's data provider (client_session.cc): offers up to `max_length` pending body bytes.
  ssize_t readRequest(size_t max_length, uint32_t* data_flags);

 private:
  friend class Http2ClientCodec;
  // Decoding (from Http2ClientCodec's nghttp2 callbacks).
  void beginHeaders();
  bool addField(std::string_view name, std::string_view value);  // false: over the limit
  // The header block ended; false when the head was malformed (the stream is reset).
  bool endHeaders(bool end_stream);
  void addData(const uint8_t* data, size_t length) { received_.add(data, length); }
  void endData(bool end_stream);
  // Request body (nghttp2's send_data callback).
  void writeDataFrame(Buffer& output, const nghttp2_frame& frame, const uint8_t* frame_header,
                      size_t length);
  void resumeData();
  void checkLowWatermark();
  // Tells the user the stream ended before its response did (once, never after detach()).
  void raiseReset(ClientResetReason reason, uint32_t code);
  void returnCredit();

  Http2ClientCodec& codec_;
  ResponseDecoder& decoder_;
  ClientStreamCallbacks& callbacks_;
  int32_t id_ = 0;
  ResponseHeadersPtr head_;  // the header block being decoded
  uint64_t head_bytes_ = 0;
  bool head_valid_ = true;
  Buffer received_;  // DATA of the frame being received
  Buffer pending_;   // request body waiting for credit or the socket
  uint64_t bytes_sent_ = 0;
  uint64_t unconsumed_ = 0;  // received bytes whose stream credit is not yet returned
  int read_disabled_ = 0;
  bool submitted_ = false;  // nghttp2_submit_request done
  bool headers_sent_ = false;
  bool request_ended_ = false;  // the user encoded the request's end
  bool end_stream_sent_ = false;
  bool data_deferred_ = false;
  bool above_high_ = false;
  bool final_head_seen_ = false;
  bool response_ended_ = false;
  bool closed_ = false;    // nghttp2 closed it (or it never opened and never will)
  bool detached_ = false;  // the user let go
  bool reset_raised_ = false;
  bool rst_received_ = false;
  uint32_t rst_code_ = 0;
  bool protocol_error_ = false;  // ferry reset it for a malformed response
};

}  // namespace ferry::http::http2
