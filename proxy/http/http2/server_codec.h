#pragma once
// The downstream HTTP/2 codec (RFC 9113) on nghttp2: bytes from the connection go through
// nghttp2_session_mem_recv, whose callbacks open Streams and hand requests to the core; frames
// nghttp2 produces are appended to the connection's output by nghttp2_session_send. The codec
// never touches a socket. Created by createServerCodec() and owned by the connection.
//
// Re-entrancy: the core may call back (encode*, resetStream, readDisable, goAway) from inside
// the codec's callbacks. Those calls only queue frames; the outermost entry into the codec
// (a Scope) writes the frames into the output when it returns, then tells streams whose
// pending response bytes fell below their low watermark, then frees retired streams. Stream
// resets found inside nghttp2 calls are told to the core after that call returned.
// With a dispatcher, an entry from the core inside another connection's read callback (an
// upstream's answer: encodeHeaders then encodeData) defers that writing to the end of the
// callback (Dispatcher::queueFlush): one nghttp2_session_send per callback, not per call.
// The codec must not be destroyed from inside one of its callbacks; its destructor calls
// nothing (the connection manager deals with the streams it still holds).

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/http/codec.h"
#include "proxy/http/http2/codec_factory.h"
#include "proxy/http/http2/entry_scope.h"
#include "proxy/http/http2/flood_guard.h"
#include "proxy/http/http2/stream.h"

namespace ferry::http::http2 {

class Http2ServerCodec : public ServerCodec, private event::Flushable {
 public:
  // `dispatcher` null: frames are written when each outermost call returns (unit tests).
  Http2ServerCodec(Buffer& output, ServerConnectionCallbacks& callbacks,
                   const Http2Settings& settings, event::Dispatcher* dispatcher = nullptr);
  ~Http2ServerCodec() override;
  Http2ServerCodec(const Http2ServerCodec&) = delete;
  Http2ServerCodec& operator=(const Http2ServerCodec&) = delete;

  // ServerCodec
  bool dispatch(Buffer& data) override;
  const CodecError& error() const override { return error_; }
  bool requestHeadInProgress() const override;
  bool wantsClose() const override;
  void shutdownNotice() override;
  void goAway() override;
  void onAboveWriteBufferHighWatermark() override;
  void onBelowWriteBufferLowWatermark() override;
  std::string_view protocol() const override { return "HTTP/2"; }

  // Held by every entry from outside; see the header comment.
  using Scope = EntryScope<Http2ServerCodec>;

  // Streams the codec still holds (for tests: a long connection must not accumulate them).
  size_t liveStreams() const { return streams_.size(); }

  // ---- For Stream.
  nghttp2_session* session() const { return session_; }
  const Http2Settings& settings() const { return settings_; }
  // onAboveWriteBufferHighWatermark(): no DATA frame is made until it is lowered again.
  bool outputPaused() const { return paused_ && !failed_; }
  // The stream may be freed once nghttp2 closed it and the core is done with it.
  void maybeRetire(Stream& stream);
  // The stream's pending response bytes shrank while above its high watermark.
  void noteDrained(Stream& stream) { drained_.push_back(stream.id()); }

  // ---- nghttp2 callbacks (the trampolines of codec_callbacks.h, shared with the client
  // codec, call these; session_callbacks.cc builds the session).
  int onBeginHeaders(const nghttp2_frame& frame);
  int onHeader(const nghttp2_frame& frame, std::string_view name, std::string_view value);
  int onInvalidHeader(const nghttp2_frame& frame, std::string_view name);
  int onInvalidFrame(const nghttp2_frame& frame, int lib_error);
  int onFrameRecv(const nghttp2_frame& frame);
  int onDataChunk(int32_t stream_id, const uint8_t* data, size_t length);
  int onStreamClose(int32_t stream_id, uint32_t error_code);
  int onFrameSend(const nghttp2_frame& frame);
  int onFrameNotSend(const nghttp2_frame& frame, int lib_error);
  ssize_t onSend(const uint8_t* data, size_t length);
  int onSendData(nghttp2_frame& frame, const uint8_t* frame_header, size_t length, Stream& stream);

 private:
  Stream* find(int32_t stream_id);
  void onRequestHead(Stream& stream, bool end_stream);
  // Answers a request the core never sees: RST_STREAM PROTOCOL_ERROR (`http_status` 0) or a
  // bodiless response with that status.
  void refuse(Stream& stream, CodecError error);
  // A header block went over the request head's limits: `stream` (its request head, or null
  // for trailers) is answered 431 and the connection ends with GOAWAY ENHANCE_YOUR_CALM.
  // Returns the nghttp2 error that stops decoding at once.
  int cutOversizedBlock(Stream* stream);
  // A connection error: GOAWAY with `h2_error`, then the connection closes. First error wins.
  void fail(CodecErrorKind kind, std::string detail, uint32_t h2_error);
  // Writes the queued frames and tells the core what that changed (the end of the outermost
  // Scope, entry_scope.h).
  void writeAndDeliver();
  // event::Flushable: the deferred writeAndDeliver at the end of a read callback.
  void flushNow() override;
  // A deferred write, now (before the connection may close).
  void writeQueued();
  void writeFrames();
  // Tells the core what happened during the last nghttp2 call; true when it heard anything.
  bool deliverEvents();

  Buffer& output_;
  ServerConnectionCallbacks& callbacks_;
  event::Dispatcher* const dispatcher_;
  bool flush_queued_ = false;  // writeAndDeliver waits in the dispatcher's flush queue
  bool dispatching_ = false;   // inside dispatch(): its own Scope writes at its end
  const Http2Settings settings_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Stream>> retired_;  // freed when the outermost Scope ends
  std::vector<std::pair<int32_t, StreamResetReason>> resets_;  // to tell after the nghttp2 call
  std::vector<int32_t> drained_;
  FloodGuard flood_;
  CodecError error_;
  int depth_ = 0;
  int32_t open_head_ = 0;          // stream whose header block is being received (0: none)
  uint64_t block_bytes_ = 0;       // name + value bytes of the header block being received
  uint32_t block_fields_ = 0;      // its regular fields (cookie crumbs each count)
  bool preface_received_ = false;  // the client's preface and first SETTINGS arrived
  bool failed_ = false;
  bool paused_ = false;  // onAboveWriteBufferHighWatermark(): no frame is written, no DATA made
  bool goaway_submitted_ = false;
  int32_t goaway_last_stream_ = 0;
  bool final_goaway_sent_ = false;
  bool goaway_received_ = false;

  friend class EntryScope<Http2ServerCodec>;
};

}  // namespace ferry::http::http2
