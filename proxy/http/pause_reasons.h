#pragma once
// Why ferry stopped reading one side of a stream, as a set (nghttpx's named pause reasons):
// a side resumes only when no reason is left, so one cause clearing cannot resume a read
// another still holds. Held by the active stream (reading the client's request) and the
// router (reading the upstream's response); each calls its reader's readDisable(true) when
// the first reason comes and readDisable(false) when the last one goes.

#include <cstdint>

namespace ferry::http {

enum class PauseReason : uint8_t {
  // Request side: the upstream's write buffer is above its high watermark (the upstream takes
  // the body slowly). ferry_watermark_pauses_total{paused="downstream_read"}.
  UpstreamWriteBufferFull = 1 << 0,
  // Request side: the request waits for its connection's fair share
  // (limits.max_active_requests_per_connection). ferry_connection_share_waits_total.
  ConnectionShare = 1 << 1,
  // Response side: the client's write buffer is above its high watermark (the client reads
  // slowly). ferry_watermark_pauses_total{paused="upstream_read"}.
  DownstreamWriteBufferFull = 1 << 2,
};

class PauseReasons {
 public:
  // Adds `reason`; true when it is the first one (the side must pause now).
  bool add(PauseReason reason) {
    const bool was_paused = paused();
    bits_ |= bit(reason);
    return !was_paused;
  }
  // Removes `reason`; true when it was the last one (the side may resume now).
  bool remove(PauseReason reason) {
    if (!has(reason)) return false;
    bits_ &= static_cast<uint8_t>(~bit(reason));
    return !paused();
  }
  // Removes every reason; true when there was one (the side may resume now).
  bool clear() {
    const bool was_paused = paused();
    bits_ = 0;
    return was_paused;
  }
  bool has(PauseReason reason) const { return (bits_ & bit(reason)) != 0; }
  bool paused() const { return bits_ != 0; }

 private:
  static uint8_t bit(PauseReason reason) { return static_cast<uint8_t>(reason); }
  uint8_t bits_ = 0;
};

}  // namespace ferry::http
