#include "config/observability_section.h"

namespace ferry::config {

void readAccessLog(YamlReader& reader, const YAML::Node& root, FerryConfig& out) {
  YAML::Node node = root["access_log"];
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsMap()) {
    // The first form: the value is the path.
    reader.readString(root, "", "access_log", out.access_log);
    return;
  }
  if (!reader.checkMap(node, "access_log", {"path", "format"})) return;
  if (!node["path"].IsDefined()) {
    reader.error("access_log.path", "required (a file, or \"-\" for standard output)");
  }
  reader.readString(node, "access_log", "path", out.access_log);
  std::string format = out.access_log_format;
  reader.readString(node, "access_log", "format", format);
  if (format != "json" && format != "text") {
    reader.error("access_log.format", "must be json or text (got \"" + format + "\")");
  } else {
    out.access_log_format = format;
  }
}

void readForwardedHeaders(YamlReader& reader, const YAML::Node& node, ForwardedHeaders& out) {
  if (!reader.checkMap(node, "forwarded_headers", {"x_forwarded", "trusted_hops"})) return;
  reader.readBool(node, "forwarded_headers", "x_forwarded", out.x_forwarded);
  reader.readUint32(node, "forwarded_headers", "trusted_hops", 0, 16, out.trusted_hops);
}

}  // namespace ferry::config
