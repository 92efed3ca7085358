#include "integration/streams_emulator/route.h"

#include "integration/streams_emulator/stream_path.h"

namespace ferry::streams {
namespace {

constexpr std::string_view kRawStreamPrefix = "/v1/stream/";
constexpr std::string_view kProductStreamPrefix = "/v1/streams/";

void parseProduct(std::string_view method, std::string_view rest, Route& r) {
  const ProductTarget parts = readProductTarget(rest);
  const std::string_view sub = parts.rest;
  r.name = percentDecode(parts.name);

  if (sub.empty()) {
    r.op = method == "PUT" && !parts.verb ? ProductOp::Create : ProductOp::Other;
  } else if (sub == "records") {
    r.op = method == "POST"  ? ProductOp::Append
           : method == "GET" ? ProductOp::Read
                             : ProductOp::Other;
  } else if (sub == "records:batch" && method == "POST") {
    r.op = ProductOp::Batch;
  } else if (sub == "records:long-poll" && method == "GET") {
    r.op = ProductOp::LongPoll;
  } else if (sub == "records:sse" && method == "GET") {
    r.op = ProductOp::Sse;
  } else {
    r.op = ProductOp::Other;
  }
  switch (r.op) {
    case ProductOp::Create:
      r.tag = RouteTag::ProductCreate;
      break;
    case ProductOp::Append:
      r.tag = RouteTag::ProductAppend;
      break;
    case ProductOp::Batch:
      r.tag = RouteTag::ProductBatch;
      break;
    case ProductOp::LongPoll:
      r.tag = RouteTag::ProductLongPoll;
      break;
    case ProductOp::Sse:
      r.tag = RouteTag::ProductSse;
      break;
    default:
      r.tag = RouteTag::ProductOther;
      break;
  }
}

}  // namespace

const char* routeTagName(RouteTag tag) {
  static const char* kNames[] = {"raw_create",     "raw_append",    "raw_read",
                                 "raw_long_poll",  "raw_sse",       "raw_head",
                                 "raw_delete",     "raw_other",     "product_create",
                                 "product_append", "product_batch", "product_long_poll",
                                 "product_sse",    "product_other", "health",
                                 "debug",          "other"};
  return kNames[static_cast<int>(tag)];
}

std::string percentDecode(std::string_view in) { return decodePercentOnce(in); }

bool parseDecimalU64(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

std::optional<std::string> queryParam(std::string_view query, std::string_view key) {
  size_t start = 0;
  while (start <= query.size()) {
    size_t amp = query.find('&', start);
    if (amp == std::string_view::npos) amp = query.size();
    const std::string_view pair = query.substr(start, amp - start);
    const size_t eq = pair.find('=');
    const std::string_view k = pair.substr(0, eq);
    if (k == key) {
      if (eq == std::string_view::npos) return std::string();
      std::string v(pair.substr(eq + 1));
      for (char& c : v)
        if (c == '+') c = ' ';
      return percentDecode(v);
    }
    start = amp + 1;
  }
  return std::nullopt;
}

Route parseRoute(std::string_view method, std::string_view path, std::string_view query) {
  Route r;
  if (path == "/health") {
    r.surface = Surface::Health;
    r.tag = RouteTag::Health;
  } else if (path == "/readyz") {
    r.surface = Surface::Readyz;
    r.tag = RouteTag::Health;
  } else if (path == "/livez") {
    r.surface = Surface::Livez;
    r.tag = RouteTag::Health;
  } else if (path.substr(0, 10) == "/v1/debug/") {
    r.surface = Surface::Debug;
    r.tag = RouteTag::Debug;
  } else if (path.substr(0, kRawStreamPrefix.size()) == kRawStreamPrefix &&
             path.size() > kRawStreamPrefix.size()) {
    r.surface = Surface::Raw;
    r.name = percentDecode(path.substr(kRawStreamPrefix.size()));
    const auto live = queryParam(query, "live");
    r.live_long_poll = live && *live == "long-poll";
    r.live_sse = live && *live == "sse";
    if (method == "PUT")
      r.tag = RouteTag::RawCreate;
    else if (method == "POST")
      r.tag = RouteTag::RawAppend;
    else if (method == "GET")
      r.tag = r.live_sse         ? RouteTag::RawSse
              : r.live_long_poll ? RouteTag::RawLongPoll
                                 : RouteTag::RawRead;
    else if (method == "HEAD")
      r.tag = RouteTag::RawHead;
    else if (method == "DELETE")
      r.tag = RouteTag::RawDelete;
    else
      r.tag = RouteTag::RawOther;
  } else if (path.substr(0, kProductStreamPrefix.size()) == kProductStreamPrefix &&
             path.size() > kProductStreamPrefix.size()) {
    r.surface = Surface::Product;
    parseProduct(method, path.substr(kProductStreamPrefix.size()), r);
  }
  return r;
}

}  // namespace ferry::streams
