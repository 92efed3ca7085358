#pragma once
// Turns one fuzz input into the pieces a connection would have read: the first byte says how
// many split lengths follow (0..7), each next byte is one length (0 = 1 byte), and the rest is
// the data, cut into pieces of those lengths in turn (the last piece takes what is left).
// So the fuzzer mutates where reads end as freely as what they carry, and a corpus file
// whose first byte is 0 is fed whole.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ferry::fuzz {

class SplitInput {
 public:
  SplitInput(const uint8_t* data, size_t size) {
    size_t at = 0;
    const size_t count = size > 0 ? data[0] % 8 : 0;
    at = size > 0 ? 1 : 0;
    for (size_t i = 0; i < count && at < size; ++i, ++at)
      lengths_.push_back(data[at] ? data[at] : 1);
    data_ = std::string_view(reinterpret_cast<const char*>(data) + at, size - at);
  }

  // The bytes without the split header.
  std::string_view data() const { return data_; }

  // The next piece; empty once everything was handed out.
  std::string_view next() {
    if (offset_ >= data_.size()) return {};
    size_t length = data_.size() - offset_;
    if (!lengths_.empty()) length = std::min(length, lengths_[piece_++ % lengths_.size()]);
    std::string_view piece = data_.substr(offset_, length);
    offset_ += length;
    return piece;
  }
  bool done() const { return offset_ >= data_.size(); }

 private:
  std::vector<size_t> lengths_;
  std::string_view data_;
  size_t offset_ = 0;
  size_t piece_ = 0;
};

// A broken invariant: abort, so libFuzzer saves the input as a crash.
[[noreturn]] void fail(const char* what);

}  // namespace ferry::fuzz
