#include "proxy/http/replay_buffer.h"

namespace ferry::http {

void ReplayBuffer::keep(Buffer& data) {
  if (overflowed_ || data.empty()) return;
  if (body_.length() + data.length() > limit_) {
    overflowed_ = true;
    stats_.replay_buffer_overflows.inc();
    clear();
    return;
  }
  // References to the chains `data` holds: the bytes live once, however many keep them.
  if (!body_.addReference(data)) body_.copyFrom(data);
  stats_.replay_bytes_held.add(static_cast<int64_t>(data.length()));
}

bool ReplayBuffer::copyTo(Buffer& out) const {
  if (overflowed_) return false;
  out.copyFrom(body_);
  return true;
}

void ReplayBuffer::clear() {
  stats_.replay_bytes_held.sub(static_cast<int64_t>(body_.length()));
  body_.clear();
}

}  // namespace ferry::http
