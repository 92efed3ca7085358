#pragma once
// One record per finished request, written when the stream ends (complete, cut, or the client
// left), and one per request the codec refused before a stream existed (400, 408, 413, 431,
// 501). Shared by all workers: each record is one write() to a file opened with O_APPEND, so
// records from different workers never interleave and no lock is taken.
//
// Formats (`access_log.format`):
//   json (default): one JSON object per line; every string goes through RapidJSON's Writer, so
//     a '"' or a control byte in a path or header cannot forge a field or a line.
//       {"start":"2026-11-29T18:40:01.123Z","duration_ms":1.9,"upstream_ttfb_ms":1.2,
//        "client":"127.0.0.1:51234","method":"POST","path":"/v1/stream/a","protocol":"HTTP/1.1",
//        "status":204,"bytes_in":200,"bytes_out":0,"request_id":"...","user_agent":"curl/8",
//        "upstream":"inst-2","forward":"forwarded","owner":"inst-2","end":"ok"}
//     Fields with no value are null (no upstream answered: "upstream":null, ttfb null).
//     Between "upstream" and "end" come the fields filters write (InfoField, StreamInfo; owner
//     forwarding's "forward", "forward_reason", "owner", "route": filters/owner_forwarding/
//     forward_log.h); "peer" (the verified TLS client identity, listener.tls.client_cert) only
//     when there is one; "error" on codec refusals.
//   text: the same fields as key=value on one line, strings quoted JSON-style.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/access_log/stream_info.h"
#include "proxy/common/status.h"
#include "proxy/stats/stats.h"

namespace ferry::access_log {

// A field a filter writes through the stream's info map (stream_info.h). Declared once at
// start, in the order rendered (after "upstream", before "end"), so that a record where no
// filter wrote it (another request, a codec refusal) still renders it the same way.
struct InfoField {
  enum class Absent {
    Null,     // "key":null (text: key=-)
    Omit,     // no field at all
    Default,  // the default value
  };
  std::string key;
  Absent absent = Absent::Null;
  std::string default_value;  // Absent::Default
  static InfoField nullable(std::string key) { return {std::move(key), Absent::Null, {}}; }
  static InfoField optional(std::string key) { return {std::move(key), Absent::Omit, {}}; }
  static InfoField withDefault(std::string key, std::string value) {
    return {std::move(key), Absent::Default, std::move(value)};
  }
};
using InfoFields = std::vector<InfoField>;

enum class Format { Json, Text };
// "json" or "text"; false for anything else.
bool parseFormat(std::string_view name, Format& out);

struct Entry {
  std::chrono::system_clock::time_point start;
  std::chrono::microseconds duration{0};
  std::chrono::microseconds upstream_ttfb{-1};  // start -> response head from the upstream
                                                // that answered; < 0: none arrived
  std::string_view client;                      // client address "ip:port" ("[ip6]:port")
  std::string_view method;  // empty: the codec refused the head before it was known
  std::string_view path;
  std::string_view protocol;    // "HTTP/1.1", "HTTP/1.0"
  int status = 0;               // 0 when no response head went out
  uint64_t request_bytes = 0;   // body bytes read from the client
  uint64_t response_bytes = 0;  // body bytes sent to the client
  std::string_view request_id;
  std::string_view user_agent;
  std::string_view upstream;         // who answered: "local", an owner's name; empty: ferry itself
  const StreamInfo* info = nullptr;  // what filters wrote (InfoField); null: nothing
  std::string_view end;              // "ok", "cut", "client_left" or "refused" (codec)
  std::string_view error;            // codec refusals: what was wrong
  std::string_view peer;             // verified TLS client identity; empty: not logged
};

class AccessLog {
 public:
  // `path`: a file (created, appended to) or "-" for standard output.
  static StatusOr<std::shared_ptr<AccessLog>> open(const std::string& path,
                                                   Format format = Format::Json);
  // For `ferry --validate`: whether `open(path)` would succeed, without creating the file. The
  // message names the config key ("access_log: ...").
  static Status checkWritable(const std::string& path);
  ~AccessLog();
  void write(const Entry& entry);
  Format format() const { return format_; }
  // Counts records that could not be written whole (a full disk, a closed stdout): the proxy
  // goes on, the operator sees ferry_access_log_write_failures_total. Set once at start.
  void setWriteFailureCounter(stats::Counter* counter) { write_failures_ = counter; }
  // The filters' fields (InfoField), in order. Set once at start, before any write.
  void setInfoFields(InfoFields fields) { info_fields_ = std::move(fields); }

 private:
  AccessLog(int fd, bool owned, Format format) : fd_(fd), owned_(owned), format_(format) {}
  int fd_;
  bool owned_;
  Format format_;
  stats::Counter* write_failures_ = nullptr;
  InfoFields info_fields_;
};

// The record `write` appends (without the newline); for tests.
std::string formatJson(const Entry& entry, const InfoFields& fields = {});
std::string formatText(const Entry& entry, const InfoFields& fields = {});

}  // namespace ferry::access_log
