// Test knobs and introspection under /v1/debug/ (X-Control-Token required):
//   POST /v1/debug/control           set knobs / members (see knobs.h)
//   GET  /v1/debug/control           the current knobs and members
//   GET  /v1/debug/applied?stream=N  every append applied to N, in order
//   GET  /v1/debug/requests          responses by route and status
//   GET  /v1/debug/stream?stream=N   N's data and producer state (JSON, stream_transfer.cc)
//   PUT  /v1/debug/stream?stream=N   replaces N with such a JSON (a hand-over's copy)
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "integration/streams_emulator/emulator.h"

namespace ferry::streams {

void Emulator::handleDebug(ServerConnection& conn, HttpRequest& request) {
  const std::string* token = request.header("x-control-token");
  if (options_.control_token.empty() || token == nullptr || *token != options_.control_token) {
    replyError(conn, 403, "forbidden", "missing or wrong X-Control-Token", false);
    return;
  }
  const std::string_view path = request.path();
  if (path == "/v1/debug/control" && request.method == "POST") {
    auto update = parseControl(request.body);
    if (!update.isOk()) {
      replyError(conn, 400, "bad_request", update.status().message(), false);
      return;
    }
    knobs_ = update->knobs;
    // Answer first: a member change may end SSE feeds, which is unrelated to this request.
    const std::string answer =
        describeControl(knobs_, update->members ? *update->members : members_);
    conn.sendResponse(200, {{"content-type", "application/json"}}, answer);
    if (update->members) applyMembers(std::move(*update->members), update->handover_ms);
    return;
  }
  if (path == "/v1/debug/control" && request.method == "GET") {
    conn.sendResponse(200, {{"content-type", "application/json"}},
                      describeControl(knobs_, members_));
    return;
  }
  if (path == "/v1/debug/applied" && request.method == "GET") {
    const auto stream = queryParam(request.query(), "stream");
    if (!stream) {
      replyError(conn, 400, "bad_request", "stream query parameter required", false);
      return;
    }
    conn.sendResponse(200, {{"content-type", "application/json"}}, appliedJson(*stream));
    return;
  }
  if (path == "/v1/debug/stream" && (request.method == "GET" || request.method == "PUT")) {
    const auto name = queryParam(request.query(), "stream");
    if (!name) {
      replyError(conn, 400, "bad_request", "stream query parameter required", false);
      return;
    }
    if (request.method == "GET") {
      const Stream* stream = store_.find(*name);
      if (stream == nullptr) {
        replyError(conn, 404, "stream_not_found", "no such stream", false);
        return;
      }
      conn.sendResponse(200, {{"content-type", "application/json"}}, exportStreamJson(*stream));
      return;
    }
    Stream stream;
    if (!importStreamJson(request.body, stream)) {
      replyError(conn, 400, "bad_request", "not a stream export", false);
      return;
    }
    store_.put(*name, std::move(stream));
    conn.sendResponse(204, {}, "");
    return;
  }
  if (path == "/v1/debug/requests" && request.method == "GET") {
    conn.sendResponse(200, {{"content-type", "application/json"}}, requestsJson());
    return;
  }
  replyError(conn, 404, "not_found", "no such debug route", false);
}

std::string Emulator::appliedJson(std::string_view name) const {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartArray();
  if (const auto* log = store_.applied(name)) {
    for (const AppliedAppend& a : *log) {
      w.StartObject();
      w.Key("offset");
      w.String(formatOffset(a.offset).c_str());
      w.Key("next_offset");
      w.String(formatOffset(a.next_offset).c_str());
      w.Key("bytes");
      w.Uint64(a.bytes);
      w.Key("body_sha256");
      w.String(a.body_sha256.c_str());
      w.Key("producer");
      if (a.producer) {
        w.StartObject();
        w.Key("id");
        w.String(a.producer->id.c_str());
        w.Key("epoch");
        w.Uint64(a.producer->epoch);
        w.Key("seq");
        w.Uint64(a.producer->seq);
        w.EndObject();
      } else {
        w.Null();
      }
      w.Key("forwarded_by");
      if (a.forwarded_by)
        w.String(a.forwarded_by->c_str());
      else
        w.Null();
      w.EndObject();
    }
  }
  w.EndArray();
  return std::string(sb.GetString(), sb.GetSize());
}

std::string Emulator::requestsJson() const {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  auto writeCounts = [&](const std::array<std::map<int, uint64_t>, kRoutes>& counts) {
    uint64_t total = 0;
    w.StartObject();
    for (size_t i = 0; i < kRoutes; ++i) {
      if (counts[i].empty()) continue;
      w.Key(routeTagName(static_cast<RouteTag>(i)));
      w.StartObject();
      for (const auto& [status, n] : counts[i]) {
        w.Key(std::to_string(status).c_str());
        w.Uint64(n);
        total += n;
      }
      w.EndObject();
    }
    w.EndObject();
    return total;
  };
  w.StartObject();
  w.Key("routes");
  const uint64_t total = writeCounts(counts_);
  w.Key("forwarded_routes");
  const uint64_t forwarded = writeCounts(forwarded_counts_);
  w.Key("total");
  w.Uint64(total);
  w.Key("forwarded");
  w.Uint64(forwarded);
  w.Key("connections_accepted");
  w.Uint64(connections_accepted_);
  w.Key("connections_refused");
  w.Uint64(connections_refused_);
  w.Key("tls_connections_accepted");
  w.Uint64(tls_connections_accepted_);
  uint64_t sse_live = 0;
  for (const auto& [name, conns] : subscribers_) {
    for (const ServerConnection* c : conns) {
      sse_live += static_cast<const Exchange*>(c->context())->sse ? 1 : 0;
    }
  }
  w.Key("sse_feeds_live");
  w.Uint64(sse_live);
  w.Key("sse_feeds_started");
  w.Uint64(sse_feeds_started_);
  w.Key("sse_event_bytes");
  w.Uint64(sse_event_bytes_);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

}  // namespace ferry::streams
