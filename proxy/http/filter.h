#pragma once
// The filter API: what a filter sees of one request and what it may ask of its stream.
//
// Where it sits: the connection manager creates one ActiveStream per request; the stream creates
// one filter per configured FilterFactory (shared, immutable config) and iterates them:
//   request path:  onRequestHeaders / onRequestBody, in configured order, ending at the
//                  terminal filter (the router), which sends the request upstream;
//   response path: onResponseHeaders / onResponseBody, in reverse order, ending at the client.
// Only the stream iterates and buffers. A filter returns a FilterStatus; a stopped filter is
// resumed with continueRequest() / continueResponse().
//
// Replay: the stream keeps the request body it has passed to the router (shared, not copied)
// up to the replay limit (http/replay_buffer.h). A filter may ask, through replay(), to send
// the same request to another upstream route; the stream replays the kept body and then streams
// whatever the client still sends. Asked from onRequestHeaders (before the router saw the head),
// it chooses where the first attempt goes instead. The local instance is one named target among
// others (localTarget()). owner_forwarding is built on this; it only decides.
//
// A filter's own response: a filter holding the request may answer the client with a
// streamed response of its own (sendResponseHeaders / sendResponseData below); the terminal
// filter is then not used, and the response passes only the filters before it.
//
// Stream info: a filter records what it did for the access log in the stream's info map
// (streamInfo(), access_log/stream_info.h); its fields are declared at start.
//
// Internal requests: a filter may issue requests of its own through the listener's whole path
// and read their answers (startInternalRequest, internal_request.h).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/access_log/stream_info.h"
#include "proxy/buffer/buffer.h"
#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/header_map.h"
#include "proxy/http/internal_request.h"
#include "proxy/upstream/upstream_target.h"

namespace ferry::http {

// While a filter holds a direction (any Stop*), the filters before it on that path keep seeing
// the body as it arrives (they cannot stop it again); the body waits at the holder, which sees
// each byte exactly once: after continue*() (StopAndWait) or whole at the end (StopAndBuffer).
enum class FilterStatus {
  Continue,       // pass the headers/data on to the next filter
  StopAndWait,    // stop here; the filter calls continue*() later
  StopAndBuffer,  // stop here and hold what follows; the filter sees it all at end of stream
};

// Targets and failures are the pools' words (upstream/upstream_target.h, a leaf); the filter
// API names them because a filter chooses where a request goes and answers a failed attempt.
using upstream::failureKindName;
using upstream::UpstreamFailure;
using upstream::UpstreamTarget;

// A target and the headers set on the request sent there (a routed first attempt's).
struct UpstreamRoute {
  UpstreamTarget target;
  HeaderMap extra_headers;
};

// What a filter may ask of its stream. Owned by the stream; valid until onDestroy().
class StreamFilterCallbacks {
 public:
  virtual ~StreamFilterCallbacks() = default;
  virtual event::Dispatcher& dispatcher() = 0;
  // The request head as sent upstream (after request filters ran).
  virtual const RequestHeaders& requestHeaders() const = 0;
  // Resume iteration after this filter returned StopAndWait/StopAndBuffer.
  virtual void continueRequest() = 0;
  virtual void continueResponse() = 0;
  // Answers the client directly (JSON error envelope {"error":{"code","message"}}) and ends
  // all upstream work. `extra` headers are added (e.g. Retry-After).
  virtual void sendLocalReply(int status, std::string_view code, std::string_view message,
                              const HeaderMap& extra) = 0;
  // Answers the client as the terminal filter answers a failed attempt no filter claimed: its
  // failure policy (the router's 502 / 503 / 504, filters/router/upstream_failure_reply.h),
  // through sendLocalReply. For a filter that claimed `failure` (onUpstreamFailure) and wants
  // the client to get what it gets without that filter, without a copy of the policy.
  virtual void sendUpstreamFailureReply(const UpstreamFailure& failure) = 0;
  // True while every request body byte sent upstream is still held for a replay.
  virtual bool requestReplayable() const = 0;
  // The local instance (`local_instance` in the config): where a request goes unless a filter
  // sends it elsewhere.
  virtual const UpstreamTarget& localTarget() const = 0;
  // Sends the request to `route.target` with `route.extra_headers` set.
  // - From onRequestHeaders, before the terminal filter saw the head: the FIRST attempt goes
  //   there instead of the local instance (nothing to replay yet; the body is kept as for any
  //   attempt).
  // - Later: ends the current attempt and sends the request again, the kept body first, then
  //   the rest of the client's body. The response the filter holds (StopAndBuffer) stays held:
  //   the new attempt's response replaces it, or the filter releases it with continueResponse()
  //   when the attempt fails before sending (onUpstreamFailure).
  // Returns false (and does nothing) when the request is not replayable, the response started
  // or the stream ended.
  virtual bool replay(const UpstreamRoute& route) = 0;
  // What this request's filters tell the access log; valid until onDestroy() returns.
  virtual access_log::StreamInfo& streamInfo() = 0;

  // ---- The filter as the source of the client's response ----
  // A filter that holds the request (it returned StopAndWait or StopAndBuffer on it, or is
  // being called on the request path now) may answer the client with a response of its own,
  // streamed as it likes (Envoy's encodeHeaders/encodeData from a decoder filter). With its
  // head the filter becomes the response's source:
  // - the terminal filter is not used for this stream (its attempt, if the request had
  //   reached it, is reset; a response a filter held is dropped); replay() is refused;
  // - the request stops at the source for good, whatever the filter returns: continueRequest()
  //   does nothing, and request body that arrives later passes the filters before it and the
  //   source (onRequestBody, its status ignored) and is then dropped;
  // - the head and body pass the filters BEFORE it on the response path (reverse order, as any
  //   response; the filters after it see none of it), which may hold and edit them as usual,
  //   then go to the client as any response does: x-request-id on the head, counted, bytes
  //   count as the stream's activity (timeouts.stream_idle), access-logged with no upstream;
  // - the client's write watermarks reach it (StreamFilter::onResponseWatermark), and a
  //   drain's deadline asks it to end (StreamFilter::onEndLiveFeed).
  // The stream completes with the end (`end_stream`). Only the source calls
  // sendResponseData() (the stream cannot tell its filters apart on this call).
  //
  // Misuse is answered, not asserted: false (and nothing done, `data` left as it was) when
  // the stream has ended (the client left: the source heard onDestroy()), for a second head,
  // for a head once a response started or from a filter that does not hold the request, and
  // for data before the head or after the end. A filter may thus write from callbacks of its
  // own without tracking the stream's end, and stop on false.
  virtual bool sendResponseHeaders(ResponseHeadersPtr headers, bool end_stream) = 0;
  // Body bytes of the filter's response; drains `data` when taken.
  virtual bool sendResponseData(Buffer& data, bool end_stream) = 0;
  // Internal requests (internal_request.h): starts a request of the filter's own, which runs
  // through this listener's whole path; its answer goes to `callbacks`. `end_stream` false: the
  // body follows through the handle's sendData(). The filter owns the handle (destroying it
  // cancels); this stream ends whatever is still open when it ends. Null once this stream has
  // ended.
  virtual InternalRequestPtr startInternalRequest(RequestHeadersPtr head, bool end_stream,
                                                  InternalResponseCallbacks& callbacks) = 0;
  // An issuer of internal requests that outlive this stream (internal_request.h), with this
  // stream's identity. Null once this stream has ended, and from a stream that cannot issue
  // internal requests (the default).
  virtual InternalRequestIssuerPtr newInternalRequestIssuer() { return nullptr; }
  // True in an internal request's stream: a filter that issues internal requests lets this
  // request pass instead of intercepting its own request again.
  virtual bool internalRequest() const = 0;
};

class StreamFilter {
 public:
  virtual ~StreamFilter() = default;
  // Called once, right after creation.
  virtual void setCallbacks(StreamFilterCallbacks& callbacks) { callbacks_ = &callbacks; }
  virtual FilterStatus onRequestHeaders(RequestHeaders& headers, bool end_stream) {
    return FilterStatus::Continue;
  }
  virtual FilterStatus onRequestBody(Buffer& data, bool end_stream) {
    return FilterStatus::Continue;
  }
  virtual FilterStatus onResponseHeaders(ResponseHeaders& headers, bool end_stream) {
    return FilterStatus::Continue;
  }
  virtual FilterStatus onResponseBody(Buffer& data, bool end_stream) {
    return FilterStatus::Continue;
  }
  // The upstream attempt failed. Return true when this filter answered it (a local reply, or
  // continueResponse() on a response it held). Not consulted once the response has started:
  // the stream then cuts the response (HTTP/1.1: closes the connection).
  virtual bool onUpstreamFailure(const UpstreamFailure& failure) { return false; }
  // While this filter is the response's source (sendResponseHeaders): the client's write
  // buffer for this stream rose above its high watermark (`above`) / fell below its low one.
  // Stop / resume writing; bytes written meanwhile are buffered, not lost.
  virtual void onResponseWatermark(bool above) {}
  // A drain's deadline (ActiveStream::endLiveFeed), while this filter is the response's source
  // and its head went out: end the response now at a boundary of its own (sendResponseData
  // with `end_stream`) and return true, so the client gets a complete response and resumes
  // from where it ended; false: it cannot, and the stream is cut with its connection. Not
  // asked when the response's framing cannot end early (HTTP/1.1 Content-Length).
  virtual bool onEndLiveFeed() { return false; }
  // The stream ends (complete, reset or client gone). Cancel timers and outstanding work.
  virtual void onDestroy() {}

 protected:
  StreamFilterCallbacks* callbacks_ = nullptr;
};
using StreamFilterPtr = std::unique_ptr<StreamFilter>;

// Shared, immutable per-filter config; creates one filter per request. Called by the stream
// (through its filter chain) on its worker's thread. `worker` is that worker's context
// (event/worker_context.h): a factory that keeps state per worker finds it there by the slot it
// allocated when its config was built. The filter may keep the reference: the context outlives
// every stream of its worker.
class FilterFactory {
 public:
  virtual ~FilterFactory() = default;
  virtual StreamFilterPtr createFilter(event::WorkerContext& worker) const = 0;
};

}  // namespace ferry::http
