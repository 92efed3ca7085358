#include "config/header_field_name.h"

#include <cctype>

namespace ferry::config {

std::optional<std::string> headerFieldName(std::string_view name) {
  if (name.empty()) return std::nullopt;
  std::string lower;
  lower.reserve(name.size());
  for (unsigned char c : name) {
    if (std::isalnum(c) == 0 &&
        std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos) {
      return std::nullopt;
    }
    lower.push_back(static_cast<char>(std::tolower(c)));
  }
  return lower;
}

}  // namespace ferry::config
