// The raw data-plane surface /v1/stream/{name}: create, append, read, head, delete.
#include <cstdlib>

#include "integration/streams_emulator/emulator.h"

namespace ferry::streams {

void Emulator::handleRaw(ServerConnection& conn, HttpRequest& request, const Route& route) {
  switch (route.tag) {
    case RouteTag::RawCreate:
      rawCreate(conn, request, route);
      return;
    case RouteTag::RawAppend:
      rawAppend(conn, request, route);
      return;
    case RouteTag::RawRead:
    case RouteTag::RawLongPoll:
    case RouteTag::RawSse:
      rawRead(conn, request, route);
      return;
    case RouteTag::RawHead:
      rawHead(conn, route);
      return;
    case RouteTag::RawDelete:
      rawDelete(conn, route);
      return;
    default:
      replyError(conn, 405, "method_not_allowed", "method not allowed", false);
      return;
  }
}

void Emulator::rawCreate(ServerConnection& conn, HttpRequest& request, const Route& route) {
  const std::string* ct = request.header("content-type");
  auto [stream, created] = store_.create(route.name, ct ? std::string_view(*ct) : "");
  if (stream == nullptr) {
    replyError(conn, 409, "stream_conflict", "stream exists with a different configuration", false);
    return;
  }
  if (created && !request.body.empty()) {
    const AppendResult r =
        store_.append(route.name, *stream, request.body, nullptr,
                      request.header("streams-forwarded"), JsonBody::ArrayIsBatch);
    if (r.outcome == AppendOutcome::BadBody) {
      store_.remove(route.name);
      replyError(conn, 400, "bad_request", r.error, false);
      return;
    }
  }
  const std::string next = formatOffset(stream->tail());
  if (!created) {
    conn.sendResponse(200, {{"stream-next-offset", next}, {"content-type", stream->content_type}},
                      "");
    return;
  }
  const std::string* host = request.header("host");
  std::string location = "http://";
  location.append(host ? *host : "127.0.0.1").append(request.path());
  conn.sendResponse(201,
                    {{"location", location},
                     {"stream-next-offset", next},
                     {"content-type", stream->content_type}},
                    "");
}

bool Emulator::readProducer(ServerConnection& conn, const HttpRequest& request, bool product,
                            ProducerRef& out, bool& present) {
  const std::string* id = request.header("producer-id");
  const std::string* epoch = request.header("producer-epoch");
  const std::string* seq = request.header("producer-seq");
  const int n = (id != nullptr) + (epoch != nullptr) + (seq != nullptr);
  present = n == 3;
  if (n == 0) return true;
  if (n != 3 || id->empty() || !parseDecimalU64(*epoch, out.epoch) ||
      !parseDecimalU64(*seq, out.seq)) {
    replyError(conn, 400, "bad_request",
               "Producer-Id, Producer-Epoch and Producer-Seq must be sent together "
               "(epoch and seq as non-negative integers)",
               product);
    return false;
  }
  out.id = *id;
  return true;
}

void Emulator::rawAppend(ServerConnection& conn, HttpRequest& request, const Route& route) {
  Stream* stream = store_.find(route.name);
  if (stream == nullptr) {
    replyNotFound(conn, route.name, false);
    return;
  }
  ProducerRef producer;
  bool has_producer = false;
  if (!readProducer(conn, request, false, producer, has_producer)) return;
  const AppendResult r =
      store_.append(route.name, *stream, request.body, has_producer ? &producer : nullptr,
                    request.header("streams-forwarded"), JsonBody::ArrayIsBatch);
  const std::string next = formatOffset(r.next_offset);
  if (replyAppendRefused(conn, r, producer, /*product=*/false)) return;
  switch (r.outcome) {
    case AppendOutcome::Duplicate:
      conn.sendResponse(204, {{"stream-next-offset", next}}, "");
      return;
    default:  // applied (refusals were answered above)
      break;
  }
  notifyAppended(route.name, *stream);
  if (knobs_.append_timeout) {
    replyError(conn, 408, "append_timeout", "append outcome unknown", false);
    return;
  }
  conn.sendResponse(r.outcome == AppendOutcome::AppendedFresh ? 200 : 204,
                    {{"stream-next-offset", next}}, "");
}

void Emulator::rawRead(ServerConnection& conn, HttpRequest& request, const Route& route) {
  Stream* stream = store_.find(route.name);
  if (stream == nullptr) {
    replyNotFound(conn, route.name, false);
    return;
  }
  const auto offset_text = queryParam(request.query(), "offset");
  const auto position = parseOffset(offset_text ? *offset_text : "-1", stream->tail());
  if (!position) {
    replyError(conn, 400, "bad_offset", "offset is malformed or beyond the tail", false);
    return;
  }
  if (route.live_sse) {
    startSse(conn, request, route, *stream, *position, false);
    return;
  }
  if (route.live_long_poll) {
    startLongPoll(conn, request, route, *stream, *position, false);
    return;
  }
  const std::string next = formatOffset(stream->tail());
  conn.sendResponse(200,
                    {{"content-type", stream->content_type},
                     {"stream-next-offset", next},
                     {"stream-up-to-date", "true"}},
                    StreamStore::readPage(*stream, *position));
}

void Emulator::rawHead(ServerConnection& conn, const Route& route) {
  Stream* stream = store_.find(route.name);
  if (stream == nullptr) {
    conn.sendResponse(404, {{"content-type", "application/json"}}, "");
    return;
  }
  const std::string next = formatOffset(stream->tail());
  conn.sendResponse(200,
                    {{"content-type", stream->content_type},
                     {"stream-next-offset", next},
                     {"stream-up-to-date", "true"}},
                    "");
}

void Emulator::rawDelete(ServerConnection& conn, const Route& route) {
  Stream* stream = store_.find(route.name);
  if (stream == nullptr) {
    replyNotFound(conn, route.name, false);
    return;
  }
  const uint64_t tail = stream->tail();
  store_.remove(route.name);
  notifyDeleted(route.name, tail);
  conn.sendResponse(204, std::span<const HeaderRef>(), "");
}

}  // namespace ferry::streams
