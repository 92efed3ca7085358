#pragma once
// The terminal filter (the router) is the last filter on the request path: it sends the request
// upstream and feeds the upstream's answer back into the stream's response path. These are the
// extra calls the stream and the terminal filter make to each other, beyond filter.h. The stream
// owns the terminal filter (created per stream by its factory, on the worker's thread) and gives
// it these callbacks, valid until its onDestroy().

#include <memory>

#include "proxy/http/filter.h"

namespace ferry::http {

// Given by the stream to its terminal filter.
class TerminalFilterCallbacks : public StreamFilterCallbacks {
 public:
  // The upstream's answer, in order. May be called again after a replay started (the new
  // attempt's response replaces the held one).
  virtual void onUpstreamInformational(ResponseHeadersPtr headers) = 0;
  virtual void onUpstreamHeaders(ResponseHeadersPtr headers, bool end_stream) = 0;
  virtual void onUpstreamData(Buffer& data, bool end_stream) = 0;
  // The response ends with trailers (an HTTP/2 owner's). Filters see the end of the body
  // (onResponseBody with end_stream), not the fields; the client gets them with the end of
  // the response it is given, if that is this attempt's. The default drops them.
  virtual void onUpstreamTrailers(HeaderMap trailers) {
    Buffer none;
    onUpstreamData(none, true);
  }
  // The current attempt failed. The stream asks its filters (onUpstreamFailure) and cuts a
  // response that started. True: dealt with (a filter answered it, a held response went out, the
  // response was cut, or the stream had ended); false: nobody answered, and the terminal filter
  // answers the client itself (sendLocalReply: its failure policy).
  virtual bool onUpstreamFailure(const UpstreamFailure& failure) = 0;
  // Backpressure: the upstream's write buffer is above/below its watermark.
  virtual void pauseRequestBody(bool pause) = 0;
  // Appends a copy of the kept request body to `out`; false when not replayable.
  virtual bool copyReplayBody(Buffer& out) const = 0;
};

class TerminalFilter : public StreamFilter {
 public:
  virtual void setTerminalCallbacks(TerminalFilterCallbacks& callbacks) = 0;
  // Where a request goes unless a filter sends it elsewhere (StreamFilterCallbacks::
  // localTarget()).
  virtual const UpstreamTarget& localTarget() const = 0;
  // StreamFilterCallbacks::replay(). Before onRequestHeaders: the first attempt will go to
  // `route` (`body` is empty). After: ends the current upstream attempt and sends the request
  // (saved head plus the route's extra headers) to the route's target, the kept body first
  // (`body`, moved from), then later onRequestBody calls.
  virtual void replay(const UpstreamRoute& route, Buffer& body) = 0;
  // Backpressure: the client's write buffer is above/below its watermark.
  virtual void pauseResponse(bool pause) = 0;
  // StreamFilterCallbacks::sendUpstreamFailureReply(): answers `failure` with this filter's
  // failure policy, as for a failure no filter claimed (the stream's sendLocalReply).
  virtual void sendUpstreamFailureReply(const UpstreamFailure& failure) = 0;
  // The stream is done with the upstream (response complete, local reply, or reset).
  virtual void resetUpstream() = 0;
  // True for a live feed (a long-poll or an SSE feed): at a drain's deadline its response is
  // ended cleanly instead of cut.
  virtual bool liveFeed() const { return false; }
  // Whether `request` is a live feed by the same rules, for a request a filter holds before
  // this filter saw it (a filter that serves it with internal requests): at a drain's deadline
  // such a request with no response yet is answered 503 with Retry-After, as liveFeed()'s are.
  virtual bool isLiveFeed(const RequestHeaders& request) const { return false; }
};

class TerminalFilterFactory {
 public:
  virtual ~TerminalFilterFactory() = default;
  // Called by the stream on its worker's thread, once per stream. `worker` is that worker's
  // context (the router finds the worker's pools there); it outlives the filter.
  virtual std::unique_ptr<TerminalFilter> createTerminalFilter(
      event::WorkerContext& worker) const = 0;
};

}  // namespace ferry::http
