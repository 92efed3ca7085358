#include "proxy/access_log/access_log.h"

#include <fcntl.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace ferry::access_log {

bool parseFormat(std::string_view name, Format& out) {
  if (name == "json") {
    out = Format::Json;
    return true;
  }
  if (name == "text") {
    out = Format::Text;
    return true;
  }
  return false;
}

StatusOr<std::shared_ptr<AccessLog>> AccessLog::open(const std::string& path, Format format) {
  if (path == "-") return std::shared_ptr<AccessLog>(new AccessLog(STDOUT_FILENO, false, format));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return unavailable("access_log: cannot open " + path + ": " + std::strerror(errno));
  return std::shared_ptr<AccessLog>(new AccessLog(fd, true, format));
}

Status AccessLog::checkWritable(const std::string& path) {
  if (path == "-") return Status::ok();
  // An existing file must be writable; a new one needs a writable directory to be created in.
  std::string target = path;
  if (::access(path.c_str(), F_OK) != 0) {
    auto slash = path.rfind('/');
    target = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  }
  if (::access(target.c_str(), W_OK) != 0) {
    return unavailable("access_log: cannot open " + path + " for writing (" + target + ": " +
                       std::strerror(errno) + ")");
  }
  return Status::ok();
}

AccessLog::~AccessLog() {
  if (owned_) ::close(fd_);
}

namespace {

std::string isoTime(std::chrono::system_clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char when[40];
  std::snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return when;
}

double millis(std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1000.0; }

// One field sink for both formats: JSON members, or key=value pairs whose strings are quoted
// by the same RapidJSON Writer (so the text format escapes exactly as the JSON one does).
class Fields {
 public:
  explicit Fields(Format format) : format_(format), json_(buffer_) {
    if (format_ == Format::Json) json_.StartObject();
  }
  void string(const char* key, std::string_view value) {
    if (value.empty()) return null(key);
    if (format_ == Format::Json) {
      json_.Key(key);
      json_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
      return;
    }
    rapidjson::StringBuffer quoted;
    rapidjson::Writer<rapidjson::StringBuffer> writer(quoted);
    writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
    pair(key, quoted.GetString());
  }
  void null(const char* key) {
    if (format_ == Format::Json) {
      json_.Key(key);
      json_.Null();
      return;
    }
    pair(key, "-");
  }
  void integer(const char* key, uint64_t value) {
    if (format_ == Format::Json) {
      json_.Key(key);
      json_.Uint64(value);
      return;
    }
    pair(key, std::to_string(value));
  }
  void number(const char* key, double value) {
    if (format_ == Format::Json) {
      json_.Key(key);
      json_.Double(value);
      return;
    }
    char text[32];
    std::snprintf(text, sizeof(text), "%.3f", value);
    pair(key, text);
  }
  std::string finish() {
    if (format_ == Format::Json) {
      json_.EndObject();
      return buffer_.GetString();
    }
    return text_;
  }

 private:
  void pair(const char* key, const std::string& value) {
    if (!text_.empty()) text_ += ' ';
    text_ += key;
    text_ += '=';
    text_ += value;
  }
  Format format_;
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> json_;
  std::string text_;
};

// The filters' fields: what a filter wrote, else what the field says for "nothing written".
void renderInfo(Fields& f, const StreamInfo* info, const InfoFields& fields) {
  for (const InfoField& field : fields) {
    std::optional<std::string_view> value = info ? info->get(field.key) : std::nullopt;
    if (value) {
      f.string(field.key.c_str(), *value);
    } else if (field.absent == InfoField::Absent::Null) {
      f.null(field.key.c_str());
    } else if (field.absent == InfoField::Absent::Default) {
      f.string(field.key.c_str(), field.default_value);
    }
  }
}

std::string render(const Entry& e, Format fmt, const InfoFields& info_fields) {
  Fields f(fmt);
  f.string("start", isoTime(e.start));
  f.number("duration_ms", millis(e.duration));
  if (e.upstream_ttfb.count() >= 0) {
    f.number("upstream_ttfb_ms", millis(e.upstream_ttfb));
  } else {
    f.null("upstream_ttfb_ms");
  }
  f.string("client", e.client);
  f.string("method", e.method);
  f.string("path", e.path);
  f.string("protocol", e.protocol);
  if (e.status != 0) {
    f.integer("status", static_cast<uint64_t>(e.status));
  } else {
    f.null("status");
  }
  f.integer("bytes_in", e.request_bytes);
  f.integer("bytes_out", e.response_bytes);
  f.string("request_id", e.request_id);
  f.string("user_agent", e.user_agent);
  f.string("upstream", e.upstream);
  renderInfo(f, e.info, info_fields);
  f.string("end", e.end);
  if (!e.error.empty()) f.string("error", e.error);
  if (!e.peer.empty()) f.string("peer", e.peer);
  return f.finish();
}

}  // namespace

std::string formatJson(const Entry& entry, const InfoFields& fields) {
  return render(entry, Format::Json, fields);
}
std::string formatText(const Entry& entry, const InfoFields& fields) {
  return render(entry, Format::Text, fields);
}

void AccessLog::write(const Entry& entry) {
  std::string line = render(entry, format_, info_fields_);
  line += '\n';
  // One write per line: O_APPEND keeps whole lines from different workers apart.
  const ssize_t written = ::write(fd_, line.data(), line.size());
  // A full disk must not stop the proxy; it is counted.
  if (written != static_cast<ssize_t>(line.size()) && write_failures_ != nullptr) {
    write_failures_->inc();
  }
}

}  // namespace ferry::access_log
