#include "proxy/upstream/upstream_target.h"

namespace ferry::upstream {

std::string_view failureKindName(UpstreamFailure::Kind kind) {
  switch (kind) {
    case UpstreamFailure::Kind::ConnectFailed:
      return "connect_failed";
    case UpstreamFailure::Kind::TlsHandshakeFailed:
      return "tls_handshake_failed";
    case UpstreamFailure::Kind::ConnectTimeout:
      return "connect_timeout";
    case UpstreamFailure::Kind::Unsupported:
      return "unsupported";
    case UpstreamFailure::Kind::Overflow:
      return "overflow";
    case UpstreamFailure::Kind::Reset:
      return "reset";
    case UpstreamFailure::Kind::ProtocolError:
      return "protocol_error";
    case UpstreamFailure::Kind::ResponseHeadTimeout:
      return "response_head_timeout";
    case UpstreamFailure::Kind::StreamRefused:
      return "stream_refused";
  }
  return "unknown";
}

}  // namespace ferry::upstream
