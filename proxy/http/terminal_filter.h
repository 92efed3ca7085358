#pragma once
// The terminal filter (the router) is the last filter on the request path: it sends the request
// upstream and feeds the upstream's answer back into the stream's response path. These are the
// extra calls the stream and the terminal filter make to each other, beyond filter.h.

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
  virtual void onUpstreamFailure(const UpstreamFailure& failure) = 0;
  // Backpressure: the upstream's write buffer is above/below its watermark.
  virtual void pauseRequestBody(bool pause) = 0;
  // Appends a copy of the kept request body to `out`; false when not replayable.
  virtual bool copyReplayBody(Buffer& out) const = 0;
  // True once the client's whole request body has been received.
  virtual bool requestComplete() const = 0;
  // Where the first attempt goes: the route a filter chose with routeRequest(), or nullptr for
  // the local instance.
  virtual const UpstreamRoute* firstRoute() const { return nullptr; }
};

class TerminalFilter : public StreamFilter {
 public:
  virtual void setTerminalCallbacks(TerminalFilterCallbacks& callbacks) = 0;
  // Ends the current upstream attempt and sends the request (saved head plus `extra_headers`)
  // to `target`, the kept body first (`body`), then later onRequestBody calls.
  virtual void replay(const UpstreamTarget& target, const HeaderMap& extra_headers,
                      Buffer& body) = 0;
  // replay() to the local instance with no extra headers (StreamFilterCallbacks::
  // replayRequestToLocal). The router implements it; the default does nothing, for test fakes
  // that never replay to the local instance.
  virtual void replayToLocal(Buffer& body) {}
  // Backpressure: the client's write buffer is above/below its watermark.
  virtual void pauseResponse(bool pause) = 0;
  // The stream is done with the upstream (response complete, local reply, or reset).
  virtual void resetUpstream() = 0;
  // True for a live feed (a long-poll or an SSE feed): at a drain's deadline its response is
  // ended cleanly instead of cut.
  virtual bool liveFeed() const { return false; }
};

class TerminalFilterFactory {
 public:
  virtual ~TerminalFilterFactory() = default;
  // Called on a worker's thread, once per stream.
  virtual std::unique_ptr<TerminalFilter> createTerminalFilter() const = 0;
};

}  // namespace ferry::http
