#include "config/fault_section.h"

#include <string_view>

#include "config/duration.h"
#include "config/header_field_name.h"

namespace ferry::config {
namespace {

void readAbort(YamlReader& reader, const YAML::Node& node, const std::string& path,
               FaultAbort& out) {
  if (!reader.checkMap(node, path, {"percent", "status"})) return;
  reader.readUint32(node, path, "percent", 0, 100, out.percent);
  // An abort is an error answer: a 2xx or 3xx would read as the request having worked.
  reader.readUint32(node, path, "status", 400, 599, out.status);
}

void readDelay(YamlReader& reader, const YAML::Node& node, const std::string& path,
               FaultDelay& out) {
  if (!reader.checkMap(node, path, {"percent", "duration"})) return;
  reader.readUint32(node, path, "percent", 0, 100, out.percent);
  reader.readDuration(node, path, "duration", Millis(1), kMaxDuration, out.duration);
}

}  // namespace

void readFault(YamlReader& reader, const YAML::Node& node, const std::string& path, Fault& out) {
  if (!reader.checkMap(node, path, {"enabled", "header", "abort", "delay"})) return;
  reader.readBool(node, path, "enabled", out.enabled);
  std::string header = out.header;
  reader.readString(node, path, "header", header);
  if (auto name = headerFieldName(header)) {
    out.header = *name;
  } else {
    reader.error(joinPath(path, "header"),
                 "must be a header field name (a token, RFC 9110 §5.6.2; got \"" + header + "\")");
  }
  readAbort(reader, node["abort"], joinPath(path, "abort"), out.abort);
  readDelay(reader, node["delay"], joinPath(path, "delay"), out.delay);
}

void checkFaultAgainstTimeouts(YamlReader& reader, const Fault& fault, const Timeouts& timeouts) {
  if (!fault.enabled || fault.delay.percent == 0) return;
  if (fault.delay.duration >= timeouts.stream_idle) {
    reader.error("fault.delay.duration",
                 "must be shorter than timeouts.stream_idle (" +
                     formatDuration(timeouts.stream_idle) +
                     "): a request held that long ends in 504 stream_timeout");
  } else if (timeouts.response.count() != 0 && fault.delay.duration >= timeouts.response) {
    reader.error("fault.delay.duration",
                 "must be shorter than timeouts.response (" + formatDuration(timeouts.response) +
                     "): a request held that long ends in 504 response_timeout");
  }
}

}  // namespace ferry::config
