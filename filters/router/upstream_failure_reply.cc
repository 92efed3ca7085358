#include "filters/router/upstream_failure_reply.h"

namespace ferry::filters {

void answerUpstreamFailure(http::StreamFilterCallbacks& stream,
                           const upstream::UpstreamFailure& failure, const RouterStats& stats) {
  using Kind = upstream::UpstreamFailure::Kind;
  http::HeaderMap retry_after;
  retry_after.add("retry-after", "1");
  switch (failure.kind) {
    case Kind::ResponseHeadTimeout:
      // The request was sent whole and may have been applied: not a 503 to retry blindly.
      stream.sendLocalReply(504, "upstream_response_timeout",
                            "the upstream did not start its response in time: " + failure.detail,
                            {});
      return;
    case Kind::Reset:
    case Kind::ProtocolError:
      if (failure.request_bytes_sent) {
        stats.upstream_unknown_outcome.inc();
        stream.sendLocalReply(502, "upstream_outcome_unknown",
                              "the upstream connection failed after the request was sent; it may "
                              "have been applied",
                              {});
        return;
      }
      [[fallthrough]];
    default:
      stream.sendLocalReply(503, "upstream_unavailable",
                            "the upstream cannot be reached: " + failure.detail, retry_after);
      return;
  }
}

}  // namespace ferry::filters
