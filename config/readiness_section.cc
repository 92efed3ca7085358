#include "config/readiness_section.h"

#include "config/duration.h"

namespace ferry::config {
namespace {

// An origin-form target ferry writes as it is into a request line (RFC 9112 §3.2.1): a '/'
// then visible ASCII, no space, no CR/LF, no '#'.
bool isOriginForm(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  for (char c : path) {
    if (c <= 0x20 || c >= 0x7f || c == '#') return false;
  }
  return true;
}

}  // namespace

void readReadiness(YamlReader& reader, const YAML::Node& node, const std::string& path,
                   Readiness& out) {
  out.enabled = true;
  if (!reader.checkMap(node, path, {"enabled", "path", "interval", "timeout"})) return;
  reader.readBool(node, path, "enabled", out.enabled);
  std::string target = out.path;
  reader.readString(node, path, "path", target);
  if (!isOriginForm(target)) {
    reader.error(joinPath(path, "path"),
                 "must be a path starting with '/' without spaces or control characters (got \"" +
                     target + "\")");
  } else {
    out.path = target;
  }
  // At least 100 ms between probes: a probe is a connection to the instance.
  reader.readDuration(node, path, "interval", Millis(100), kMaxDuration, out.interval);
  reader.readDuration(node, path, "timeout", Millis(1), kMaxDuration, out.timeout);
}

}  // namespace ferry::config
