#pragma once
// The upstream HTTP/2 codec (RFC 9113): ferry as the client of one multiplexed connection to an
// owner. Requests go out as streams (ClientStream, the RequestEncoder the pool hands its user);
// response frames come back through nghttp2_session_mem_recv and are decoded into each stream's
// http::ResponseDecoder. Like the server codec it never touches a socket: the connection hands
// it what it read (dispatch) and flushes what it appended to `output`.
//
// It implements http::ClientConnection (codec.h), as the HTTP/1.1 client codec does.
//
// Who owns what: the codec owns its ClientStreams. A stream's user (the pool's stream) may use
// it until it called detach(), or heard ClientStreamCallbacks::onStreamReset; the codec frees
// it after that and after nghttp2 closed it, never under a running call.
//
// Re-entrancy, as the server codec (server_codec.h): every entry holds a Scope; frames are
// written into `output` when the outermost one ends, and with a dispatcher an entry from
// outside a read callback of this connection (a user encoding a request body while the
// client's connection is read) writes at the end of that callback (Dispatcher::queueFlush):
// one nghttp2_session_send per callback. Resets and "request sent" found during nghttp2 calls
// are told to the users after those calls returned.
//
// Flow control (RFC 9113 §5.2): connection-level credit goes back as soon as DATA arrives;
// stream-level credit only once the stream's bytes were handed to its decoder and the stream
// is not read-disabled. A client of ferry that reads slowly stops its own stream's
// WINDOW_UPDATEs only, never the shared connection's.

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
#include "proxy/http/http2/client_stream.h"
#include "proxy/http/http2/entry_scope.h"

namespace ferry::http::http2 {

struct Http2ClientSettings {
  // SETTINGS_INITIAL_WINDOW_SIZE we advertise: response bytes an owner may send on one stream
  // before ferry returns credit, i.e. what one stalled subscriber can make ferry hold beyond its
  // client's own buffers.
  uint32_t initial_stream_window = 256 * 1024;
  // The connection's receive window (credit is returned at once, so it only caps bytes in
  // flight; large so one stalled stream never stalls the others).
  uint32_t connection_window = 16 * 1024 * 1024;
  // Sum of a response head's name and value sizes; more resets the stream (ProtocolError).
  // Also SETTINGS_MAX_HEADER_LIST_SIZE.
  uint32_t max_response_header_bytes = 64 * 1024;
  // Request body bytes one stream may hold waiting for the owner's credit or the socket before
  // its callbacks hear onAboveWriteBufferHighWatermark; below at half.
  uint32_t stream_write_high_watermark = 1024 * 1024;
};

// Connection-level events, implemented by the pool's connection.
class ClientConnectionCallbacks {
 public:
  virtual ~ClientConnectionCallbacks() = default;
  // The owner sent GOAWAY (RFC 9113 §6.8): streams above `last_stream_id` were not processed
  // (they hear onStreamReset(GoAwayRefused)); no new stream may start on this connection.
  virtual void onGoAway(int32_t last_stream_id, uint32_t error_code) = 0;
  // The owner's SETTINGS arrived (its SETTINGS_MAX_CONCURRENT_STREAMS may have changed).
  virtual void onRemoteSettings() = 0;
  // The owner acknowledged our PING.
  virtual void onPingAck() = 0;
};

// final: its connection holds it by its own type, so the calls per read and per chunk stay
// direct (not virtual).
class Http2ClientCodec final : public ClientConnection, private event::Flushable {
 public:
  // Writes the client connection preface (RFC 9113 §3.4: the magic, SETTINGS, a connection
  // WINDOW_UPDATE) into `output` right away: flush it. `dispatcher` null: frames are written
  // when each outermost call returns (unit tests). `scheme` goes in :scheme ("https"/"http").
  Http2ClientCodec(Buffer& output, ClientConnectionCallbacks& callbacks,
                   const Http2ClientSettings& settings, std::string scheme,
                   event::Dispatcher* dispatcher = nullptr);
  ~Http2ClientCodec() override;
  Http2ClientCodec(const Http2ClientCodec&) = delete;
  Http2ClientCodec& operator=(const Http2ClientCodec&) = delete;

  // Opens a stream whose response goes to `decoder` and whose life goes to `callbacks` (both
  // outlive the stream, until detach() or onStreamReset). Its HEADERS go out at the user's
  // encodeHeaders. Never fails here: a stream that cannot start hears onStreamReset(NotSent).
  ClientStream& newStream(ResponseDecoder& decoder, ClientStreamCallbacks& callbacks) override;
  // Parses the owner's bytes and drains them. False on a connection error (then the
  // connection must close once the output is flushed; every open stream already heard
  // onStreamReset).
  bool dispatch(Buffer& data) override;
  // The connection closed (or is being closed by the pool): every stream still open hears
  // onStreamReset (ConnectionLost, or NotSent for those whose HEADERS never left).
  void onConnectionClosed() override;
  // Keepalive: a PING with new opaque data; onPingAck when the owner answers.
  void sendPing();
  // Graceful close from our side: GOAWAY NO_ERROR (the owner stops nothing we already sent).
  void goAway();
  // The connection's output rose above its high watermark / fell below the low one: no DATA
  // frame is made while above (each stream's own buffer then rises to its watermark).
  void onAboveWriteBufferHighWatermark() override;
  void onBelowWriteBufferLowWatermark() override;

  // The owner's SETTINGS_MAX_CONCURRENT_STREAMS (unbounded until its SETTINGS arrive).
  uint32_t remoteMaxConcurrentStreams() const;
  bool goAwayReceived() const { return goaway_received_; }
  bool failed() const { return failed_; }
  const std::string& errorDetail() const override { return error_; }
  // Streams the codec still holds (for tests: a long connection must not accumulate them).
  size_t liveStreams() const { return streams_.size() + unsent_.size(); }

  // Held by every entry from outside (entry_scope.h).
  using Scope = EntryScope<Http2ClientCodec>;

  // ---- For ClientStream.
  nghttp2_session* session() const { return session_; }
  const Http2ClientSettings& settings() const { return settings_; }
  const std::string& scheme() const { return scheme_; }
  bool outputPaused() const { return paused_ && !failed_; }
  // nghttp2 gave `stream` its id (nghttp2_submit_request).
  void registerStream(ClientStream& stream);
  // The stream may be freed once nghttp2 closed it and its user let go.
  void maybeRetire(ClientStream& stream);
  void noteDrained(ClientStream& stream) { drained_.push_back(&stream); }
  void noteReset(ClientStream& stream, ClientResetReason reason, uint32_t code);

  // ---- nghttp2 callbacks (the trampolines of codec_callbacks.h, shared with the server
  // codec, call these; client_session.cc builds the session).
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
  int onSendData(nghttp2_frame& frame, const uint8_t* frame_header, size_t length,
                 ClientStream& stream);

 private:
  ClientStream* find(int32_t stream_id);
  void fail(std::string detail);
  // The end of the outermost Scope (entry_scope.h): write, deliver, retire.
  void writeAndDeliver();
  void flushNow() override;
  void writeFrames();
  bool deliverEvents();
  void deliverLateResets();

  Buffer& output_;
  ClientConnectionCallbacks& callbacks_;
  event::Dispatcher* const dispatcher_;
  const Http2ClientSettings settings_;
  const std::string scheme_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<ClientStream>> streams_;
  // Streams not yet given an id (the user has not encoded the head) or never started.
  std::vector<std::unique_ptr<ClientStream>> unsent_;
  std::vector<std::unique_ptr<ClientStream>> retired_;  // freed when the outermost Scope ends
  struct PendingReset {
    ClientStream* stream;
    ClientResetReason reason;
    uint32_t code;
  };
  std::vector<PendingReset> resets_;  // told after the nghttp2 call returned
  // Resets of streams whose response already started, told on the next loop turn (see
  // onStreamClose): id, reason, code.
  struct LateReset {
    int32_t id;
    ClientResetReason reason;
    uint32_t code;
  };
  std::vector<LateReset> late_resets_;
  event::TimerPtr late_timer_;
  std::vector<ClientStream*> sent_;  // request END_STREAM written: told onRequestSent
  std::vector<ClientStream*> drained_;
  std::string error_;
  uint64_t ping_seq_ = 0;
  int depth_ = 0;
  bool flush_queued_ = false;
  bool dispatching_ = false;
  bool failed_ = false;
  bool paused_ = false;
  bool goaway_received_ = false;
  int32_t goaway_last_stream_ = 0;

  friend class ClientStream;
  friend class EntryScope<Http2ClientCodec>;
};

}  // namespace ferry::http::http2
