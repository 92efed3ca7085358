#include "filters/live_feeds/resume_target.h"

#include "proxy/common/percent_decode.h"

namespace ferry::filters {
namespace {

// RFC 3986 §2.3: unreserved characters stay; everything else is %XX.
void appendEncoded(std::string& out, std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : value) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
}

std::string_view paramName(std::string_view param) { return param.substr(0, param.find('=')); }

struct Setting {
  std::string_view name;
  const std::string* value;  // null: remove the parameter
  bool done = false;
};

}  // namespace

std::string resumeTarget(std::string_view target, const FeedPosition& position) {
  const size_t question = target.find('?');
  std::string out(target.substr(0, question));
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  Setting settings[] = {{"offset", &position.next_offset},
                        {"cursor", position.cursor.empty() ? nullptr : &position.cursor}};
  char separator = '?';
  auto emit = [&](std::string_view text) {
    out.push_back(separator);
    out.append(text);
    separator = '&';
  };
  auto emitSetting = [&](Setting& s) {
    s.done = true;
    if (s.value == nullptr) return;
    std::string param(s.name);
    param.push_back('=');
    appendEncoded(param, *s.value);
    emit(param);
  };
  size_t start = 0;
  while (start <= query.size() && !query.empty()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view param = query.substr(start, end - start);
    const std::string name = percentDecode(paramName(param));
    Setting* setting = nullptr;
    for (Setting& s : settings) {
      if (name == s.name) setting = &s;
    }
    if (setting == nullptr) {
      if (!param.empty()) emit(param);
    } else if (!setting->done) {
      emitSetting(*setting);
    }
    start = end + 1;
  }
  for (Setting& s : settings) {
    if (!s.done) emitSetting(s);
  }
  return out;
}

}  // namespace ferry::filters
