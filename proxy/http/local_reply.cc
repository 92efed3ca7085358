#include "proxy/http/local_reply.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ferry::http {

LocalReply makeLocalReply(int status, std::string_view code, std::string_view message,
                          const HeaderMap& extra) {
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> writer(out);
  writer.StartObject();
  writer.Key("error");
  writer.StartObject();
  writer.Key("code");
  writer.String(code.data(), static_cast<rapidjson::SizeType>(code.size()));
  writer.Key("message");
  writer.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  writer.EndObject();
  writer.EndObject();

  LocalReply reply;
  reply.headers.status = status;
  reply.body = out.GetString();
  reply.headers.headers.add("content-type", "application/json");
  reply.headers.headers.add("cache-control", "no-store");
  for (const auto& field : extra.fields()) reply.headers.headers.set(field.name, field.value);
  reply.headers.headers.set("content-length", std::to_string(reply.body.size()));
  return reply;
}

std::string renderHttp1AndClose(const LocalReply& reply) {
  std::string out = "HTTP/1.1 " + std::to_string(reply.headers.status) + " " +
                    std::string(reasonPhrase(reply.headers.status)) + "\r\n";
  for (const auto& field : reply.headers.headers.fields()) {
    out.append(field.name).append(": ").append(field.value).append("\r\n");
  }
  out += "connection: close\r\n\r\n";
  out += reply.body;
  return out;
}

}  // namespace ferry::http
