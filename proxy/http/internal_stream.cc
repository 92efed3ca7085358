#include "proxy/http/internal_stream.h"

#include <algorithm>
#include <utility>

#include "proxy/http/request_identity.h"

namespace ferry::http {

std::string internalRequestId(std::string_view issuing_id, uint32_t n) {
  std::string suffix = "-r" + std::to_string(n);
  std::string id(issuing_id.substr(0, kMaxRequestIdBytes - suffix.size()));
  id += suffix;
  return id;
}

// The filter's InternalRequest: forwards to its InternalStream while that exists.
class InternalRequestHandle : public InternalRequest {
 public:
  explicit InternalRequestHandle(InternalStream& stream) : stream_(&stream) {
    stream.setHandle(this);
  }
  ~InternalRequestHandle() override {
    if (stream_ != nullptr) stream_->cancel();
  }
  void sendData(Buffer& data, bool end_stream) override {
    if (stream_ != nullptr) {
      stream_->sendData(data, end_stream);
    } else {
      data.clear();
    }
  }
  void pause(bool paused) override {
    if (stream_ != nullptr) stream_->pause(paused);
  }
  // The stream left (InternalStream::release).
  void detach() { stream_ = nullptr; }

 private:
  InternalStream* stream_;
};

InternalStream::InternalStream(InternalStreams& streams, const InternalRequestOrigin& origin,
                               RequestHeadersPtr head, bool end_stream,
                               InternalResponseCallbacks& callbacks)
    : streams_(streams),
      origin_(origin),
      callbacks_(&callbacks),
      head_(std::move(head)),
      head_end_(end_stream),
      request_ended_(end_stream) {
  // The identity the ActiveStream does not apply to an internal request (internal_request.h).
  HeaderMap& fields = head_->headers;
  fields.set(kRequestIdHeader, origin_.request_id);
  if (streams_.config().identity.x_forwarded) {
    fields.remove("x-forwarded-for");
    fields.remove("x-forwarded-proto");
    if (!origin_.x_forwarded_for.empty()) fields.add("x-forwarded-for", origin_.x_forwarded_for);
    if (!origin_.x_forwarded_proto.empty()) {
      fields.add("x-forwarded-proto", origin_.x_forwarded_proto);
    }
  }
  stream_ = std::make_unique<ActiveStream>(*this, *this, streams_.worker(), streams_.config(),
                                           streams_.stats());
  // Never inside startInternalRequest(): the filter holds its handle before any callback.
  begin_timer_ = streams_.dispatcher().createTimer([this] { begin(); });
  begin_timer_->fireSoon();
}

InternalStream::~InternalStream() {
  if (handle_ != nullptr) handle_->detach();
  stream_.reset();  // before the members it calls back into
}

void InternalStream::begin() {
  if (stream_done_) return;
  begun_ = true;
  stream_->onRequestHeaders(std::move(head_), head_end_);
  if (!head_end_ && !stream_done_ && (pending_body_.length() > 0 || pending_end_)) {
    stream_->onRequestData(pending_body_, pending_end_);
  }
}

void InternalStream::sendData(Buffer& data, bool end_stream) {
  if (request_ended_ || stream_done_) {
    data.clear();
    return;
  }
  request_ended_ = end_stream;
  if (!begun_) {
    pending_body_.move(data);
    pending_end_ = end_stream;
    return;
  }
  stream_->onRequestData(data, end_stream);
}

void InternalStream::pause(bool paused) {
  if (paused == paused_ || stream_done_ || stream_callbacks_ == nullptr) return;
  paused_ = paused;
  // The client-write-watermark path: the router stops / resumes reading the upstream (before
  // the head went in too: the router applies it to the attempt it starts).
  if (paused) {
    stream_callbacks_->onAboveWriteBufferHighWatermark();
  } else {
    stream_callbacks_->onBelowWriteBufferLowWatermark();
  }
}

void InternalStream::cancel() {
  callbacks_ = nullptr;
  if (begin_timer_) begin_timer_->disable();
  if (!stream_done_ && !response_ended_) {
    stream_done_ = true;
    // As a client that leaves: the upstream attempt is released, the record says client_left.
    // Before begin() there is nothing to reset (no head went in; nothing is logged).
    if (begun_) stream_->onDownstreamReset();
  }
  release();
}

void InternalStream::release() {
  if (released_) return;
  released_ = true;
  callbacks_ = nullptr;
  if (handle_ != nullptr) {
    handle_->detach();
    handle_ = nullptr;
  }
  streams_.remove(*this);  // deletes this after the current callbacks unwind
}

void InternalStream::onUpstreamFailureNotClaimed(const UpstreamFailure& failure) {
  failure_ = failure;
}

void InternalStream::encodeHeaders(const ResponseHeaders& headers, bool end_stream) {
  if (callbacks_ == nullptr) return;
  InternalResponseCallbacks* callbacks = callbacks_;
  if (failure_.has_value() && !failure_->response_started) {
    // The router's answer to a failure nobody claimed: the filter gets the failure instead
    // (the access log records the answer, as for a client).
    callbacks_ = nullptr;
    callbacks->onInternalRequestFailed(*failure_);
    return;
  }
  if (end_stream) {
    response_ended_ = true;
    callbacks_ = nullptr;
  }
  callbacks->onInternalResponseHeaders(std::make_unique<ResponseHeaders>(headers), end_stream);
}

void InternalStream::encodeData(Buffer& data, bool end_stream) {
  if (callbacks_ == nullptr) {
    data.clear();
    return;
  }
  InternalResponseCallbacks* callbacks = callbacks_;
  if (end_stream) {
    response_ended_ = true;
    callbacks_ = nullptr;
  }
  callbacks->onInternalResponseData(data, end_stream);
  data.clear();  // what the callee left (this is alive: deletion is deferred)
}

void InternalStream::encodeTrailers(const HeaderMap& trailers) {
  if (callbacks_ == nullptr) return;
  InternalResponseCallbacks* callbacks = callbacks_;
  response_ended_ = true;
  callbacks_ = nullptr;
  callbacks->onInternalResponseTrailers(trailers);
}

void InternalStream::resetStream() {
  // The ActiveStream cut the response (it had started: before that it answers instead).
  if (callbacks_ == nullptr) return;
  InternalResponseCallbacks* callbacks = callbacks_;
  callbacks_ = nullptr;
  const bool upstream_failed = failure_.has_value() && failure_->response_started;
  callbacks->onInternalResponseReset(upstream_failed ? &*failure_ : nullptr);
}

void InternalStream::onStreamComplete(ActiveStream&, bool) {
  stream_done_ = true;
  if (callbacks_ != nullptr) {
    // Ended without an end, a failure or a reset reaching the filter: it still hears the end.
    InternalResponseCallbacks* callbacks = callbacks_;
    callbacks_ = nullptr;
    callbacks->onInternalResponseReset(nullptr);
  }
  release();
}

void InternalStreams::remove(InternalStream& stream) {
  auto it = std::find_if(streams_.begin(), streams_.end(),
                         [&stream](const auto& s) { return s.get() == &stream; });
  if (it == streams_.end()) return;
  dispatcher().deferredDelete(std::move(*it));
  std::swap(*it, streams_.back());
  streams_.pop_back();
}

InternalRequestPtr InternalStreams::start(InternalRequestOrigin origin, RequestHeadersPtr head,
                                          bool end_stream, InternalResponseCallbacks& callbacks) {
  origin.request_id = internalRequestId(origin.request_id, ++started_);
  streams_.push_back(
      std::make_unique<InternalStream>(*this, origin, std::move(head), end_stream, callbacks));
  return std::make_unique<InternalRequestHandle>(*streams_.back());
}

void InternalStreams::endAll() {
  // cancel() unlinks each: iterate over a snapshot.
  std::vector<InternalStream*> open;
  for (auto& stream : streams_) open.push_back(stream.get());
  for (InternalStream* stream : open) stream->cancel();
}

}  // namespace ferry::http
