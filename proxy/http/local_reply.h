#pragma once
// Responses ferry writes itself: the JSON error envelope a Streams client already understands,
// {"error":{"code":"<code>","message":"<text>"}}, with Content-Type application/json and
// Cache-Control no-store.

#include <string>
#include <string_view>

#include "proxy/http/header_map.h"

namespace ferry::http {

struct LocalReply {
  ResponseHeaders headers;
  std::string body;
};

LocalReply makeLocalReply(int status, std::string_view code, std::string_view message,
                          const HeaderMap& extra = {});

// The reply as HTTP/1.1 bytes with `connection: close`, for answering where no codec stream
// exists (a malformed request head, a connection over the limit) right before closing.
std::string renderHttp1AndClose(const LocalReply& reply);

}  // namespace ferry::http
