// A stream's state as JSON, for GET/PUT /v1/debug/stream: how a test moves a stream from its
// old owner to its new one during a hand-over. A Streams fleet keeps streams in shared durable
// storage, so a new owner has them; the emulator keeps them in memory per process, and this
// copy (data and producer state, so idempotent appends stay idempotent across the hand-over)
// stands in for that storage.
//
//   {"content_type":"text/plain","data_hex":"6869",            (byte streams)
//    "messages":["{\"a\":1}", ...],                             (JSON streams)
//    "producers":[{"id":"p","epoch":0,"last_seq":4,"recent":[[4,16],...]}]}
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "integration/streams_emulator/emulator.h"

namespace ferry::streams {
namespace {

std::string toHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

bool fromHex(std::string_view hex, std::string& out) {
  if (hex.size() % 2 != 0) return false;
  auto value = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = value(hex[i]);
    const int lo = value(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
  }
  return true;
}

}  // namespace

std::string exportStreamJson(const Stream& s) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("content_type");
  w.String(s.content_type.c_str());
  if (s.json) {
    w.Key("messages");
    w.StartArray();
    for (const auto& m : s.messages)
      w.String(m.c_str(), static_cast<rapidjson::SizeType>(m.size()));
    w.EndArray();
  } else {
    w.Key("data_hex");
    w.String(toHex(s.bytes).c_str());
  }
  w.Key("producers");
  w.StartArray();
  for (const auto& [id, p] : s.producers) {
    w.StartObject();
    w.Key("id");
    w.String(id.c_str());
    w.Key("epoch");
    w.Uint64(p.epoch);
    w.Key("last_seq");
    w.Uint64(p.last_seq);
    w.Key("recent");
    w.StartArray();
    for (const auto& [seq, next] : p.recent) {
      w.StartArray();
      w.Uint64(seq);
      w.Uint64(next);
      w.EndArray();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

bool importStreamJson(std::string_view json, Stream& out) {
  rapidjson::Document d;
  d.Parse(json.data(), json.size());
  if (!d.IsObject() || !d.HasMember("content_type") || !d["content_type"].IsString()) return false;
  Stream s;
  s.content_type = d["content_type"].GetString();
  s.json = d.HasMember("messages");
  if (s.json) {
    if (!d["messages"].IsArray()) return false;
    for (const auto& m : d["messages"].GetArray()) {
      if (!m.IsString()) return false;
      s.messages.emplace_back(m.GetString(), m.GetStringLength());
    }
  } else if (!d.HasMember("data_hex") || !d["data_hex"].IsString() ||
             !fromHex(d["data_hex"].GetString(), s.bytes)) {
    return false;
  }
  if (d.HasMember("producers")) {
    if (!d["producers"].IsArray()) return false;
    for (const auto& p : d["producers"].GetArray()) {
      if (!p.IsObject() || !p.HasMember("id") || !p["id"].IsString() || !p.HasMember("epoch") ||
          !p["epoch"].IsUint64() || !p.HasMember("last_seq") || !p["last_seq"].IsUint64()) {
        return false;
      }
      Stream::Producer& producer = s.producers[p["id"].GetString()];
      producer.epoch = p["epoch"].GetUint64();
      producer.last_seq = p["last_seq"].GetUint64();
      if (p.HasMember("recent") && p["recent"].IsArray()) {
        for (const auto& r : p["recent"].GetArray()) {
          if (!r.IsArray() || r.Size() != 2 || !r[0].IsUint64() || !r[1].IsUint64()) return false;
          producer.recent.emplace_back(r[0].GetUint64(), r[1].GetUint64());
        }
      }
    }
  }
  out = std::move(s);
  return true;
}

}  // namespace ferry::streams
