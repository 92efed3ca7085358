#pragma once
// Request routing of the emulator: which surface a request path belongs to, the stream name
// it addresses, and query-string helpers. Pure functions, called once per request head.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::streams {

enum class Surface { Health, Readyz, Livez, Debug, Raw, Product, Other };

// Product sub-routes the emulator implements (everything else is ProductOther).
enum class ProductOp { Create, Append, Batch, LongPoll, Sse, Read, Other };

// Per-route labels for /v1/debug/requests.
enum class RouteTag {
  RawCreate,
  RawAppend,
  RawRead,
  RawLongPoll,
  RawSse,
  RawHead,
  RawDelete,
  RawOther,
  ProductCreate,
  ProductAppend,
  ProductBatch,
  ProductLongPoll,
  ProductSse,
  ProductOther,
  Health,
  Debug,
  Other,
  Count
};
const char* routeTagName(RouteTag tag);

struct Route {
  Surface surface = Surface::Other;
  std::string name;  // stream name, percent-decoded once (Raw and Product)
  ProductOp op = ProductOp::Other;
  RouteTag tag = RouteTag::Other;
  bool live_long_poll = false;
  bool live_sse = false;
};

// `query` is the part after '?' (may be empty).
Route parseRoute(std::string_view method, std::string_view path, std::string_view query);

std::string percentDecode(std::string_view in);

// A plain decimal uint64 (digits only, at most 19 of them): the producer headers' epoch and
// seq, and the journal's numbers. False for anything else.
bool parseDecimalU64(std::string_view s, uint64_t& out);

// The percent-decoded value of `key` in `query`, or nullopt when absent.
std::optional<std::string> queryParam(std::string_view query, std::string_view key);

}  // namespace ferry::streams
