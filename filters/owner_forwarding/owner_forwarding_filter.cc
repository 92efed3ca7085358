#include "filters/owner_forwarding/owner_forwarding_filter.h"

#include <string_view>

#include "filters/owner_forwarding/forward_log.h"
#include "filters/owner_forwarding/stream_key.h"

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
  // No ferry ever forwards (or routes) a marked request.
  if (config_.routing != nullptr && data_plane_ && !marked_) {
    key_ = streamKey(headers.path);
    if (key_) routeIfLearned();
  }
  return http::FilterStatus::Continue;
}

// ---- Owner routing ----------------------------------------------------------------------------

void OwnerForwardingFilter::routeIfLearned() {
  OwnerRouteTable& table = config_.routing->table(worker_);
  const std::string* owner = table.find(*key_, std::chrono::steady_clock::now());
  if (owner == nullptr) return;
  // Resolved at use, never stored as a URL: an owner that left the table is a dead entry.
  peers::PeerTableSharedPtr peers = config_.peers->current(worker_);
  const peers::PeerOrigin* origin = peers ? peers->find(*owner) : nullptr;
  if (origin == nullptr || *owner == config_.instance_name) {
    table.forget(*key_, OwnerRouteTable::Drop::OwnerGone);
    return;
  }
  owner_ = *owner;
  target_ = {owner_, origin->scheme, origin->connectHost(), origin->port, origin->host};
  if (!callbacks_->replay({target_, forwardedMark()})) return;  // the first attempt goes there
  state_ = State::Routed;
  started_ = std::chrono::steady_clock::now();
}

http::HeaderMap OwnerForwardingFilter::forwardedMark() const {
  http::HeaderMap mark;
  mark.add(kForwarded, config_.instance_name);
  // A token name and this instance's name, a token too (checked when the config loaded): fit
  // for an HTTP/1 head as it stands, so a parsed head it is added to stays unchecked.
  mark.markWireSafe();
  return mark;
}

void OwnerForwardingFilter::sayForwardedTo(http::ResponseHeaders& headers) const {
  // owner_ is a peer table's name (checked as a token when the table loaded): a head fit for
  // HTTP/1 as it stood stays so (HeaderMap::wireSafe(); set() alone would drop the mark).
  const bool wire_safe = headers.headers.wireSafe();
  headers.headers.set(kForwardedTo, owner_);
  if (wire_safe) headers.headers.markWireSafe();
}

void OwnerForwardingFilter::learn(const std::string& owner) {
  if (key_) config_.routing->table(worker_).learn(*key_, owner, std::chrono::steady_clock::now());
}

void OwnerForwardingFilter::forgetRoute(OwnerRouteTable::Drop why) {
  if (key_) config_.routing->table(worker_).forget(*key_, why);
}

http::FilterStatus OwnerForwardingFilter::resendAfterWrongOwner() {
  // The learned owner answered 409 naming another: at most one more send, and only with the
  // whole body still kept; otherwise its 409 goes to the client, as the local 409 would.
  state_ = State::Resent;
  recordForward(callbacks_->streamInfo(), ForwardOutcome::Forwarded, owner_, {});
  if (callbacks_->requestReplayable()) {
    peers::PeerTableSharedPtr peers = config_.peers->current(worker_);
    const peers::PeerOrigin* origin = corrected_owner_ == config_.instance_name || !peers
                                          ? nullptr
                                          : peers->find(corrected_owner_);
    bool sent = false;
    if (origin != nullptr) {
      upstream::UpstreamTarget target{corrected_owner_, origin->scheme, origin->connectHost(),
                                      origin->port, origin->host};
      resent_to_peer_ = true;
      sent = callbacks_->replay({target, forwardedMark()});
      if (sent) {
        owner_ = corrected_owner_;  // the owner the answer (and the access log) is about now
        target_ = std::move(target);
      }
    } else {
      // This instance is the owner, or the named one is unknown here: the local path.
      resent_to_peer_ = false;
      sent = callbacks_->replay({callbacks_->localTarget(), {}});
    }
    if (sent) {
      config_.routing->count(RouteOutcome::Corrected);
      recordRoute(callbacks_->streamInfo(), routeOutcomeName(RouteOutcome::Corrected));
      return http::FilterStatus::StopAndWait;
    }
  }
  config_.routing->count(RouteOutcome::WrongOverLimit);
  recordRoute(callbacks_->streamInfo(), routeOutcomeName(RouteOutcome::WrongOverLimit));
  state_ = State::Done;
  return http::FilterStatus::Continue;
}

void OwnerForwardingFilter::answerForwardFailed(const std::string& owner,
                                                const upstream::UpstreamFailure& failure) {
  recordForward(callbacks_->streamInfo(), ForwardOutcome::Failed, owner, {});
  http::HeaderMap extra;
  extra.add("retry-after", "1");
  callbacks_->sendLocalReply(503, "forward_failed",
                             "forwarding to " + owner + " failed after the request was sent (" +
                                 std::string(upstream::failureKindName(failure.kind)) +
                                 "); it may have been applied",
                             extra);
}

bool OwnerForwardingFilter::onRoutedFailure(const upstream::UpstreamFailure& failure) {
  forgetRoute(OwnerRouteTable::Drop::Wrong);
  if (failure.response_started) {
    // Counted `right` when its head came; the access log says the response was cut.
    recordForward(callbacks_->streamInfo(), ForwardOutcome::Cut, owner_, {});
    state_ = State::Done;
    return false;  // the stream cuts the response
  }
  if (!failure.request_bytes_sent) {
    // The learned owner saw nothing: the request takes the path it takes without routing
    // (the local instance first; its 409 is forwarded as usual).
    config_.routing->count(RouteOutcome::Unreachable);
    recordRoute(callbacks_->streamInfo(), routeOutcomeName(RouteOutcome::Unreachable));
    owner_.clear();
    state_ = State::Watching;
    // Not replayable (the body outgrew the limit while waiting): nobody saw anything, the
    // stream answers 503 upstream_unavailable with Retry-After.
    return callbacks_->replay({callbacks_->localTarget(), {}});
  }
  // The owner may have applied it: the client must not replay it as new.
  config_.routing->count(RouteOutcome::Failed);
  recordRoute(callbacks_->streamInfo(), routeOutcomeName(RouteOutcome::Failed));
  state_ = State::Done;
  answerForwardFailed(owner_, failure);
  return true;
}

bool OwnerForwardingFilter::onResentFailure(const upstream::UpstreamFailure& failure) {
  state_ = State::Done;
  if (failure.response_started) return false;  // the stream cuts the response
  if (!failure.request_bytes_sent) {
    // The second target saw nothing: the wrong owner's 409 (held) goes to the client, which
    // may replay it itself.
    callbacks_->continueResponse();
    return true;
  }
  if (resent_to_peer_) {
    answerForwardFailed(owner_, failure);
    return true;
  }
  // The local instance failed after a byte: what the client gets without routing (the
  // router's answer, 504 or 502), not the wrong owner's held 409 that would invite a replay.
  callbacks_->sendUpstreamFailureReply(failure);
  return true;
}

void OwnerForwardingFilter::skip(SkipReason reason, std::string_view owner) {
  config_.stats->skipped(reason);
  recordForward(callbacks_->streamInfo(), ForwardOutcome::Skipped, owner, skipReasonName(reason));
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
  peers::PeerTableSharedPtr table = config_.peers->current(worker_);
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
  if (state_ == State::Routed) {
    sayForwardedTo(headers);
    auto replay_to = headers.status == 409 ? headers.headers.get(kReplayTo) : std::nullopt;
    if (replay_to && peers::isValidInstanceName(*replay_to)) {
      // Not the owner (any more): hold its 409 whole, then send once more.
      forgetRoute(OwnerRouteTable::Drop::Wrong);
      corrected_owner_ = std::string(*replay_to);
      state_ = State::HoldingRouted409;
      return http::FilterStatus::StopAndBuffer;  // the stream gives the whole body at its end
    }
    // The owner's own answer (a 409 of its own, e.g. producer_seq_gap, teaches nothing).
    if (headers.status != 409) learn(owner_);
    config_.routing->count(RouteOutcome::Right);
    recordRoute(callbacks_->streamInfo(), routeOutcomeName(RouteOutcome::Right));
    recordForward(callbacks_->streamInfo(), ForwardOutcome::Forwarded, owner_, {});
    state_ = end_stream ? State::Done : State::RoutedAnswered;
    return http::FilterStatus::Continue;
  }
  if (state_ == State::Resent) {
    // The second and last send's answer goes to the client whatever it is.
    if (resent_to_peer_) {
      sayForwardedTo(headers);
      if (headers.status != 409) learn(owner_);
      recordForward(callbacks_->streamInfo(), ForwardOutcome::Forwarded, owner_, {});
    } else {
      recordForward(callbacks_->streamInfo(), ForwardOutcome::None, {}, {});
    }
    state_ = State::Done;
    return http::FilterStatus::Continue;
  }
  if (state_ == State::Forwarding) {
    // The owner's answer: say where it came from and let it stream through.
    sayForwardedTo(headers);
    owner_answered_ = true;
    // Evidence for owner routing: the owner answered, and not with "not mine".
    if (config_.routing != nullptr && headers.status != 409) learn(owner_);
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
  if (state_ == State::HoldingRouted409) {
    if (!end_stream) return http::FilterStatus::StopAndBuffer;
    return resendAfterWrongOwner();
  }
  if (state_ == State::RoutedAnswered && end_stream) state_ = State::Done;
  if (state_ == State::HoldingLocal409) {
    if (!end_stream) return http::FilterStatus::StopAndBuffer;
    return startForward();
  }
  if (state_ == State::Forwarding && end_stream) completeForward();
  return http::FilterStatus::Continue;
}

void OwnerForwardingFilter::completeForward() {
  owner_stats_->completed->inc();
  recordForward(callbacks_->streamInfo(), ForwardOutcome::Forwarded, owner_, {});
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
  owner_stats_ = &config_.stats->forOwner(worker_, owner_);
  owner_stats_->attempted->inc();
  started_ = std::chrono::steady_clock::now();
  state_ = State::Forwarding;
  if (!callbacks_->replay({target_, forwardedMark()})) {
    skip(SkipReason::BodyOverLimit, owner_);
    state_ = State::Done;
    return http::FilterStatus::Continue;
  }
  return http::FilterStatus::StopAndWait;
}

bool OwnerForwardingFilter::onUpstreamFailure(const upstream::UpstreamFailure& failure) {
  if (state_ == State::Routed || state_ == State::RoutedAnswered) return onRoutedFailure(failure);
  if (state_ == State::Resent) return onResentFailure(failure);
  if (state_ != State::Forwarding) return false;
  state_ = State::Done;
  if (failure.response_started) {
    owner_stats_->cut->inc();  // the stream cuts the client's response
    recordForward(callbacks_->streamInfo(), ForwardOutcome::Cut, owner_, {});
    return false;
  }
  if (!failure.request_bytes_sent) {
    // The owner saw nothing: the client gets the local 409 and may replay it itself.
    owner_stats_->refused->inc();
    if (failure.kind == upstream::UpstreamFailure::Kind::TlsHandshakeFailed) {
      owner_stats_->tls_handshake_failures->inc();
    }
    config_.stats->skipped(SkipReason::Refused);
    recordForward(callbacks_->streamInfo(), ForwardOutcome::Refused, owner_, {});
    callbacks_->continueResponse();
    return true;
  }
  // The owner may have applied it: the client must not replay it as new.
  owner_stats_->failed_after_send->inc();
  answerForwardFailed(owner_, failure);
  return true;
}

void OwnerForwardingFilter::onDestroy() {
  if (state_ == State::Routed || state_ == State::RoutedAnswered ||
      state_ == State::HoldingRouted409 || state_ == State::Resent) {
    recordForward(callbacks_->streamInfo(), ForwardOutcome::Cancelled, owner_, {});
  }
  if (state_ == State::Forwarding) {
    config_.stats->cancelled(owner_answered_).inc();
    recordForward(callbacks_->streamInfo(), ForwardOutcome::Cancelled, owner_, {});
  }
  state_ = State::Done;
}

}  // namespace ferry::filters
