#pragma once
// What owner forwarding tells the access log (docs/access-log.md): the fields it writes into
// the stream's info map (access_log/stream_info.h) and how a record without them renders.
// Called by the owner-forwarding filter as it decides (the last write wins); the fields are
// declared once at start by the composition root (app/filter_setup.cc), also when
// forwarding is off, so every record has "forward" and "owner".

#include <string_view>

#include "proxy/access_log/access_log.h"
#include "proxy/access_log/stream_info.h"

namespace ferry::filters {

// What owner forwarding did with the request ("forward").
enum class ForwardOutcome {
  None,       // no forward was considered (no 409 with Streams-Replay-To)
  Forwarded,  // the owner answered, and its answer reached the client
  Skipped,    // a 409 named an owner but the rules said no (see forward_reason)
  Refused,    // the owner could not be reached before a byte was sent: the local 409 went out
  Failed,     // the owner failed after the request was sent: 503 forward_failed
  Cut,        // the owner failed mid-response: the client's response was cut
  Cancelled,  // the client left while the forward was in flight
};
std::string_view forwardOutcomeName(ForwardOutcome outcome);

// "forward" (default "none"), "forward_reason" (only when skipped), "owner" (null: none),
// "route" (only for a request owner routing sent straight to a learned owner).
access_log::InfoFields forwardLogFields();

// The outcome, the owner it was for (empty: none) and, when skipped, why (a static name).
void recordForward(access_log::StreamInfo& info, ForwardOutcome outcome, std::string_view owner,
                   std::string_view reason = {});
// Owner routing's outcome (routeOutcomeName).
void recordRoute(access_log::StreamInfo& info, std::string_view outcome);

}  // namespace ferry::filters
