#include "filters/live_feeds/query_parameters.h"

namespace ferry::filters {

std::string queryParameterValue(std::string_view param) {
  const size_t equals = param.find('=');
  return percentDecode(equals == std::string_view::npos ? std::string_view()
                                                        : param.substr(equals + 1));
}

std::string withQueryParameters(std::string_view target,
                                const std::vector<QueryParameterSetting>& settings) {
  std::string out(target.substr(0, target.find('?')));
  std::vector<bool> done(settings.size(), false);
  char separator = '?';
  auto emit = [&](std::string_view text) {
    out.push_back(separator);
    out.append(text);
    separator = '&';
  };
  auto apply = [&](size_t i) {
    done[i] = true;
    if (!settings[i].value) return;
    emit(std::string(settings[i].name) + "=" + *settings[i].value);
  };
  forEachQueryParameter(target, [&](const std::string& name, std::string_view param) {
    for (size_t i = 0; i < settings.size(); ++i) {
      if (name != settings[i].name) continue;
      if (!done[i]) apply(i);
      return;
    }
    if (!param.empty()) emit(param);
  });
  for (size_t i = 0; i < settings.size(); ++i) {
    if (!done[i]) apply(i);
  }
  return out;
}

}  // namespace ferry::filters
