#pragma once
// The storage behind HeaderMap: a vector of trivially copyable elements whose first N live in
// the object itself, so the usual head (a dozen fields, a few hundred bytes) costs no heap
// allocation; past N the elements move to the heap, doubling. Copies and moves copy the
// elements, so element addresses change with them: HeaderMap keeps offsets, never pointers.

#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>

namespace ferry::http {

template <typename T, size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T>, "elements are copied with memcpy");

 public:
  InlineVector() = default;
  InlineVector(const InlineVector& other) { append(other.data(), other.size_); }
  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) {
      size_ = 0;
      append(other.data(), other.size_);
    }
    return *this;
  }
  InlineVector(InlineVector&& other) noexcept { take(other); }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this != &other) {
      heap_.reset();
      capacity_ = N;
      take(other);
    }
    return *this;
  }

  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

  // True when `n` more elements fit without moving the ones there.
  bool fits(size_t n) const { return size_ + n <= capacity_; }
  // Makes room for `n` more elements and returns where they go (uninitialised). Pointers into
  // the vector taken before may no longer be valid.
  T* extend(size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    T* at = data() + size_;
    size_ += n;
    return at;
  }
  void append(const T* elements, size_t n) {
    if (n != 0) std::memcpy(extend(n), elements, n * sizeof(T));
  }
  void push_back(const T& element) { *extend(1) = element; }
  // Drops the elements from `n` on (n <= size()); the capacity stays.
  void truncate(size_t n) { size_ = n; }

 private:
  void grow(size_t needed) {
    size_t capacity = capacity_ * 2;
    if (capacity < needed) capacity = needed;
    std::unique_ptr<T[]> heap(new T[capacity]);
    if (size_ != 0) std::memcpy(heap.get(), data(), size_ * sizeof(T));
    heap_ = std::move(heap);
    capacity_ = capacity;
  }
  void take(InlineVector& other) {
    size_ = other.size_;
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      capacity_ = other.capacity_;
    } else if (size_ != 0) {
      std::memcpy(inline_, other.inline_, size_ * sizeof(T));
    }
    other.size_ = 0;
    other.capacity_ = N;
  }

  std::unique_ptr<T[]> heap_;  // null while the elements fit in inline_
  size_t size_ = 0;
  size_t capacity_ = N;
  T inline_[N];
};

}  // namespace ferry::http
