#pragma once
// The query parameters of a request target as a Streams instance reads them: `&`-separated,
// names compared after percent-decoding, the first of repeats counts. Pure functions; used by
// the live reads' targets (resume_target.h, long_poll_target.h) and keys (share_key.h).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/common/percent_decode.h"

namespace ferry::filters {

// Calls `visit(name, param)` for each `&`-separated parameter of the query of `target` (origin
// form: "/path?query"), in order: `param` as sent, `name` its part before any `=`,
// percent-decoded. A target with `?` and nothing after it has one empty parameter; one without
// `?` has none.
template <class Visit>
void forEachQueryParameter(std::string_view target, Visit visit) {
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

// The value of a parameter `param` (as forEachQueryParameter gives it), percent-decoded: what
// follows its first `=`, or empty when it has none.
std::string queryParameterValue(std::string_view param);

// One parameter withQueryParameters() sets.
struct QueryParameterSetting {
  std::string_view name;
  std::optional<std::string> value;  // as it goes on the wire (encoded); none: removed
};

// `target` with each setting applied: a parameter of that name already there is replaced at its
// first place (or removed) and its repeats are dropped; one that is not there is appended, in
// the settings' order. Every other non-empty parameter is kept, in order.
std::string withQueryParameters(std::string_view target,
                                const std::vector<QueryParameterSetting>& settings);

}  // namespace ferry::filters
