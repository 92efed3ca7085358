#pragma once
// Owner forwarding (docs/forwarding.md). Response-driven: it watches the local
// instance's answer; on a 409 with a valid Streams-Replay-To naming a known peer that is not
// this instance, for an unmarked, replayable data-plane request, it asks its stream to send
// the request once to the owner, marked Streams-Forwarded, and lets the owner's answer through
// with Streams-Forwarded-To. Failures: nothing sent -> the local 409 unchanged; something
// sent -> 503 forward_failed, Retry-After: 1; owner fails mid-body -> the stream cuts.
// The stream keeps and replays the body; this filter only decides.
//
// Owner routing (config.routing set; docs/forwarding.md "Owner routing"): a forward that the
// owner answered with anything but a 409 teaches this worker's table stream -> owner; a later
// unmarked data-plane request for that stream goes straight to that owner (replay() from
// onRequestHeaders: the first attempt goes there), marked, and the local instance never sees it.
// The owner's 409 naming another instance drops the entry and sends the request once more (to the
// local instance, or to the named owner); an owner that saw nothing drops the entry and the request
// takes the local path as without routing; an owner that failed after a byte gets 503
// forward_failed, as any forward.
//
// What it did goes to the access log through the stream's info map (forward_log.h).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "filters/owner_forwarding/owner_forwarding_stats.h"
#include "filters/owner_forwarding/owner_routing.h"
#include "proxy/http/filter.h"
#include "proxy/peers/peer_table_provider.h"

namespace ferry::filters {

// Shared, immutable; one per process.
struct OwnerForwardingConfig {
  std::string instance_name;        // this instance's marker
  std::vector<std::string> routes;  // data-plane path prefixes
  peers::PeerTableProvider* peers = nullptr;
  OwnerForwardingStats* stats = nullptr;
  const OwnerRouting* routing = nullptr;  // null: owner routing off

  // Rule 1: data-plane routes only; never health, operator, debug or internal routes.
  bool isDataPlane(const http::RequestHeaders& request) const;
};

class OwnerForwardingFilter : public http::StreamFilter {
 public:
  // `worker`: the context of the stream's worker (its peer table snapshot, per-owner counters
  // and route table); outlives the filter.
  OwnerForwardingFilter(const OwnerForwardingConfig& config, event::WorkerContext& worker)
      : config_(config), worker_(worker) {}

  http::FilterStatus onRequestHeaders(http::RequestHeaders& headers, bool end_stream) override;
  http::FilterStatus onResponseHeaders(http::ResponseHeaders& headers, bool end_stream) override;
  http::FilterStatus onResponseBody(Buffer& data, bool end_stream) override;
  bool onUpstreamFailure(const upstream::UpstreamFailure& failure) override;
  void onDestroy() override;

 private:
  // Routed: the first attempt went to a learned owner; RoutedAnswered: its answer streams to the
  // client; HoldingRouted409: it answered 409 naming another owner (held until its end);
  // Resent: the second (last) send is under way or answering.
  enum class State {
    Watching,
    HoldingLocal409,
    Forwarding,
    Done,
    Routed,
    RoutedAnswered,
    HoldingRouted409,
    Resent,
  };
  // Rules 2-5 for a 409: the owner to forward to, or why not.
  bool decide(const http::ResponseHeaders& response);
  // Counts a skip and tells the access log why.
  void skip(SkipReason reason, std::string_view owner);
  http::FilterStatus startForward();
  void completeForward();
  // Owner routing.
  void routeIfLearned();
  void learn(const std::string& owner);
  void forgetRoute(OwnerRouteTable::Drop why);
  http::FilterStatus resendAfterWrongOwner();
  bool onRoutedFailure(const upstream::UpstreamFailure& failure);
  bool onResentFailure(const upstream::UpstreamFailure& failure);
  void answerForwardFailed(const std::string& owner, const upstream::UpstreamFailure& failure);
  // The fields every forward and routed request carries (Streams-Forwarded: this instance).
  http::HeaderMap forwardedMark() const;
  // Streams-Forwarded-To: owner_ on the owner's answer.
  void sayForwardedTo(http::ResponseHeaders& headers) const;

  const OwnerForwardingConfig& config_;
  event::WorkerContext& worker_;
  State state_ = State::Watching;
  bool marked_ = false;
  bool owner_answered_ = false;  // the owner's response head went to the client
  bool data_plane_ = false;
  std::string owner_;
  upstream::UpstreamTarget target_;
  OwnerStats* owner_stats_ = nullptr;
  std::chrono::steady_clock::time_point started_;
  // Owner routing: the request's stream (set when routing is on, for an unmarked data-plane
  // request), the owner its 409 named, and whether the second send went to that owner.
  std::optional<std::string> key_;
  std::string corrected_owner_;
  bool resent_to_peer_ = false;
};

class OwnerForwardingFilterFactory : public http::FilterFactory {
 public:
  explicit OwnerForwardingFilterFactory(OwnerForwardingConfig config)
      : config_(std::move(config)) {}
  http::StreamFilterPtr createFilter(event::WorkerContext& worker) const override {
    return std::make_unique<OwnerForwardingFilter>(config_, worker);
  }

 private:
  OwnerForwardingConfig config_;
};

}  // namespace ferry::filters
