#pragma once
// Request identity and forwarding fields, applied by the active stream to every request head
// before the filters see it (so the local instance and any owner get the same head), and to
// every response head the client gets (upstream answers and ferry's own replies alike).
//
// - x-request-id: a valid one from the client (1..kMaxRequestIdBytes visible ASCII) is kept;
//   anything else is replaced by a generated one. The response carries the same id.
// - traceparent / tracestate (W3C Trace Context): not touched; they pass as sent.
// - X-Forwarded-For / X-Forwarded-Proto: with `x_forwarded`, the client's address is appended
//   to XFF and XFP says the scheme the client used. Only the last `trusted_hops` XFF entries
//   (those the trusted proxies in front of ferry appended) are kept, and XFP only when a
//   trusted hop exists; with 0 (the default) whatever the client sent is replaced, since a
//   client can write anything there.

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/http/header_map.h"

namespace ferry::http {

inline constexpr size_t kMaxRequestIdBytes = 200;
inline constexpr std::string_view kRequestIdHeader = "x-request-id";

struct RequestIdentityConfig {
  bool x_forwarded = true;
  uint32_t trusted_hops = 0;
};

// 1..kMaxRequestIdBytes bytes, each visible ASCII (0x21..0x7e).
bool isValidRequestId(std::string_view id);

// 32 lowercase hex digits, unique in the process and, with high probability, across processes:
// a per-thread random 64-bit prefix and a per-thread counter. No lock, no system call after a
// thread's first id.
std::string generateRequestId();

// The address part of "ip:port" or "[ip6]:port" ("ip6" without brackets, as XFF carries it).
std::string_view addressWithoutPort(std::string_view address);

// Sets x-request-id and the X-Forwarded-* fields on a request head from the client.
// `client_address` as StreamOwner::downstreamAddress() gives it; `tls`: the client used TLS.
void applyRequestIdentity(RequestHeaders& request, const RequestIdentityConfig& config,
                          std::string_view client_address, bool tls);

}  // namespace ferry::http
