#include "filters/live_feeds/share_key.h"

#include "proxy/common/percent_decode.h"

namespace ferry::filters {
namespace {

// Calls `visit(name, param)` for each `&`-separated parameter of the target's query, `name`
// percent-decoded.
template <class Visit>
void forEachParameter(std::string_view target, Visit visit) {
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return;
  const std::string_view query = target.substr(question + 1);
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view param = query.substr(start, end - start);
    visit(percentDecode(param.substr(0, param.find('='))), param);
    start = end + 1;
  }
}

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
  forEachParameter(target, [&position](const std::string& name, std::string_view param) {
    std::optional<std::string>* slot = name == "offset"   ? &position.offset
                                       : name == "cursor" ? &position.cursor
                                                          : nullptr;
    if (slot == nullptr || slot->has_value()) return;
    const size_t equals = param.find('=');
    *slot = percentDecode(equals == std::string_view::npos ? std::string_view()
                                                           : param.substr(equals + 1));
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
  forEachParameter(target, [&key](const std::string& name, std::string_view param) {
    if (!isPositionParameter(name)) appendPart(key, param);
  });
  key.push_back('|');
  appendField(key, request.headers, "authorization");
  appendField(key, request.headers, "cookie");
  for (const std::string& name : extra_headers) appendField(key, request.headers, name);
  return key;
}

}  // namespace ferry::filters
