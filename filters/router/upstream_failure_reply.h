#pragma once
// The router's failure policy: what the client gets when an upstream attempt failed before the
// response started and no filter claimed it (http::TerminalFilterCallbacks::onUpstreamFailure
// returned false), or when a filter that claimed one asks for it
// (http::StreamFilterCallbacks::sendUpstreamFailureReply: owner forwarding's resend to the local
// instance). Called by the RouterFilter; answers through the stream's sendLocalReply.
//   - ResponseHeadTimeout: 504 upstream_response_timeout (sent whole, may have been applied);
//   - Reset / ProtocolError after a request byte was sent: 502 upstream_outcome_unknown, no
//     Retry-After (it may have been applied), counted in ferry_upstream_unknown_outcome_total;
//   - anything else (nothing reached the upstream): 503 upstream_unavailable, Retry-After: 1.

#include "filters/router/router_stats.h"
#include "proxy/http/filter.h"

namespace ferry::filters {

void answerUpstreamFailure(http::StreamFilterCallbacks& stream,
                           const upstream::UpstreamFailure& failure, const RouterStats& stats);

}  // namespace ferry::filters
