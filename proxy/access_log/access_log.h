#pragma once
// One line per finished request, written when the stream ends (complete, cut, or the client
// left). Shared by all workers: each line is one write() to a file opened with O_APPEND, so
// lines from different workers never interleave and no lock is taken.
//
//   2026-11-29T18:40:01.123Z "POST /v1/stream/a" 204 req=200 resp=0 dur=1.9ms upstream=inst-2 end=ok
// With a verified TLS client certificate (listener.tls.client_cert), the line ends with
//   peer="CN=inst-1;DNS:inst-1.streams.internal"  (", \ and control bytes escaped as \xHH)

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/common/status.h"

namespace ferry::access_log {

struct Entry {
  std::chrono::system_clock::time_point start;
  std::chrono::microseconds duration{0};
  std::string_view method;
  std::string_view path;
  int status = 0;                  // 0 when no response head went out
  uint64_t request_bytes = 0;      // body bytes read from the client
  uint64_t response_bytes = 0;     // body bytes sent to the client
  std::string_view upstream;       // "local", an owner's name, or "-" (local reply)
  std::string_view end;            // "ok", "cut" or "client_left"
  std::string_view peer;           // verified TLS client identity; empty: not logged
};

class AccessLog {
 public:
  // `path`: a file (created, appended to) or "-" for standard output.
  static StatusOr<std::shared_ptr<AccessLog>> open(const std::string& path);
  // For `ferry --validate`: whether `open(path)` would succeed, without creating the file. The
  // message names the config key ("access_log: ...").
  static Status checkWritable(const std::string& path);
  ~AccessLog();
  void write(const Entry& entry);

 private:
  AccessLog(int fd, bool owned) : fd_(fd), owned_(owned) {}
  int fd_;
  bool owned_;
};

// The line `write` appends (without the newline); for tests.
std::string formatEntry(const Entry& entry);

}  // namespace ferry::access_log
