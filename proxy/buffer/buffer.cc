#include "proxy/buffer/buffer.h"

#include <utility>
#include <vector>

namespace ferry {

// The evbuffer is made on first use: a stream owns several Buffers that most requests never
// fill (held bodies, replay copies), and a moved-from Buffer needs none until it is reused.
Buffer::Buffer() : buf_(nullptr) {}

evbuffer* Buffer::get() const {
  if (buf_ == nullptr) buf_ = evbuffer_new();
  return buf_;
}

Buffer Buffer::borrow(evbuffer* raw) { return Buffer(raw, false); }

Buffer::~Buffer() {
  if (owned_ && buf_ != nullptr) evbuffer_free(buf_);
}

Buffer::Buffer(Buffer&& other) noexcept : buf_(other.buf_), owned_(other.owned_) {
  other.buf_ = nullptr;
  other.owned_ = true;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    std::swap(buf_, other.buf_);
    std::swap(owned_, other.owned_);
    if (!empty()) grew();
  }
  return *this;
}

size_t Buffer::length() const { return buf_ == nullptr ? 0 : evbuffer_get_length(buf_); }

void Buffer::add(std::string_view bytes) {
  evbuffer_add(get(), bytes.data(), bytes.size());
  grew();
}

void Buffer::add(const void* data, size_t size) {
  evbuffer_add(get(), data, size);
  grew();
}

void Buffer::move(Buffer& other) {
  if (other.empty()) return;
  evbuffer_add_buffer(get(), other.buf_);
  grew();
}

void Buffer::move(Buffer& other, size_t size) {
  if (other.empty() || size == 0) return;
  evbuffer_remove_buffer(other.buf_, get(), size);
  grew();
}

bool Buffer::addReference(Buffer& other) {
  if (other.empty()) return true;
  if (evbuffer_add_buffer_reference(get(), other.buf_) != 0) return false;
  grew();
  return true;
}

void Buffer::copyFrom(const Buffer& other) {
  // Walk the chains and copy each; evbuffer_add_buffer_reference refuses buffers that already
  // hold references, and a replay copy may be one.
  if (other.empty()) return;
  int n = evbuffer_peek(other.buf_, -1, nullptr, nullptr, 0);
  if (n <= 0) return;
  std::vector<evbuffer_iovec> vec(static_cast<size_t>(n));
  evbuffer_peek(other.buf_, -1, nullptr, vec.data(), n);
  for (const auto& v : vec) evbuffer_add(get(), v.iov_base, v.iov_len);
  grew();
}

void Buffer::drain(size_t size) {
  if (buf_ != nullptr) evbuffer_drain(buf_, size);
}

std::string_view Buffer::linearize(size_t size) {
  size_t n = size == 0 ? length() : size;
  if (n == 0) return {};
  auto* p = evbuffer_pullup(get(), static_cast<ev_ssize_t>(n));
  return {reinterpret_cast<const char*>(p), n};
}

std::string Buffer::toString() const {
  std::string out(length(), '\0');
  if (!out.empty()) evbuffer_copyout(buf_, out.data(), out.size());
  return out;
}

}  // namespace ferry
