// Waiting reads: long-polls (?live=long-poll, records:long-poll) and SSE feeds (?live=sse,
// records:sse). A waiting connection is registered in subscribers_ under its stream name;
// appends wake it, deletes close it, a timer ends a long-poll (204) or sends an SSE
// keep-alive comment.
#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>

#include "integration/streams_emulator/emulator.h"

namespace ferry::streams {
namespace {

constexpr double kDefaultLongPollSeconds = 3.0;
constexpr double kMaxLongPollSeconds = 25.0;

std::string base64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(n);
  return out;
}

void appendControlFrame(std::string& out, uint64_t tail, bool closed) {
  const std::string next = formatOffset(tail);
  out.append("event: control\ndata:{\"streamNextOffset\":\"");
  out.append(next);
  out.append("\",\"streamCursor\":\"");
  out.append(next);
  out.append(closed ? "\",\"streamClosed\":true}\n\n" : "\",\"upToDate\":true}\n\n");
}

}  // namespace

void Emulator::startLongPoll(ServerConnection& conn, const HttpRequest& request, const Route& route,
                             Stream& stream, uint64_t position, bool product) {
  if (position < stream.tail()) {
    answerLongPoll(conn, stream, position, product);
    return;
  }
  double seconds = kDefaultLongPollSeconds;
  if (const auto t = queryParam(request.query(), "timeout")) {
    char* end = nullptr;
    const double v = std::strtod(t->c_str(), &end);
    if (end != t->c_str() && v >= 0) seconds = v;
  }
  seconds = std::min(seconds, kMaxLongPollSeconds);
  Exchange& ex = exchange(conn);
  ex.sse = false;
  ex.product = product;
  ex.position = position;
  subscribe(conn, route.name);
  conn.setTimer(static_cast<uint64_t>(seconds * 1000), [this, &conn] {
    Exchange& e = exchange(conn);
    const Stream* s = store_.find(e.route.name);
    const uint64_t tail = s ? s->tail() : e.position;
    unsubscribe(conn);
    answerLongPollTimeout(conn, tail, false);
  });
}

void Emulator::answerLongPoll(ServerConnection& conn, const Stream& stream, uint64_t position,
                              bool product) {
  const std::string next = formatOffset(stream.tail());
  if (!product) {
    conn.sendResponse(200,
                      {{"content-type", stream.content_type},
                       {"stream-next-offset", next},
                       {"stream-cursor", next},
                       {"stream-up-to-date", "true"},
                       {"cache-control", "no-store"}},
                      StreamStore::readPage(stream, position));
    return;
  }
  std::string body = "{\"records\":[";
  body.append(StreamStore::joinMessages(stream, position));
  body.append("],\"cursor\":\"").append(next).append("\",\"upToDate\":true}");
  conn.sendResponse(200,
                    {{"content-type", "application/json"},
                     {"stream-next-offset", next},
                     {"cache-control", "no-store"}},
                    body);
}

void Emulator::answerLongPollTimeout(ServerConnection& conn, uint64_t tail, bool closed) {
  const std::string next = formatOffset(tail);
  if (closed) {
    conn.sendResponse(204,
                      {{"stream-next-offset", next},
                       {"stream-up-to-date", "true"},
                       {"stream-cursor", next},
                       {"stream-closed", "true"},
                       {"cache-control", "no-store"}},
                      "");
    return;
  }
  conn.sendResponse(204,
                    {{"stream-next-offset", next},
                     {"stream-up-to-date", "true"},
                     {"stream-cursor", next},
                     {"cache-control", "no-store"}},
                    "");
}

void Emulator::startSse(ServerConnection& conn, const HttpRequest& request, const Route& route,
                        Stream& stream, uint64_t position, bool product) {
  conn.startChunked(200, {{"content-type", "text/event-stream"},
                          {"cache-control", "no-cache"},
                          {"x-accel-buffering", "no"}});
  if (conn.closed()) return;
  Exchange& ex = exchange(conn);
  ex.sse = true;
  ex.product = product;
  ++sse_feeds_started_;
  subscribe(conn, route.name);
  sendSseUpdate(conn, stream, position);
  ex.position = stream.tail();
  armSseKeepAlive(conn);
}

void Emulator::sendSseUpdate(ServerConnection& conn, const Stream& stream, uint64_t from) {
  std::string frames;
  if (from < stream.tail()) {
    frames.append("event: data\ndata:");
    if (stream.json) {
      frames.push_back('[');
      frames.append(StreamStore::joinMessages(stream, from));
      frames.push_back(']');
    } else {
      frames.append(base64(std::string_view(stream.bytes).substr(from)));
    }
    frames.append("\n\n");
  }
  appendControlFrame(frames, stream.tail(), false);
  sse_event_bytes_ += frames.size();
  conn.sendChunk(frames);
}

void Emulator::armSseKeepAlive(ServerConnection& conn) {
  conn.setTimer(options_.sse_keepalive_ms, [this, &conn] {
    conn.sendChunk(": keep-alive\n\n");
    armSseKeepAlive(conn);
  });
}

void Emulator::subscribe(ServerConnection& conn, const std::string& name) {
  subscribers_[name].push_back(&conn);
  exchange(conn).waiting = true;
}

void Emulator::unsubscribe(ServerConnection& conn) {
  Exchange* ex = static_cast<Exchange*>(conn.context());
  if (ex == nullptr || !ex->waiting) return;
  ex->waiting = false;
  auto it = subscribers_.find(ex->route.name);
  if (it == subscribers_.end()) return;
  auto& v = it->second;
  v.erase(std::remove(v.begin(), v.end(), &conn), v.end());
  if (v.empty()) subscribers_.erase(it);
}

void Emulator::notifyAppended(const std::string& name, const Stream& stream) {
  auto it = subscribers_.find(name);
  if (it == subscribers_.end()) return;
  const std::vector<ServerConnection*> waiting = it->second;  // answering edits the list
  for (ServerConnection* c : waiting) {
    Exchange& ex = exchange(*c);
    if (ex.sse) {
      sendSseUpdate(*c, stream, ex.position);
      ex.position = stream.tail();
    } else {
      unsubscribe(*c);
      answerLongPoll(*c, stream, ex.position, ex.product);
    }
  }
}

void Emulator::notifyDeleted(const std::string& name, uint64_t tail) {
  auto it = subscribers_.find(name);
  if (it == subscribers_.end()) return;
  const std::vector<ServerConnection*> waiting = it->second;
  for (ServerConnection* c : waiting) {
    const bool sse = exchange(*c).sse;
    unsubscribe(*c);
    if (sse) {
      std::string frame;
      appendControlFrame(frame, tail, true);
      c->sendChunk(frame);
      c->endChunked();
    } else {
      answerLongPollTimeout(*c, tail, true);
    }
  }
}

void Emulator::endFeedsNoLongerOwned() {
  // When ownership moves, a live feed simply ends; the client resumes from its cursor.
  std::vector<ServerConnection*> ending;
  for (const auto& [name, conns] : subscribers_) {
    if (checkOwner(name).owner) continue;
    for (ServerConnection* c : conns) {
      if (exchange(*c).sse) ending.push_back(c);
    }
  }
  for (ServerConnection* c : ending) {
    unsubscribe(*c);
    c->endChunked();
  }
}

}  // namespace ferry::streams
