#pragma once
// Cuts a Streams SSE feed's response body (docs/streams-instance.md, "Live feeds") into the
// units a client may be given without breaking the feed's one invariant: it receives exactly
// what a direct read from its start offset gives, so a feed resumed from the last delivered
// offset continues it with no gap and no event twice (docs/live-feeds.md).
//
// A unit is whole events only, never part of one:
// - a control frame (`event: control`, `data:{"streamNextOffset":..,"streamCursor":..}`)
//   together with every event held before it: a data event reaches the client only with the
//   control frame that gives its end offset (the pair is held until the frame is complete);
// - a comment (keep-alive) or an empty block when nothing is held (held ones wait, in order).
// Bytes are passed on verbatim (the client sees the upstream's framing byte for byte).
//
// Where it sits: owned by the live-feeds filter of one client stream (one per feed), fed the
// upstream body of each attempt in order; its delivered() position is where a resumed read
// starts. Line ends are LF, CRLF or CR (the SSE format, WHATWG HTML §9.2.6). Not thread-safe;
// one worker.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/common/status.h"

namespace ferry::filters {

// Where a feed stands for a reader: the last delivered control frame's fields.
struct FeedPosition {
  std::string next_offset;  // streamNextOffset: where a read that continues this one starts
  std::string cursor;       // streamCursor (empty when the frame had none)
  bool operator==(const FeedPosition& o) const {
    return next_offset == o.next_offset && cursor == o.cursor;
  }
};

class SseEventFramer {
 public:
  // Takes the next upstream body bytes and appends to `out` every unit that became whole.
  // A control frame whose data is not a JSON object with a string `streamNextOffset` is a
  // protocol error: nothing of it (nor what it would release) is appended, and the framer
  // stays failed (every later push returns the same error): the feed cannot be resumed.
  Status push(std::string_view bytes, std::string& out);

  // The position of the last control frame appended to an `out` (none before the first).
  const std::optional<FeedPosition>& delivered() const { return delivered_; }
  // The last delivered control frame's bytes, verbatim: what a read starting at delivered()
  // begins with. Empty before the first (and after startAt(), until the next).
  const std::string& deliveredFrame() const { return delivered_frame_; }
  // The last delivered control frame carried `"streamClosed":true`: the stream's own end.
  bool closed() const { return closed_; }
  // Bytes taken but not yet delivered: a partial event, and whole events waiting for their
  // control frame.
  uint64_t heldBytes() const { return pending_.size(); }
  uint64_t deliveredBytes() const { return delivered_bytes_; }

  // A feed read from `position` on (a reader that continues another's feed): delivered() is
  // `position` until the next control frame. Before the first push only.
  void startAt(FeedPosition position) { delivered_ = std::move(position); }

  // The attempt that fed the framer ended (or a new one starts): what is held is dropped (a
  // read resumed at delivered() gives those events again, whole). Returns the bytes dropped.
  uint64_t dropHeld();

 private:
  enum class BlockKind { Comment, Data, Control };
  // The block ending at `end` (just past its blank line) is whole.
  Status onBlock(size_t end, std::string& out);
  void onLine(std::string_view line);
  void resetBlock();

  std::string pending_;    // bytes taken, not delivered: held blocks, then the open block
  size_t held_end_ = 0;    // pending_[0, held_end_): whole blocks held for a control frame
  size_t scan_ = 0;        // where the next unread line of the open block starts
  bool after_cr_ = false;  // the last byte read ended a line with CR (an LF may follow)
  // The open block's fields so far.
  bool block_has_field_ = false;  // a line that is not a comment
  std::string block_event_;
  std::string block_data_;
  bool block_has_data_ = false;  // a `data` line (block_data_ joins them with LF)

  std::optional<FeedPosition> delivered_;
  std::string delivered_frame_;
  bool closed_ = false;
  uint64_t delivered_bytes_ = 0;
  Status failed_;
};

}  // namespace ferry::filters
