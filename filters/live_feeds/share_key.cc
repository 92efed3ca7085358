#include "filters/live_feeds/share_key.h"

#include "filters/live_feeds/query_parameters.h"

namespace ferry::filters {
namespace {

bool isPositionParameter(std::string_view name) { return name == "offset" || name == "cursor"; }

void appendPart(std::string& key, std::string_view part) {
  key += std::to_string(part.size());
  key.push_back(':');
  key.append(part);
}

void appendField(std::string& key, const http::HeaderMap& headers, std::string_view name) {
  appendPart(key, name);
  for (const http::HeaderField field : headers.fields()) {
    if (!http::equalsIgnoreCase(field.name, name)) continue;
    key.push_back('=');
    appendPart(key, field.value);
  }
  key.push_back(';');
}

}  // namespace

ReadPosition readPosition(std::string_view target) {
  ReadPosition position;
  forEachQueryParameter(target, [&position](const std::string& name, std::string_view param) {
    std::optional<std::string>* slot = name == "offset"   ? &position.offset
                                       : name == "cursor" ? &position.cursor
                                                          : nullptr;
    if (slot == nullptr || slot->has_value()) return;
    *slot = queryParameterValue(param);
  });
  return position;
}

std::string shareKey(const http::RequestHeaders& request,
                     const std::vector<std::string>& extra_headers) {
  std::string key;
  appendPart(key, request.method);
  appendPart(key, request.authority);
  const std::string_view target = request.path;
  appendPart(key, target.substr(0, target.find('?')));
  forEachQueryParameter(target, [&key](const std::string& name, std::string_view param) {
    if (!isPositionParameter(name)) appendPart(key, param);
  });
  key.push_back('|');
  appendField(key, request.headers, "authorization");
  appendField(key, request.headers, "cookie");
  for (const std::string& name : extra_headers) appendField(key, request.headers, name);
  return key;
}

}  // namespace ferry::filters
