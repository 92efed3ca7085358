#include "proxy/http/filter_chain.h"

#include <algorithm>

namespace ferry::http {

FilterChain::FilterChain(const std::vector<std::shared_ptr<const FilterFactory>>& factories,
                         event::WorkerContext& worker, StreamFilterCallbacks& filter_callbacks,
                         FilterChainCallbacks& callbacks)
    : callbacks_(callbacks) {
  filters_.reserve(factories.size());
  for (const auto& factory : factories) {
    filters_.push_back(factory->createFilter(worker));
    filters_.back()->setCallbacks(filter_callbacks);
  }
}

void FilterChain::destroy() {
  if (destroyed_) return;
  destroyed_ = true;
  for (auto& filter : filters_) filter->onDestroy();
}

// ---- Request path ---------------------------------------------------------------------------

void FilterChain::setRequestHead(RequestHeaders& headers, bool end_stream) {
  request_headers_ = &headers;
  request_end_stream_ = end_stream;
}

void FilterChain::runRequest() {
  request_started_ = true;
  runRequestHeaders(0);
}

void FilterChain::runRequestHeaders(int from) {
  bool end = request_end_stream_ && request_pending_.empty();
  for (int i = from; i < count(); ++i) {
    const int outer = request_calling_;
    request_calling_ = i;
    FilterStatus status = filters_[i]->onRequestHeaders(*request_headers_, end);
    request_calling_ = outer;
    if (callbacks_.streamEnded() || response_source_ >= 0) return;
    if (status != FilterStatus::Continue) {
      request_stopped_at_ = i;
      return;
    }
  }
  request_headers_passed_ = true;
  callbacks_.onChainRequestHeaders(*request_headers_, end);
  if (end) return;
  if (!request_pending_.empty() || request_end_stream_) {
    // Body that arrived while filter `from - 1` held the head (or before the request ran):
    // the filters before the holder saw it.
    Buffer pending = std::move(request_pending_);
    runRequestData(std::max(from - 1, 0), pending, request_end_stream_);
  }
}

void FilterChain::onRequestData(Buffer& data, bool end_stream) {
  request_end_stream_ = request_end_stream_ || end_stream;
  if (!request_started_) {
    request_pending_.move(data);
    return;
  }
  if (request_stopped_at_ >= 0) {
    holdRequestData(0, data, end_stream);
    return;
  }
  runRequestData(0, data, end_stream);
}

void FilterChain::holdRequestData(int from, Buffer& data, bool end_stream) {
  // The filters before the one holding the request see the body as it arrives (they cannot
  // stop it again); it waits at the holder, which has not seen it. A holder that is the
  // response's source sees it too, and nothing goes further: it is dropped.
  const bool sourced = response_source_ >= 0;
  const int last = sourced ? request_stopped_at_ : request_stopped_at_ - 1;
  for (int i = from; i <= last; ++i) {
    const int outer = request_calling_;
    request_calling_ = i;
    filters_[i]->onRequestBody(data, end_stream);
    request_calling_ = outer;
    if (callbacks_.streamEnded()) return;
    if (!sourced && response_source_ >= 0) break;  // it answered just now: drop the rest
  }
  if (response_source_ >= 0) {
    data.clear();
    return;
  }
  request_pending_.move(data);
}

void FilterChain::runRequestData(int from, Buffer& data, bool end_stream) {
  for (int i = from; i < count(); ++i) {
    const int outer = request_calling_;
    request_calling_ = i;
    FilterStatus status = filters_[i]->onRequestBody(data, end_stream);
    request_calling_ = outer;
    if (callbacks_.streamEnded()) return;
    if (response_source_ >= 0) {
      data.clear();  // it answered: the request goes no further
      return;
    }
    if (status != FilterStatus::Continue) {
      // The holder saw this chunk; it goes on after the holder when it continues.
      request_stopped_at_ = i;
      request_seen_.move(data);
      request_seen_end_ = end_stream;
      return;
    }
  }
  callbacks_.onChainRequestData(data, end_stream);
}

void FilterChain::continueRequest() {
  if (request_stopped_at_ < 0 || callbacks_.streamEnded() || response_source_ >= 0) return;
  int holder = request_stopped_at_;
  request_stopped_at_ = -1;
  if (!request_headers_passed_) {
    runRequestHeaders(holder + 1);
    return;
  }
  Buffer seen = std::move(request_seen_);
  Buffer later = std::move(request_pending_);
  bool seen_end = request_seen_end_;
  request_seen_end_ = false;
  runRequestData(holder + 1, seen, seen_end);
  if (seen_end || callbacks_.streamEnded() || (later.empty() && !request_end_stream_)) return;
  if (request_stopped_at_ >= 0) {
    holdRequestData(holder, later, request_end_stream_);  // held again further on
  } else {
    runRequestData(holder, later, request_end_stream_);
  }
}

// ---- Response path --------------------------------------------------------------------------

void FilterChain::onResponseHeaders(ResponseHeaders& headers, bool end_stream) {
  response_headers_ = &headers;
  response_end_received_ = end_stream;
  runResponseHeaders(responseStart(), end_stream);
}

void FilterChain::dropHeldResponse() {
  response_held_.clear();
  response_seen_.clear();
  response_seen_end_ = false;
  response_stopped_at_ = -1;
  response_buffering_ = false;
}

void FilterChain::runResponseHeaders(int from, bool end) {
  for (int i = from; i >= 0; --i) {
    FilterStatus status = filters_[i]->onResponseHeaders(*response_headers_, end);
    if (callbacks_.streamEnded()) return;
    if (status != FilterStatus::Continue) {
      response_stopped_at_ = i;
      response_buffering_ = status == FilterStatus::StopAndBuffer;
      // Nothing more will come: the filter gets its (empty) whole body now.
      if (response_buffering_ && end && !callbacks_.replayPending()) deliverBufferedResponse();
      return;
    }
    // The filter started a replay and let this head go: the new attempt's answer replaces it.
    if (callbacks_.replayPending()) return;
  }
  callbacks_.onChainResponseHeaders(end);
}

void FilterChain::onResponseData(Buffer& data, bool end_stream) {
  if (end_stream) response_end_received_ = true;
  if (response_stopped_at_ >= 0) {
    holdResponseData(responseStart(), data, end_stream);
    if (end_stream && response_buffering_ && !callbacks_.streamEnded()) {
      deliverBufferedResponse();
    }
    return;
  }
  runResponseData(responseStart(), data, end_stream);
}

void FilterChain::holdResponseData(int from, Buffer& data, bool end_stream) {
  // The filters nearer the upstream than the holder see the body as it arrives (they cannot
  // stop it again); it waits at the holder, which has not seen it.
  for (int i = from; i > response_stopped_at_; --i) {
    filters_[i]->onResponseBody(data, end_stream);
    if (callbacks_.streamEnded()) return;
  }
  response_held_.move(data);
}

void FilterChain::deliverBufferedResponse() {
  // StopAndBuffer: the holder gets everything it held, in order, in one call.
  response_seen_.move(response_held_);
  response_seen_end_ = true;
  FilterStatus status = filters_[response_stopped_at_]->onResponseBody(response_seen_, true);
  if (status == FilterStatus::Continue && !callbacks_.streamEnded() &&
      !callbacks_.replayPending()) {
    continueResponse();
  }
}

void FilterChain::runResponseData(int from, Buffer& data, bool end_stream) {
  for (int i = from; i >= 0; --i) {
    FilterStatus status = filters_[i]->onResponseBody(data, end_stream);
    if (callbacks_.streamEnded()) return;
    if (status != FilterStatus::Continue) {
      // The holder saw this chunk; it goes on after the holder when it continues.
      response_stopped_at_ = i;
      response_buffering_ = status == FilterStatus::StopAndBuffer;
      response_seen_.move(data);
      response_seen_end_ = end_stream;
      if (end_stream && response_buffering_) deliverBufferedResponse();
      return;
    }
  }
  callbacks_.onChainResponseData(data, end_stream);
}

void FilterChain::continueResponse() {
  if (response_stopped_at_ < 0 || callbacks_.streamEnded()) return;
  int holder = response_stopped_at_;
  response_buffering_ = false;
  Buffer seen = std::move(response_seen_);
  Buffer later = std::move(response_held_);
  bool seen_end = response_seen_end_;
  response_seen_end_ = false;
  response_stopped_at_ = -1;
  if (!callbacks_.responseStarted()) {
    runResponseHeaders(holder - 1, response_end_received_ && seen.empty() && later.empty());
    if (callbacks_.streamEnded() || !callbacks_.responseStarted()) {
      // Held again by a filter nearer the client: what the holder saw (or not) waits there.
      if (!callbacks_.streamEnded()) {
        holdResponseData(holder - 1, seen, seen_end);
        holdResponseData(holder, later, response_end_received_ && !seen_end);
        if (response_end_received_ && response_buffering_) deliverBufferedResponse();
      }
      return;
    }
  }
  runResponseData(holder - 1, seen, seen_end);
  if (seen_end || callbacks_.streamEnded() || (later.empty() && !response_end_received_)) return;
  if (response_stopped_at_ >= 0) {
    holdResponseData(holder, later, response_end_received_);
  } else {
    runResponseData(holder, later, response_end_received_);
  }
}

// ---- Failures -------------------------------------------------------------------------------

bool FilterChain::claimFailure(const UpstreamFailure& failure) {
  for (int i = count() - 1; i >= 0; --i) {
    if (filters_[i]->onUpstreamFailure(failure)) return true;
    if (callbacks_.streamEnded()) return true;
  }
  return false;
}

void FilterChain::onResponseCut(const UpstreamFailure& failure) {
  for (int i = count() - 1; i >= 0; --i) filters_[i]->onUpstreamFailure(failure);
}

// ---- A filter as the response's source ------------------------------------------------------

bool FilterChain::takeResponseSource() {
  if (response_source_ >= 0) return false;
  const int source = request_calling_ >= 0 ? request_calling_ : request_stopped_at_;
  if (source < 0) return false;
  response_source_ = source;
  request_stopped_at_ = source;
  request_pending_.clear();
  request_seen_.clear();
  request_seen_end_ = false;
  dropHeldResponse();
  return true;
}

}  // namespace ferry::http
