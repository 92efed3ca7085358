#pragma once
// The machinery behind internal requests (internal_request.h: the filter's view). An
// InternalStream is an ActiveStream whose client is a filter: it is that stream's
// ResponseEncoder (no socket: the response goes to the filter's InternalResponseCallbacks) and
// its StreamOwner (the issuing client's address, TLS and peer identity), with the same
// StreamConfig as the stream that issued it, so the request takes the listener's whole path.
// InternalStreams, owned by the issuing ActiveStream, keeps them and ends those still open when
// that stream ends.
//
// Life of one: InternalStreams::start() creates it and returns the filter's handle; the head
// goes into its ActiveStream on the next loop turn (with its identity, internal_request.h);
// the ActiveStream's response comes back through the ResponseEncoder calls and goes to the
// callbacks. It leaves InternalStreams (deferred deletion, so never under its own stack) when
// its ActiveStream completes, when the handle is destroyed (cancel: the ActiveStream is reset
// as by a client that left), or when InternalStreams ends it (the issuing stream ended). The
// handle outlives it harmlessly (it then does nothing).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/active_stream.h"
#include "proxy/http/codec.h"
#include "proxy/http/internal_request.h"

namespace ferry::http {

// What an internal request takes from the stream that issued it (internal_request.h: identity).
struct InternalRequestOrigin {
  std::string request_id;         // the issuing request's x-request-id
  std::string x_forwarded_for;    // the issuing request's, as its upstream saw it; empty: none
  std::string x_forwarded_proto;  // likewise
  std::string client_address;     // StreamOwner::downstreamAddress() of the issuing stream
  std::string peer_identity;      // its verified TLS client identity (empty: none)
  bool tls = false;
};

// `<issuing_id>-r<n>`, no longer than kMaxRequestIdBytes (the issuing id shortened from its end).
std::string internalRequestId(std::string_view issuing_id, uint32_t n);

class InternalStreams;
class InternalRequestHandle;

class InternalStream : public ResponseEncoder, public StreamOwner, public event::DeferredDeletable {
 public:
  InternalStream(InternalStreams& streams, const InternalRequestOrigin& origin,
                 RequestHeadersPtr head, bool end_stream, InternalResponseCallbacks& callbacks);
  ~InternalStream() override;

  // From the handle.
  void sendData(Buffer& data, bool end_stream);
  void pause(bool paused);
  // The handle let go, or the issuing stream ended: the stream is reset unless its response
  // already ended; no callback after.
  void cancel();
  void setHandle(InternalRequestHandle* handle) { handle_ = handle; }

  // ResponseEncoder (from the ActiveStream)
  void setStreamCallbacks(StreamCallbacks& callbacks) override { stream_callbacks_ = &callbacks; }
  void encodeInformational(const ResponseHeaders&) override {}
  void encodeHeaders(const ResponseHeaders& headers, bool end_stream) override;
  void encodeData(Buffer& data, bool end_stream) override;
  void encodeTrailers(const HeaderMap& trailers) override;
  bool canEndEarly() const override { return true; }  // the filter takes any end
  void resetStream() override;
  // The request body is the filter's, already in memory: nothing to stop reading.
  void readDisable(bool) override {}

  // StreamOwner (from the ActiveStream)
  void onStreamComplete(ActiveStream& stream, bool cut) override;
  std::string_view downstreamPeerIdentity() const override { return origin_.peer_identity; }
  std::string_view downstreamAddress() override { return origin_.client_address; }
  bool downstreamTls() const override { return origin_.tls; }
  bool internalRequest() const override { return true; }
  void onUpstreamFailureNotClaimed(const UpstreamFailure& failure) override;

 private:
  void begin();
  // Leaves InternalStreams (deferred deletion); the handle is told.
  void release();

  InternalStreams& streams_;
  const InternalRequestOrigin origin_;
  InternalResponseCallbacks* callbacks_;  // null: nothing more is called back
  InternalRequestHandle* handle_ = nullptr;
  StreamCallbacks* stream_callbacks_ = nullptr;
  RequestHeadersPtr head_;  // until begin()
  bool head_end_;
  Buffer pending_body_;  // sendData() before begin()
  bool pending_end_ = false;
  bool request_ended_ = false;  // the request's end went in (or is pending)
  bool begun_ = false;
  bool paused_ = false;
  bool response_ended_ = false;  // the response's end went to the callbacks
  bool stream_done_ = false;     // the ActiveStream completed or was reset
  bool released_ = false;
  // An upstream failure no filter claimed: the router's answer to it is not a response the
  // filter gets, but this failure.
  std::optional<UpstreamFailure> failure_;
  event::TimerPtr begin_timer_;
  std::unique_ptr<ActiveStream> stream_;
};

// The internal requests one ActiveStream issued. Owned by that stream; everything runs on its
// worker.
class InternalStreams {
 public:
  InternalStreams(event::WorkerContext& worker, const StreamConfig& config,
                  stats::ProxyStats& stats)
      : worker_(worker), config_(config), stats_(stats) {}
  ~InternalStreams() { endAll(); }

  // `origin` without its request id: start() derives it (internalRequestId, n counts from 1).
  InternalRequestPtr start(InternalRequestOrigin origin, RequestHeadersPtr head, bool end_stream,
                           InternalResponseCallbacks& callbacks);
  // Cancels every internal request still open (the issuing stream ended).
  void endAll();
  size_t open() const { return streams_.size(); }

  event::WorkerContext& worker() { return worker_; }
  event::Dispatcher& dispatcher() { return worker_.dispatcher(); }
  const StreamConfig& config() const { return config_; }
  stats::ProxyStats& stats() { return stats_; }
  // From an InternalStream leaving: handed to the dispatcher's deferred deletion.
  void remove(InternalStream& stream);

 private:
  event::WorkerContext& worker_;
  const StreamConfig& config_;
  stats::ProxyStats& stats_;
  std::vector<std::unique_ptr<InternalStream>> streams_;
  uint32_t started_ = 0;
};

// An InternalRequestIssuer (internal_request.h): internal requests owned by whoever holds it
// instead of by the stream it was taken from, all with that stream's identity. Worker thread.
class OwnedInternalStreams : public InternalRequestIssuer {
 public:
  OwnedInternalStreams(event::WorkerContext& worker, const StreamConfig& config,
                       stats::ProxyStats& stats, InternalRequestOrigin origin)
      : streams_(worker, config, stats), origin_(std::move(origin)) {}
  InternalRequestPtr start(RequestHeadersPtr head, bool end_stream,
                           InternalResponseCallbacks& callbacks) override {
    return streams_.start(origin_, std::move(head), end_stream, callbacks);
  }

 private:
  InternalStreams streams_;
  const InternalRequestOrigin origin_;
};

}  // namespace ferry::http
