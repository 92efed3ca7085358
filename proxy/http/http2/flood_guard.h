#pragma once
// Counts what a client makes the server do for nothing, to spot the rapid-reset attack
// (CVE-2023-44487): open a stream, reset it at once, repeat. Each such stream costs ferry a
// request head conversion and an upstream request started, while the client never waits for
// an answer and never hits SETTINGS_MAX_CONCURRENT_STREAMS. Owned by the server codec, which
// reports each stream opened and each client RST_STREAM.
//
// The rule is modelled on Envoy's premature-reset check (once enough streams were opened, more
// than half of them reset prematurely closes the connection). Envoy calls a reset premature
// when it comes within a second of the stream's start; here it is one that comes before the
// response head went out, which needs no clock and is exactly the work wasted. A browser that
// cancels a few fetches stays far below; an attacker must let at least every other stream run
// to its response, which the concurrency limit then bounds. nghttp2's own token bucket on
// incoming RST_STREAM (1000 burst, 33/s) stays on as a second line.

#include <cstdint>

namespace ferry::http::http2 {

class FloodGuard {
 public:
  explicit FloodGuard(uint32_t min_streams) : min_streams_(min_streams) {}

  void onStreamOpened() { ++opened_; }
  // The client reset a stream; `premature` = before its response head was encoded.
  void onClientReset(bool premature) {
    ++client_resets_;
    if (premature) ++premature_resets_;
  }
  // True once the connection should be closed with ENHANCE_YOUR_CALM.
  bool flooded() const;

  uint64_t opened() const { return opened_; }
  uint64_t prematureResets() const { return premature_resets_; }
  uint64_t clientResets() const { return client_resets_; }

 private:
  const uint32_t min_streams_;
  uint64_t opened_ = 0;
  uint64_t premature_resets_ = 0;
  uint64_t client_resets_ = 0;
};

}  // namespace ferry::http::http2
