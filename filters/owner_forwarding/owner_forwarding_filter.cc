#include "filters/owner_forwarding/owner_forwarding_filter.h"

#include <string_view>

namespace ferry::filters {

namespace {
constexpr std::string_view kReplayTo = "streams-replay-to";
constexpr std::string_view kForwarded = "streams-forwarded";
constexpr std::string_view kForwardedTo = "streams-forwarded-to";

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Routes that are never forwarded, whatever the route list says (contract rule 1).
bool isControlRoute(std::string_view path) {
  return path == "/health" || path == "/readyz" || path == "/livez" ||
         startsWith(path, "/operator") || startsWith(path, "/v1/debug/") ||
         startsWith(path, "/v1/internal/");
}
}  // namespace

bool OwnerForwardingConfig::isDataPlane(const http::RequestHeaders& request) const {
  std::string_view path = request.path;
  if (isControlRoute(path)) return false;
  if (request.method == "OPTIONS") return false;
  for (const auto& prefix : routes) {
    if (startsWith(path, prefix) && path.size() > prefix.size()) return true;
  }
  return false;
}

http::FilterStatus OwnerForwardingFilter::onRequestHeaders(http::RequestHeaders& headers,
                                                           bool end_stream) {
  marked_ = headers.headers.has(kForwarded);
  data_plane_ = config_.isDataPlane(headers);
  return http::FilterStatus::Continue;
}

void OwnerForwardingFilter::skip(SkipReason reason, std::string_view owner) {
  config_.stats->skipped(reason);
  callbacks_->recordForward(access_log::ForwardOutcome::Skipped, owner, skipReasonName(reason));
}

bool OwnerForwardingFilter::decide(const http::ResponseHeaders& response) {
  auto replay_to = response.headers.get(kReplayTo);
  if (!replay_to) return false;  // a 409 of another kind (e.g. producer_seq_gap)
  if (!data_plane_) {
    skip(SkipReason::NotDataPlane, *replay_to);
    return false;
  }
  if (!peers::isValidInstanceName(*replay_to)) {
    skip(SkipReason::InvalidHeader, {});
    return false;
  }
  if (marked_) {
    skip(SkipReason::Marked, *replay_to);
    return false;
  }
  if (*replay_to == config_.instance_name) {
    skip(SkipReason::Self, *replay_to);
    return false;
  }
  // The URL comes only from the trusted table, never from the header itself.
  peers::PeerTableSharedPtr table = config_.peers->current();
  const peers::PeerOrigin* origin = table ? table->find(*replay_to) : nullptr;
  if (origin == nullptr) {
    skip(SkipReason::UnknownOwner, *replay_to);
    return false;
  }
  if (!callbacks_->requestReplayable()) {
    skip(SkipReason::BodyOverLimit, *replay_to);
    return false;
  }
  owner_ = std::string(*replay_to);
  target_ = {owner_, origin->scheme, origin->connectHost(), origin->port, origin->host};
  return true;
}

http::FilterStatus OwnerForwardingFilter::onResponseHeaders(http::ResponseHeaders& headers,
                                                            bool end_stream) {
  if (state_ == State::Forwarding) {
    // The owner's answer: say where it came from and let it stream through.
    headers.headers.set(kForwardedTo, owner_);
    owner_answered_ = true;
    if (end_stream) completeForward();
    return http::FilterStatus::Continue;
  }
  if (state_ != State::Watching || headers.status != 409) return http::FilterStatus::Continue;
  if (!decide(headers)) {
    state_ = State::Done;
    return http::FilterStatus::Continue;
  }
  // Hold the local 409 whole: it goes to the client unchanged if the owner can't be reached.
  state_ = State::HoldingLocal409;
  return http::FilterStatus::StopAndBuffer;
}

http::FilterStatus OwnerForwardingFilter::onResponseBody(Buffer& data, bool end_stream) {
  if (state_ == State::HoldingLocal409) {
    if (!end_stream) return http::FilterStatus::StopAndBuffer;
    return startForward();
  }
  if (state_ == State::Forwarding && end_stream) completeForward();
  return http::FilterStatus::Continue;
}

void OwnerForwardingFilter::completeForward() {
  owner_stats_->completed->inc();
  callbacks_->recordForward(access_log::ForwardOutcome::Forwarded, owner_, {});
  auto elapsed = std::chrono::steady_clock::now() - started_;
  owner_stats_->latency->observeMicros(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()));
  state_ = State::Done;
}

http::FilterStatus OwnerForwardingFilter::startForward() {
  // The client may have uploaded past the replay limit while the 409 body arrived.
  if (!callbacks_->requestReplayable()) {
    skip(SkipReason::BodyOverLimit, owner_);
    state_ = State::Done;
    return http::FilterStatus::Continue;
  }
  owner_stats_ = &config_.stats->forOwner(owner_);
  owner_stats_->attempted->inc();
  started_ = std::chrono::steady_clock::now();
  http::HeaderMap mark;
  mark.add(std::string(kForwarded), config_.instance_name);
  state_ = State::Forwarding;
  if (!callbacks_->replayRequest(target_, mark)) {
    skip(SkipReason::BodyOverLimit, owner_);
    state_ = State::Done;
    return http::FilterStatus::Continue;
  }
  return http::FilterStatus::StopAndWait;
}

bool OwnerForwardingFilter::onUpstreamFailure(const http::UpstreamFailure& failure) {
  if (state_ != State::Forwarding) return false;
  state_ = State::Done;
  if (failure.response_started) {
    owner_stats_->cut->inc();  // the stream cuts the client's response
    callbacks_->recordForward(access_log::ForwardOutcome::Cut, owner_, {});
    return false;
  }
  if (!failure.request_bytes_sent) {
    // The owner saw nothing: the client gets the local 409 and may replay it itself.
    owner_stats_->refused->inc();
    if (failure.kind == http::UpstreamFailure::Kind::TlsHandshakeFailed) {
      owner_stats_->tls_handshake_failures->inc();
    }
    config_.stats->skipped(SkipReason::Refused);
    callbacks_->recordForward(access_log::ForwardOutcome::Refused, owner_, {});
    callbacks_->continueResponse();
    return true;
  }
  // The owner may have applied it: the client must not replay it as new.
  owner_stats_->failed_after_send->inc();
  callbacks_->recordForward(access_log::ForwardOutcome::Failed, owner_, {});
  http::HeaderMap extra;
  extra.add("retry-after", "1");
  callbacks_->sendLocalReply(
      503, "forward_failed",
      "forwarding to " + owner_ + " failed after the request was sent (" +
          std::string(http::failureKindName(failure.kind)) + "); it may have been applied",
      extra);
  return true;
}

void OwnerForwardingFilter::onDestroy() {
  if (state_ == State::Forwarding) {
    config_.stats->cancelled(owner_answered_).inc();
    callbacks_->recordForward(access_log::ForwardOutcome::Cancelled, owner_, {});
  }
  state_ = State::Done;
}

}  // namespace ferry::filters
