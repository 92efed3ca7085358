#pragma once
// How both HTTP/2 codecs (Http2ServerCodec, Http2ClientCodec) are entered and left. Every entry
// from outside (a call from the core or a user, a read callback, a timer) holds an EntryScope: it
// counts the nesting in the codec's depth_ and, when the outermost entry ends, writes the
// frames nghttp2 queued meanwhile and delivers the events that writing caused. Each codec
// names it `Scope`, befriends it, and routes its Dispatcher flushNow() override and its
// writeAndDeliver() through the static members below.
//
// `Codec` has the members: int depth_; bool dispatching_ (inside its own connection's read
// callback), failed_, flush_queued_; Dispatcher* dispatcher_; void writeAndDeliver() (the
// codec's own end of a write: runs writeRounds() then its clean-up); void writeFrames()
// (nghttp2_session_send unless paused); bool deliverEvents() (true when it told anyone).

namespace ferry::http::http2 {

template <class Codec>
class EntryScope {
 public:
  explicit EntryScope(Codec& codec) : codec_(codec) { ++codec.depth_; }
  ~EntryScope() { leave(codec_); }
  EntryScope(const EntryScope&) = delete;
  EntryScope& operator=(const EntryScope&) = delete;

  // The end of an entry. Only the outermost one writes. An entry from outside this
  // connection's read callback (the core answering during another connection's read, a user
  // encoding a request while its client's connection is read) queues a flush instead, so that
  // whatever else is encoded during that callback goes out in the same write (flushNow()).
  static void leave(Codec& codec) {
    if (codec.depth_ > 1) {
      --codec.depth_;
      return;
    }
    if (!codec.dispatching_ && !codec.failed_ && codec.dispatcher_ != nullptr) {
      if (codec.flush_queued_ || codec.dispatcher_->queueFlush(codec)) {
        codec.flush_queued_ = true;
        --codec.depth_;
        return;
      }
    }
    codec.writeAndDeliver();
    --codec.depth_;
  }

  // The flush leave() queued, run by the Dispatcher at the end of the read callback (the
  // codecs' flushNow() override).
  static void flushNow(Codec& codec) {
    codec.flush_queued_ = false;
    ++codec.depth_;
    codec.writeAndDeliver();
    --codec.depth_;
  }

  // Writes what was queued, then tells the core / users what the writing changed (resets,
  // sent requests, drained streams); what they do then may queue more. Bounded, so a peer
  // of the codec that keeps answering cannot spin here: what is left waits for the next entry.
  static void writeRounds(Codec& codec) {
    for (int round = 0; round < 16; ++round) {
      codec.writeFrames();
      if (!codec.deliverEvents()) break;
    }
  }

 private:
  Codec& codec_;
};

}  // namespace ferry::http::http2
