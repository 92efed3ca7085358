#pragma once
// The request body a stream passed to its terminal filter, kept for a replay (filter.h,
// StreamFilterCallbacks::replay): shared with the buffers sent upstream (references to the
// same chains, not copies), up to the replay limit (`limits.replay_buffer_bytes`). Past the
// limit what was kept is dropped and the request is no longer replayable. The bytes held are
// the gauge ferry_replay_held_bytes; an overflow counts ferry_replay_buffer_overflows_total.
//
// Owned by the ActiveStream: keep() as body goes to the terminal filter, copyTo() for a replay
// (and for a pool that sends the request again, upstream::RequestSource), clear() when the
// stream ends (the destructor clears too).

#include <cstdint>

#include "proxy/buffer/buffer.h"
#include "proxy/stats/proxy_stats.h"

namespace ferry::http {

class ReplayBuffer {
 public:
  ReplayBuffer(uint32_t limit, stats::ProxyStats& stats) : limit_(limit), stats_(stats) {}
  ~ReplayBuffer() { clear(); }
  ReplayBuffer(const ReplayBuffer&) = delete;
  ReplayBuffer& operator=(const ReplayBuffer&) = delete;

  // `data` is about to go upstream: keep it (shared), unless that passes the limit.
  void keep(Buffer& data);
  // True while every byte given to keep() is still held.
  bool replayable() const { return !overflowed_; }
  // Appends a copy of the kept body (shares the chains) to `out`; false when not replayable.
  bool copyTo(Buffer& out) const;
  // Lets go of the kept body (the gauge goes back down).
  void clear();

 private:
  const uint32_t limit_;
  stats::ProxyStats& stats_;
  Buffer body_;
  bool overflowed_ = false;
};

}  // namespace ferry::http
