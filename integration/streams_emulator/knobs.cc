#include "integration/streams_emulator/knobs.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ferry::streams {
namespace {

bool readBool(const rapidjson::Value& v, const char* key, bool& out, std::string& err) {
  auto it = v.FindMember(key);
  if (it == v.MemberEnd()) return true;
  if (!it->value.IsBool()) {
    err = std::string(key) + ": expected a boolean";
    return false;
  }
  out = it->value.GetBool();
  return true;
}

bool readUint(const rapidjson::Value& v, const char* key, std::optional<uint64_t>& out,
              std::string& err) {
  auto it = v.FindMember(key);
  if (it == v.MemberEnd() || it->value.IsNull()) return true;
  if (!it->value.IsUint64()) {
    err = std::string(key) + ": expected a non-negative integer";
    return false;
  }
  out = it->value.GetUint64();
  return true;
}

}  // namespace

StatusOr<ControlUpdate> parseControl(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject())
    return invalidArgument("body: expected a JSON object");
  ControlUpdate u;
  std::string err;
  std::optional<uint64_t> n;
  bool reset_knobs = false;
  if (!readBool(doc, "reset_knobs", reset_knobs, err) ||
      !readBool(doc, "early_409", u.knobs.early_409, err) ||
      !readBool(doc, "append_timeout", u.knobs.append_timeout, err) ||
      !readBool(doc, "refuse", u.knobs.refuse, err) ||
      !readBool(doc, "reset", u.knobs.reset, err)) {
    return invalidArgument(err);
  }
  if (!readUint(doc, "early_409_after_bytes", n, err)) return invalidArgument(err);
  u.knobs.early_409_after_bytes = n.value_or(0);
  n.reset();
  if (!readUint(doc, "delay_ms", n, err)) return invalidArgument(err);
  u.knobs.delay_ms = n.value_or(0);
  if (!readUint(doc, "cut_after_bytes", u.knobs.cut_after_bytes, err)) return invalidArgument(err);
  n.reset();
  if (!readUint(doc, "handover_ms", n, err)) return invalidArgument(err);
  u.handover_ms = n.value_or(0);
  if (reset_knobs) u.knobs = Knobs{};

  auto m = doc.FindMember("members");
  if (m != doc.MemberEnd()) {
    if (!m->value.IsArray() || m->value.Empty()) {
      return invalidArgument("members: expected a non-empty array of names");
    }
    std::vector<std::string> members;
    for (const auto& e : m->value.GetArray()) {
      if (!e.IsString() || e.GetStringLength() == 0) {
        return invalidArgument("members: every entry must be a non-empty string");
      }
      members.emplace_back(e.GetString(), e.GetStringLength());
    }
    u.members = std::move(members);
  }
  return u;
}

std::string describeControl(const Knobs& k, const std::vector<std::string>& members) {
  rapidjson::StringBuffer sb;
  rapidjson::Writer<rapidjson::StringBuffer> w(sb);
  w.StartObject();
  w.Key("members");
  w.StartArray();
  for (const auto& m : members) w.String(m.c_str(), static_cast<rapidjson::SizeType>(m.size()));
  w.EndArray();
  w.Key("early_409");
  w.Bool(k.early_409);
  w.Key("early_409_after_bytes");
  w.Uint64(k.early_409_after_bytes);
  w.Key("delay_ms");
  w.Uint64(k.delay_ms);
  w.Key("cut_after_bytes");
  if (k.cut_after_bytes)
    w.Uint64(*k.cut_after_bytes);
  else
    w.Null();
  w.Key("append_timeout");
  w.Bool(k.append_timeout);
  w.Key("refuse");
  w.Bool(k.refuse);
  w.Key("reset");
  w.Bool(k.reset);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

}  // namespace ferry::streams
