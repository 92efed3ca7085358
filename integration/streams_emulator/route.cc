#include "integration/streams_emulator/route.h"

namespace ferry::streams {
namespace {

constexpr std::string_view kRawPrefix = "/v1/stream/";
constexpr std::string_view kProductPrefix = "/v1/streams/";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool isProductSegment(std::string_view seg) {
  seg = seg.substr(0, seg.find(':'));
  return seg == "records" || seg == "consumers" || seg == "producers" || seg == "watches" ||
         seg == "forks";
}

void parseProduct(std::string_view method, std::string_view rest, Route& r) {
  // Cut at the first records|consumers|producers|watches|forks segment.
  std::string_view name_part = rest;
  std::string_view sub;
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t slash = rest.find('/', start);
    const std::string_view seg = rest.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (start > 0 && isProductSegment(seg)) {
      name_part = rest.substr(0, start - 1);
      sub = rest.substr(start);
      break;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  // A trailing ":verb" on the name itself is removed (e.g. /v1/streams/orders:seal).
  const size_t last_slash = name_part.rfind('/');
  const size_t colon = name_part.find(':', last_slash == std::string_view::npos ? 0 : last_slash);
  if (colon != std::string_view::npos) name_part = name_part.substr(0, colon);
  r.name = percentDecode(name_part);

  if (sub.empty()) {
    r.op =
        method == "PUT" && colon == std::string_view::npos ? ProductOp::Create : ProductOp::Other;
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

std::string percentDecode(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && i + 2 < in.size()) {
      const int hi = hexValue(in[i + 1]);
      const int lo = hexValue(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(in[i]);
  }
  return out;
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
  } else if (path.substr(0, kRawPrefix.size()) == kRawPrefix && path.size() > kRawPrefix.size()) {
    r.surface = Surface::Raw;
    r.name = percentDecode(path.substr(kRawPrefix.size()));
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
  } else if (path.substr(0, kProductPrefix.size()) == kProductPrefix &&
             path.size() > kProductPrefix.size()) {
    r.surface = Surface::Product;
    parseProduct(method, path.substr(kProductPrefix.size()), r);
  }
  return r;
}

}  // namespace ferry::streams
