#include "proxy/buffer/buffer.h"

#include <utility>
#include <vector>

namespace ferry {

Buffer::Buffer() : buf_(evbuffer_new()) {}

Buffer Buffer::borrow(evbuffer* raw) { return Buffer(raw, false); }

Buffer::~Buffer() {
  if (owned_ && buf_ != nullptr) evbuffer_free(buf_);
}

Buffer::Buffer(Buffer&& other) noexcept : buf_(other.buf_), owned_(other.owned_) {
  other.buf_ = evbuffer_new();
  other.owned_ = true;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    std::swap(buf_, other.buf_);
    std::swap(owned_, other.owned_);
  }
  return *this;
}

size_t Buffer::length() const { return evbuffer_get_length(buf_); }

void Buffer::add(std::string_view bytes) { evbuffer_add(buf_, bytes.data(), bytes.size()); }

void Buffer::add(const void* data, size_t size) { evbuffer_add(buf_, data, size); }

void Buffer::move(Buffer& other) { evbuffer_add_buffer(buf_, other.buf_); }

void Buffer::move(Buffer& other, size_t size) { evbuffer_remove_buffer(other.buf_, buf_, size); }

bool Buffer::addReference(Buffer& other) {
  return evbuffer_add_buffer_reference(buf_, other.buf_) == 0;
}

void Buffer::copyFrom(const Buffer& other) {
  // Walk the chains and copy each; evbuffer_add_buffer_reference refuses buffers that already
  // hold references, and a replay copy may be one.
  int n = evbuffer_peek(other.buf_, -1, nullptr, nullptr, 0);
  if (n <= 0) return;
  std::vector<evbuffer_iovec> vec(static_cast<size_t>(n));
  evbuffer_peek(other.buf_, -1, nullptr, vec.data(), n);
  for (const auto& v : vec) evbuffer_add(buf_, v.iov_base, v.iov_len);
}

void Buffer::drain(size_t size) { evbuffer_drain(buf_, size); }

std::string_view Buffer::linearize(size_t size) {
  size_t n = size == 0 ? length() : size;
  if (n == 0) return {};
  auto* p = evbuffer_pullup(buf_, static_cast<ev_ssize_t>(n));
  return {reinterpret_cast<const char*>(p), n};
}

std::string Buffer::toString() const {
  std::string out(length(), '\0');
  evbuffer_copyout(buf_, out.data(), out.size());
  return out;
}

}  // namespace ferry
