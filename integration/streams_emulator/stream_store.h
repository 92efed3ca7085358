#pragma once
// In-memory storage of the emulator: streams (byte or JSON), producer state for idempotent
// appends, and the log of every applied append (for /v1/debug/applied). Owned by the
// Emulator; single-threaded; knows nothing of HTTP.
//
// Offsets are positions: bytes for byte streams, messages for JSON streams, written as 16
// zero-padded decimal digits ("0000000000000042"). "-1" means the start, "now" the tail.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ferry::streams {

class Journal;

std::string formatOffset(uint64_t position);
// Parses an offset query value; nullopt when malformed or past `tail`.
std::optional<uint64_t> parseOffset(std::string_view text, uint64_t tail);

struct ProducerRef {
  std::string id;
  uint64_t epoch = 0;
  uint64_t seq = 0;
};

struct AppliedAppend {
  uint64_t offset = 0;       // position before the append
  uint64_t next_offset = 0;  // position after it (the Stream-Next-Offset answered)
  uint64_t bytes = 0;        // request body size
  std::string body_sha256;   // hex
  std::optional<ProducerRef> producer;
  std::optional<std::string> forwarded_by;  // the Streams-Forwarded request header
};

struct Stream {
  struct Producer {
    uint64_t epoch = 0;
    uint64_t last_seq = 0;
    std::deque<std::pair<uint64_t, uint64_t>> recent;  // (seq, next offset), newest last
  };
  std::string content_type;
  bool json = false;
  std::string bytes;                  // byte streams
  std::vector<std::string> messages;  // JSON streams: one serialized JSON value each
  std::unordered_map<std::string, Producer> producers;

  uint64_t tail() const { return json ? messages.size() : bytes.size(); }
};

// How a JSON body becomes messages.
enum class JsonBody {
  ArrayIsBatch,   // raw append: a top-level array is a batch, anything else one message
  SingleRecord,   // product POST .../records: the body is one record
  ArrayRequired,  // product POST .../records:batch: the body must be an array
};

enum class AppendOutcome { Appended, AppendedFresh, Duplicate, SeqGap, StaleEpoch, BadBody };

struct AppendResult {
  AppendOutcome outcome = AppendOutcome::Appended;
  uint64_t next_offset = 0;   // Appended*/Duplicate: the position after the (original) append
  uint64_t count = 0;         // messages (JSON) or bytes (byte streams) in this request
  uint64_t expected_seq = 0;  // SeqGap / StaleEpoch: the expected seq / current epoch
  const char* error = "";     // BadBody: why
};

class StreamStore {
 public:
  // Keeps at most `applied_log_limit` entries of the applied log per stream (the newest).
  explicit StreamStore(size_t applied_log_limit = 100000) : applied_log_limit_(applied_log_limit) {}
  Stream* find(std::string_view name);
  // Creates `name` (content type decides JSON-ness). Returns the stream and whether it was
  // created now; nullptr when it exists with a different content type.
  std::pair<Stream*, bool> create(std::string_view name, std::string_view content_type);
  bool remove(std::string_view name);
  // Replaces (or creates) `name` with `stream` (PUT /v1/debug/stream: a hand-over's copy).
  void put(std::string_view name, Stream stream);
  // From now on every change (create, applied append, remove, put) is written to `journal`
  // before the call returns (--journal, journal.h); nullptr: none (the default).
  void setJournal(Journal* journal) { journal_ = journal; }

  // Appends `body` to `stream` (named `name`), honouring producer idempotence.
  AppendResult append(std::string_view name, Stream& stream, std::string_view body,
                      const ProducerRef* producer, const std::string* forwarded_by, JsonBody mode);

  // The appends applied to `name`, in order (kept after a delete); the newest
  // `applied_log_limit` of them.
  const std::deque<AppliedAppend>* applied(std::string_view name) const;

  // The data after `from`: raw bytes, or a JSON array of the messages.
  static std::string readPage(const Stream& stream, uint64_t from);
  // Messages after `from`, comma-joined without brackets (for SSE and product pages).
  static std::string joinMessages(const Stream& stream, uint64_t from);

 private:
  std::unordered_map<std::string, Stream> streams_;
  size_t applied_log_limit_;
  Journal* journal_ = nullptr;
  std::unordered_map<std::string, std::deque<AppliedAppend>> applied_;
};

std::string sha256Hex(std::string_view data);

// A stream's data and producer state as JSON and back (stream_transfer.cc): GET / PUT
// /v1/debug/stream. importStreamJson() is false on malformed input (`out` unchanged).
std::string exportStreamJson(const Stream& stream);
bool importStreamJson(std::string_view json, Stream& out);

}  // namespace ferry::streams
