#pragma once
// Header field names in the config (fault.header, live_feeds.share_key_headers): a name is a
// token (RFC 9110 §5.6.2) and is compared without case, so the config keeps it lower-cased as
// the data plane's HeaderMap looks names up. Internal to config/.

#include <optional>
#include <string>
#include <string_view>

namespace ferry::config {

// `name` lower-cased, or nothing when it is not a token (empty, or a character a field name
// cannot have).
std::optional<std::string> headerFieldName(std::string_view name);

}  // namespace ferry::config
