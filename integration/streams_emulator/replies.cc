// Error envelopes and the ownership answers (409 not_ring_owner / not_stream_owner, 503
// shard_moving), shaped exactly as a Streams instance sends them.
#include "integration/streams_emulator/emulator.h"
#include "integration/streams_emulator/json_text.h"

namespace ferry::streams {

void Emulator::replyError(ServerConnection& conn, int status, std::string_view code,
                          std::string_view message, bool product,
                          std::span<const HeaderRef> extra) {
  std::string body = "{\"error\":{\"code\":";
  appendJsonString(body, code);
  body.append(",\"message\":");
  appendJsonString(body, message);
  if (product) {
    // Retryable: the conditions a client may simply retry (ownership moves, overload).
    const bool retryable =
        code == "not_stream_owner" || code == "shard_moving" || code == "overloaded";
    body.append(retryable ? ",\"retryable\":true" : ",\"retryable\":false");
  }
  body.append("}}");
  HeaderRef headers[8];
  size_t n = 0;
  headers[n++] = {"content-type", "application/json"};
  if (product) headers[n++] = {"cache-control", "no-store"};
  for (const HeaderRef& h : extra) {
    if (n < std::size(headers)) headers[n++] = h;
  }
  conn.sendResponse(status, std::span<const HeaderRef>(headers, n), body);
}

void Emulator::replyNotOwner(ServerConnection& conn, const OwnerCheck& check, bool product_form) {
  std::string message = "shard ";
  message.append(check.shard).append(" belongs to ").append(check.owner_name);
  const HeaderRef replay[] = {{"streams-replay-to", check.owner_name}};
  replyError(conn, 409, product_form ? "not_stream_owner" : "not_ring_owner", message, product_form,
             replay);
}

void Emulator::replyMoving(ServerConnection& conn, const OwnerCheck& check, bool product_form) {
  std::string message = "shard ";
  message.append(check.shard).append(" is moving to ").append(check.owner_name);
  const HeaderRef retry[] = {{"retry-after", "1"}};
  replyError(conn, 503, "shard_moving", message, product_form, retry);
}

void Emulator::replyNotFound(ServerConnection& conn, std::string_view name, bool product) {
  std::string message = "stream not found: ";
  message.append(name);
  replyError(conn, 404, "stream_not_found", message, product);
}

bool Emulator::replyAppendRefused(ServerConnection& conn, const AppendResult& r,
                                  const ProducerRef& producer, bool product) {
  switch (r.outcome) {
    case AppendOutcome::BadBody:
      replyError(conn, 400, "bad_request", r.error, product);
      return true;
    case AppendOutcome::SeqGap: {
      const std::string expected = std::to_string(r.expected_seq);
      const std::string received = std::to_string(producer.seq);
      const HeaderRef extra[] = {{"producer-expected-seq", expected},
                                 {"producer-received-seq", received}};
      replyError(conn, 409, "producer_seq_gap",
                 "expected seq " + expected + ", received " + received, product, extra);
      return true;
    }
    case AppendOutcome::StaleEpoch: {
      const std::string current = std::to_string(r.expected_seq);
      const HeaderRef extra[] = {{"producer-epoch", current}};
      replyError(conn, 403, "stale_producer_epoch", "producer epoch is stale", product, extra);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace ferry::streams
