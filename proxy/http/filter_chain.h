#pragma once
// A stream's filters, run both ways (filter.h): the request head and body in configured order,
// the response head and body in reverse order, and what a stopped filter holds (StopAndWait,
// StopAndBuffer) until it continues. Only the chain iterates and holds. What passes every filter
// goes to the chain's callbacks: the request to the terminal filter, the response to the client.
//
// Owned by the ActiveStream, which feeds it (the codec's request, the terminal filter's
// response) and implements FilterChainCallbacks; the chain owns the filters and calls their
// onDestroy() from destroy() (or its destructor). Every call runs on the stream's worker.

#include <memory>
#include <vector>

#include "proxy/buffer/buffer.h"
#include "proxy/http/filter.h"

namespace ferry::http {

// Implemented by the stream.
class FilterChainCallbacks {
 public:
  virtual ~FilterChainCallbacks() = default;
  // The request passed every filter: for the terminal filter. `end`: no body follows.
  virtual void onChainRequestHeaders(RequestHeaders& headers, bool end) = 0;
  virtual void onChainRequestData(Buffer& data, bool end_stream) = 0;
  // The response passed every filter: for the client. `end`: no body follows.
  virtual void onChainResponseHeaders(bool end) = 0;
  virtual void onChainResponseData(Buffer& data, bool end_stream) = 0;
  // The stream ended (a filter answered, the client left): iteration stops at once.
  virtual bool streamEnded() const = 0;
  // A filter started a replay: the response being iterated is replaced by the new attempt's.
  virtual bool replayPending() const = 0;
  // The response head went to the client.
  virtual bool responseStarted() const = 0;
};

class FilterChain {
 public:
  // Creates one filter per factory for `worker` (the stream's worker context).
  FilterChain(const std::vector<std::shared_ptr<const FilterFactory>>& factories,
              event::WorkerContext& worker, StreamFilterCallbacks& filter_callbacks,
              FilterChainCallbacks& callbacks);
  ~FilterChain() { destroy(); }

  // Request path. The head is kept by reference (the stream owns it); runRequest() starts the
  // iteration; body given before that waits and follows the head.
  void setRequestHead(RequestHeaders& headers, bool end_stream);
  void runRequest();
  void onRequestData(Buffer& data, bool end_stream);
  void continueRequest();
  // True once the request head went past every filter (the terminal filter has it).
  bool requestHeadersPassed() const { return request_headers_passed_; }

  // Response path (an attempt's answer; a replay's replaces a held one: dropHeldResponse()).
  void onResponseHeaders(ResponseHeaders& headers, bool end_stream);
  void onResponseData(Buffer& data, bool end_stream);
  void continueResponse();
  // A filter holds the response (it has not reached the client).
  bool responseHeld() const { return response_stopped_at_ >= 0; }
  void dropHeldResponse();

  // The attempt failed before the response started: the filters in response-path order (the
  // last configured first) until one claims it; true when one did (or the stream ended).
  bool claimFailure(const UpstreamFailure& failure);
  // The response was cut: every filter learns it (none can claim it).
  void onResponseCut(const UpstreamFailure& failure);
  // onDestroy() to every filter, once.
  void destroy();

  // A filter answers with a response of its own (filter.h: sendResponseHeaders): the filter
  // being called on the request path now, else the one holding the request, becomes the
  // response's source. The request stops there for good (later body passes the filters up to
  // and including it, then is dropped; what waited at the holder is dropped); a held response
  // is dropped; from now on onResponseHeaders/onResponseData start at the filter before it.
  // False (nothing changes) when there is a source already or no filter holds the request.
  bool takeResponseSource();
  // The response's source; null when the response comes from the terminal filter.
  StreamFilter* responseSource() const {
    return response_source_ >= 0 ? filters_[response_source_].get() : nullptr;
  }

 private:
  int count() const { return static_cast<int>(filters_.size()); }
  // Where the response path starts: the last filter, or the one before the response's source.
  int responseStart() const { return response_source_ >= 0 ? response_source_ - 1 : count() - 1; }
  void runRequestHeaders(int from);
  void runRequestData(int from, Buffer& data, bool end_stream);
  // While a filter holds the request: filters from `from` up to the holder see `data`, which
  // then waits at the holder.
  void holdRequestData(int from, Buffer& data, bool end_stream);
  // `end` = the response has no body left to deliver after its head.
  void runResponseHeaders(int from, bool end);
  void runResponseData(int from, Buffer& data, bool end_stream);
  // While a filter holds the response: filters from `from` down to the holder see `data`,
  // which then waits at the holder.
  void holdResponseData(int from, Buffer& data, bool end_stream);
  // A response held by StopAndBuffer is complete: its filter gets the whole body.
  void deliverBufferedResponse();

  FilterChainCallbacks& callbacks_;
  std::vector<StreamFilterPtr> filters_;
  bool destroyed_ = false;

  RequestHeaders* request_headers_ = nullptr;
  bool request_started_ = false;     // runRequest() was called
  bool request_end_stream_ = false;  // the end of the request came in
  int request_stopped_at_ = -1;      // filter holding the request, -1 = none
  bool request_headers_passed_ = false;
  Buffer request_pending_;  // body waiting at the holder (or for runRequest), not yet seen by it
  Buffer request_seen_;     // the chunk the holder stopped on (it saw it)
  bool request_seen_end_ = false;
  int request_calling_ = -1;  // the filter being called on the request path now, -1 = none

  ResponseHeaders* response_headers_ = nullptr;
  int response_stopped_at_ = -1;     // filter holding the response, -1 = none
  bool response_buffering_ = false;  // StopAndBuffer: hold data until the end
  bool response_end_received_ = false;
  Buffer response_held_;  // body waiting at the holder, not yet seen by it
  Buffer response_seen_;  // body the holder saw (the chunk it stopped on, or all)
  bool response_seen_end_ = false;
  int response_source_ = -1;  // the filter that answers itself (takeResponseSource), -1 = none
};

}  // namespace ferry::http
