#include "integration/streams_emulator/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "integration/streams_emulator/route.h"

namespace ferry::streams {
namespace {

void field(std::string& out, std::string_view value) {
  out.append(std::to_string(value.size())).push_back(':');
  out.append(value);
}

// Reads the fields of one record from `data` at `pos` (just after the op letter) up to its
// '\n'; false when the record is cut short or malformed.
bool readFields(std::string_view data, size_t& pos, std::vector<std::string_view>& fields) {
  fields.clear();
  while (pos < data.size() && data[pos] != '\n') {
    size_t len = 0;
    size_t digits = 0;
    while (pos < data.size() && data[pos] >= '0' && data[pos] <= '9' && digits < 12) {
      len = len * 10 + static_cast<size_t>(data[pos] - '0');
      ++pos;
      ++digits;
    }
    if (digits == 0 || pos >= data.size() || data[pos] != ':') return false;
    ++pos;
    if (data.size() - pos < len) return false;
    fields.push_back(data.substr(pos, len));
    pos += len;
  }
  if (pos >= data.size()) return false;  // no '\n': cut short
  ++pos;
  return true;
}

// Applies one record to the store; false when it does not make sense.
bool apply(char op, const std::vector<std::string_view>& f, StreamStore& store) {
  switch (op) {
    case 'C':
      return f.size() == 2 && store.create(f[0], f[1]).first != nullptr;
    case 'D':
      return f.size() == 1 && (store.remove(f[0]), true);
    case 'P': {
      Stream s;
      if (f.size() != 2 || !importStreamJson(f[1], s)) return false;
      store.put(f[0], std::move(s));
      return true;
    }
    case 'A': {
      uint64_t mode = 0;
      ProducerRef producer;
      if (f.size() != 9 || !parseDecimalU64(f[1], mode) || mode > 2 ||
          !parseDecimalU64(f[4], producer.epoch) || !parseDecimalU64(f[5], producer.seq)) {
        return false;
      }
      Stream* stream = store.find(f[0]);
      if (stream == nullptr) return false;
      producer.id = f[3];
      const std::string by(f[7]);
      const AppendResult r = store.append(f[0], *stream, f[8], f[2] == "1" ? &producer : nullptr,
                                          f[6] == "1" ? &by : nullptr, static_cast<JsonBody>(mode));
      return r.outcome == AppendOutcome::Appended || r.outcome == AppendOutcome::AppendedFresh;
    }
    default:
      return false;
  }
}

}  // namespace

StatusOr<std::unique_ptr<Journal>> Journal::open(const std::string& path, StreamStore& store,
                                                 size_t& records) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("--journal " + path + ": " + strerror(errno));
  std::unique_ptr<Journal> journal(new Journal(fd));
  std::string data;
  char buf[1 << 16];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(n));
  if (n < 0) return unavailable("--journal " + path + ": read: " + strerror(errno));

  records = 0;
  size_t pos = 0;
  std::vector<std::string_view> fields;
  while (pos < data.size()) {
    const size_t start = pos;
    const char op = data[pos++];
    if (!readFields(data, pos, fields)) {
      // Cut short: the process died inside a write(). Keep the whole records only.
      if (::ftruncate(fd, static_cast<off_t>(start)) != 0) {
        return unavailable("--journal " + path + ": truncate: " + strerror(errno));
      }
      fprintf(stderr, "streams-emulator: journal %s: dropped a cut-short last record (%zu bytes)\n",
              path.c_str(), data.size() - start);
      break;
    }
    if (!apply(op, fields, store)) {
      return invalidArgument("--journal " + path + ": bad record at byte " + std::to_string(start));
    }
    ++records;
  }
  return journal;
}

Journal::~Journal() { ::close(fd_); }

void Journal::write(const std::string& record) {
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ++write_failures_;
      fprintf(stderr, "streams-emulator: journal write failed: %s\n", strerror(errno));
      return;
    }
    done += static_cast<size_t>(n);
  }
}

void Journal::created(std::string_view name, std::string_view content_type) {
  std::string r = "C";
  field(r, name);
  field(r, content_type);
  r.push_back('\n');
  write(r);
}

void Journal::appended(std::string_view name, std::string_view body, const ProducerRef* producer,
                       const std::string* forwarded_by, JsonBody mode) {
  std::string r = "A";
  r.reserve(body.size() + name.size() + 64);
  field(r, name);
  field(r, std::to_string(static_cast<int>(mode)));
  field(r, producer ? "1" : "0");
  field(r, producer ? std::string_view(producer->id) : "");
  field(r, producer ? std::to_string(producer->epoch) : "0");
  field(r, producer ? std::to_string(producer->seq) : "0");
  field(r, forwarded_by ? "1" : "0");
  field(r, forwarded_by ? std::string_view(*forwarded_by) : "");
  field(r, body);
  r.push_back('\n');
  write(r);
}

void Journal::removed(std::string_view name) {
  std::string r = "D";
  field(r, name);
  r.push_back('\n');
  write(r);
}

void Journal::put(std::string_view name, const Stream& stream) {
  std::string r = "P";
  field(r, name);
  field(r, exportStreamJson(stream));
  r.push_back('\n');
  write(r);
}

}  // namespace ferry::streams
