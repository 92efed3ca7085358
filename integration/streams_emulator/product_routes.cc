// The product surface /v1/streams/{name}...: create, records, records:batch, records
// (read), records:long-poll, records:sse. Product streams are JSON streams in the same store
// as raw streams. Answers carry Cache-Control: no-store; errors the product envelope.
#include "integration/streams_emulator/emulator.h"
#include "integration/streams_emulator/json_text.h"

namespace ferry::streams {
namespace {

// The read position of a product read: ?cursor= (or ?offset=), default the start.
std::optional<uint64_t> productPosition(const HttpRequest& request, const Stream& stream) {
  auto text = queryParam(request.query(), "cursor");
  if (!text) text = queryParam(request.query(), "offset");
  return parseOffset(text ? *text : "-1", stream.tail());
}

}  // namespace

void Emulator::handleProduct(ServerConnection& conn, HttpRequest& request, const Route& route) {
  if (route.op == ProductOp::Create) {
    productCreate(conn, request, route);
    return;
  }
  if (route.op == ProductOp::Append) {
    productAppend(conn, request, route, JsonBody::SingleRecord);
    return;
  }
  if (route.op == ProductOp::Batch) {
    productAppend(conn, request, route, JsonBody::ArrayRequired);
    return;
  }
  if (route.op == ProductOp::Other) {
    replyError(conn, 404, "not_found", "no such product route in the emulator", true);
    return;
  }
  Stream* stream = store_.find(route.name);
  if (stream == nullptr) {
    replyNotFound(conn, route.name, true);
    return;
  }
  const auto position = productPosition(request, *stream);
  if (!position) {
    replyError(conn, 400, "bad_cursor", "cursor is malformed or beyond the tail", true);
    return;
  }
  if (route.op == ProductOp::LongPoll) {
    startLongPoll(conn, request, route, *stream, *position, true);
  } else if (route.op == ProductOp::Sse) {
    startSse(conn, request, route, *stream, *position, true);
  } else {
    answerLongPoll(conn, *stream, *position, true);  // a plain read has the same shape
  }
}

void Emulator::productCreate(ServerConnection& conn, HttpRequest& request, const Route& route) {
  auto [stream, created] = store_.create(route.name, "application/json");
  if (stream == nullptr) {
    replyError(conn, 409, "stream_conflict", "a non-JSON stream of that name exists", true);
    return;
  }
  std::string body = "{\"name\":";
  appendJsonString(body, route.name);
  body.append(created ? ",\"created\":true}" : ",\"created\":false}");
  conn.sendResponse(created ? 201 : 200,
                    {{"content-type", "application/json"}, {"cache-control", "no-store"}}, body);
}

void Emulator::productAppend(ServerConnection& conn, HttpRequest& request, const Route& route,
                             JsonBody mode) {
  Stream* stream = store_.find(route.name);
  if (stream == nullptr) {
    replyNotFound(conn, route.name, true);
    return;
  }
  ProducerRef producer;
  bool has_producer = false;
  if (!readProducer(conn, request, true, producer, has_producer)) return;
  const AppendResult r =
      store_.append(route.name, *stream, request.body, has_producer ? &producer : nullptr,
                    request.header("streams-forwarded"), mode);
  if (replyAppendRefused(conn, r, producer, /*product=*/true)) return;
  const bool duplicate = r.outcome == AppendOutcome::Duplicate;
  if (!duplicate) {
    notifyAppended(route.name, *stream);
    if (knobs_.append_timeout) {
      replyError(conn, 408, "append_timeout", "append outcome unknown", true);
      return;
    }
  }
  std::string body = "{\"cursor\":\"";
  body.append(formatOffset(r.next_offset));
  body.append("\",\"count\":");
  body.append(std::to_string(duplicate ? 0 : r.count));
  body.append(duplicate ? ",\"duplicate\":true" : ",\"duplicate\":false");
  body.append(",\"sealed\":false}");
  conn.sendResponse(200, {{"content-type", "application/json"}, {"cache-control", "no-store"}},
                    body);
}

}  // namespace ferry::streams
