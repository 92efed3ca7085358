#pragma once
// Appending JSON string literals by hand on the hot paths (error envelopes, product answers),
// where building a RapidJSON document per request would cost more than the request.

#include <cstdio>
#include <string>
#include <string_view>

namespace ferry::streams {

// Appends `s` as a quoted JSON string (RFC 8259 section 7 escapes).
inline void appendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          out.append(buf);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

}  // namespace ferry::streams
