#pragma once
// A byte buffer: a thin owner of a libevent evbuffer (chains of blocks, moves without copying).
// Used everywhere bytes travel: codecs read from and write into Buffers, connections hand
// Buffers to codecs, the active stream keeps the replay copy of a request body in one.

#include <event2/buffer.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace ferry {

class Buffer {
 public:
  // Told each time bytes are appended through this Buffer (add, move into it, addReference,
  // copyFrom). A connection's output schedules its write this way: an evbuffer callback would
  // run libevent's callback machinery on every add and every drain, several per request.
  class GrowthWatcher {
   public:
    virtual void onBufferGrew() = 0;

   protected:
    ~GrowthWatcher() = default;
  };

  Buffer();
  // Wraps a buffer owned elsewhere (e.g. a bufferevent's input/output); does not free it.
  static Buffer borrow(evbuffer* raw);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  size_t length() const;
  bool empty() const { return length() == 0; }
  void add(std::string_view bytes);
  void add(const void* data, size_t size);
  // Moves all of `other` to the end of this buffer (no copy); `other` is left empty.
  void move(Buffer& other);
  // Moves the first `size` bytes of `other` to the end of this buffer.
  void move(Buffer& other, size_t size);
  // Appends `other`'s bytes by reference (shared chains, no copy); `other` keeps its bytes.
  // Fails (returns false) when `other` already holds references; then the caller copies.
  bool addReference(Buffer& other);
  // Appends a copy of `other`'s bytes; `other` is unchanged.
  void copyFrom(const Buffer& other);
  void drain(size_t size);
  void clear() { drain(length()); }
  // Makes the first `size` bytes contiguous and returns them (size 0 = all).
  std::string_view linearize(size_t size = 0);
  std::string toString() const;

  // The underlying evbuffer (made now if this Buffer never held anything). Bytes added to it
  // directly are not seen by the GrowthWatcher.
  evbuffer* raw() const { return get(); }

  // One watcher at most (nullptr: none); it stays with this Buffer object, a move takes only
  // the bytes. The watcher outlives the watch or ends it first.
  void watchGrowth(GrowthWatcher* watcher) { watcher_ = watcher; }

 private:
  explicit Buffer(evbuffer* raw, bool owned) : buf_(raw), owned_(owned) {}
  evbuffer* get() const;
  void grew() {
    if (watcher_ != nullptr) watcher_->onBufferGrew();
  }
  mutable evbuffer* buf_;
  bool owned_ = true;
  GrowthWatcher* watcher_ = nullptr;
};

}  // namespace ferry
