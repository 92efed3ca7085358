#pragma once
// The emulator's durable storage (--journal FILE): a write-ahead journal of the store's
// changes. Every create, applied append, delete and hand-over copy (PUT /v1/debug/stream) is
// written to FILE with one write() (O_APPEND) before the instance answers, and FILE is
// replayed into the empty store at start. An instance killed with SIGKILL and started again
// with the same FILE therefore has every stream it acknowledged, producer state included (so
// a retried append stays idempotent across the crash), as a Streams instance's durable
// storage does. The kernel's page cache survives a killed process, not a machine crash: there
// is no fsync. Used by the fault campaign (bench/faults).
//
// Record: one op letter, then each field as <decimal length>:<bytes>, then '\n'. A last record
// cut short (the process died inside write(), or the disk filled) is dropped at start and the
// file is truncated after the last whole record.
//
//   C name content_type                                   create
//   A name mode producer? id epoch seq forwarded? by body  applied append (mode: JsonBody)
//   D name                                                delete
//   P name export                                         PUT /v1/debug/stream (its JSON)
//
// Owned by the Emulator; single-threaded, like the store it records.

#include <memory>
#include <string>
#include <string_view>

#include "integration/streams_emulator/stream_store.h"
#include "proxy/common/status.h"

namespace ferry::streams {

class Journal {
 public:
  // Opens (creates) `path`, replays its records into `store` (which must be empty and not yet
  // journaled) and truncates a cut-short last record. `records` gets the number replayed.
  static StatusOr<std::unique_ptr<Journal>> open(const std::string& path, StreamStore& store,
                                                 size_t& records);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void created(std::string_view name, std::string_view content_type);
  void appended(std::string_view name, std::string_view body, const ProducerRef* producer,
                const std::string* forwarded_by, JsonBody mode);
  void removed(std::string_view name);
  void put(std::string_view name, const Stream& stream);

  // write() failures (a full disk): the change is applied in memory but not durable.
  uint64_t writeFailures() const { return write_failures_; }

 private:
  explicit Journal(int fd) : fd_(fd) {}
  void write(const std::string& record);

  int fd_;
  uint64_t write_failures_ = 0;
};

}  // namespace ferry::streams
