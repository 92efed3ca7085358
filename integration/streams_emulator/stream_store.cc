#include "integration/streams_emulator/stream_store.h"

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>

#include "integration/streams_emulator/journal.h"

namespace ferry::streams {
namespace {

constexpr size_t kProducerHistory = 1024;  // duplicates older than this are acked at the tail

bool isJsonType(std::string_view content_type) {
  const size_t semi = content_type.find(';');
  std::string_view base = content_type.substr(0, semi);
  while (!base.empty() && base.back() == ' ') base.remove_suffix(1);
  return base == "application/json";
}

// Splits a JSON body into serialized messages; false (with `why`) when it is not acceptable.
bool toMessages(std::string_view body, JsonBody mode, std::vector<std::string>& out,
                const char*& why) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) {
    why = "body is not valid JSON";
    return false;
  }
  const bool batch = doc.IsArray() && mode != JsonBody::SingleRecord;
  if (mode == JsonBody::ArrayRequired && !doc.IsArray()) {
    why = "batch body must be a JSON array";
    return false;
  }
  if (!batch) {
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    doc.Accept(w);
    out.emplace_back(sb.GetString(), sb.GetSize());
    return true;
  }
  if (doc.Empty()) {
    why = "empty JSON array";
    return false;
  }
  for (const auto& v : doc.GetArray()) {
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    v.Accept(w);
    out.emplace_back(sb.GetString(), sb.GetSize());
  }
  return true;
}

}  // namespace

std::string formatOffset(uint64_t position) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%016llu", static_cast<unsigned long long>(position));
  return buf;
}

std::optional<uint64_t> parseOffset(std::string_view text, uint64_t tail) {
  if (text.empty() || text == "-1") return 0;
  if (text == "now") return tail;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > tail) return std::nullopt;
  return v;
}

std::string sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out(len * 2, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 15];
  }
  return out;
}

Stream* StreamStore::find(std::string_view name) {
  auto it = streams_.find(std::string(name));
  return it == streams_.end() ? nullptr : &it->second;
}

std::pair<Stream*, bool> StreamStore::create(std::string_view name, std::string_view content_type) {
  auto [it, inserted] = streams_.try_emplace(std::string(name));
  Stream& s = it->second;
  if (inserted) {
    s.content_type = content_type.empty() ? "application/octet-stream" : std::string(content_type);
    s.json = isJsonType(s.content_type);
    if (journal_ != nullptr) journal_->created(name, content_type);
    return {&s, true};
  }
  const std::string wanted =
      content_type.empty() ? "application/octet-stream" : std::string(content_type);
  if (wanted != s.content_type) return {nullptr, false};
  return {&s, false};
}

bool StreamStore::remove(std::string_view name) {
  const bool removed = streams_.erase(std::string(name)) > 0;
  if (removed && journal_ != nullptr) journal_->removed(name);
  return removed;
}

void StreamStore::put(std::string_view name, Stream stream) {
  if (journal_ != nullptr) journal_->put(name, stream);
  streams_[std::string(name)] = std::move(stream);
}

AppendResult StreamStore::append(std::string_view name, Stream& stream, std::string_view body,
                                 const ProducerRef* producer, const std::string* forwarded_by,
                                 JsonBody mode) {
  AppendResult r;
  Stream::Producer* state = nullptr;
  bool fresh = false;
  if (producer != nullptr) {
    auto it = stream.producers.find(producer->id);
    if (it == stream.producers.end() || producer->epoch > it->second.epoch) {
      // A new producer or a new epoch starts at seq 0.
      if (producer->seq != 0) {
        r.outcome = AppendOutcome::SeqGap;
        r.expected_seq = 0;
        return r;
      }
      fresh = true;
    } else if (producer->epoch < it->second.epoch) {
      r.outcome = AppendOutcome::StaleEpoch;
      r.expected_seq = it->second.epoch;
      return r;
    } else {
      state = &it->second;
      if (producer->seq <= state->last_seq) {
        r.outcome = AppendOutcome::Duplicate;
        r.next_offset = stream.tail();
        for (const auto& [seq, next] : state->recent) {
          if (seq == producer->seq) r.next_offset = next;
        }
        return r;
      }
      if (producer->seq != state->last_seq + 1) {
        r.outcome = AppendOutcome::SeqGap;
        r.expected_seq = state->last_seq + 1;
        return r;
      }
    }
  }

  const uint64_t before = stream.tail();
  if (stream.json) {
    const size_t old_size = stream.messages.size();
    if (!toMessages(body, mode, stream.messages, r.error)) {
      stream.messages.resize(old_size);
      r.outcome = AppendOutcome::BadBody;
      return r;
    }
    r.count = stream.messages.size() - old_size;
  } else {
    if (body.empty()) {
      r.outcome = AppendOutcome::BadBody;
      r.error = "empty append";
      return r;
    }
    stream.bytes.append(body);
    r.count = body.size();
  }
  r.next_offset = stream.tail();
  r.outcome = fresh ? AppendOutcome::AppendedFresh : AppendOutcome::Appended;
  if (journal_ != nullptr) journal_->appended(name, body, producer, forwarded_by, mode);

  if (producer != nullptr) {
    if (fresh) {
      state = &stream.producers[producer->id];
      state->epoch = producer->epoch;
      state->recent.clear();
    }
    state->last_seq = producer->seq;
    state->recent.emplace_back(producer->seq, r.next_offset);
    if (state->recent.size() > kProducerHistory) state->recent.pop_front();
  }

  auto& log = applied_[std::string(name)];
  AppliedAppend& a = log.emplace_back();
  a.offset = before;
  a.next_offset = r.next_offset;
  a.bytes = body.size();
  a.body_sha256 = sha256Hex(body);
  if (producer != nullptr) a.producer = *producer;
  if (forwarded_by != nullptr) a.forwarded_by = *forwarded_by;
  if (log.size() > applied_log_limit_) log.pop_front();
  return r;
}

const std::deque<AppliedAppend>* StreamStore::applied(std::string_view name) const {
  auto it = applied_.find(std::string(name));
  return it == applied_.end() ? nullptr : &it->second;
}

std::string StreamStore::joinMessages(const Stream& stream, uint64_t from) {
  std::string out;
  for (uint64_t i = from; i < stream.messages.size(); ++i) {
    if (i != from) out.push_back(',');
    out.append(stream.messages[i]);
  }
  return out;
}

std::string StreamStore::readPage(const Stream& stream, uint64_t from) {
  if (!stream.json) return stream.bytes.substr(from);
  std::string out = "[";
  out.append(joinMessages(stream, from));
  out.push_back(']');
  return out;
}

}  // namespace ferry::streams
