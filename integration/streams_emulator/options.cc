#include "integration/streams_emulator/options.h"

#include <cstdlib>
#include <string_view>

#include "integration/streams_emulator/ownership.h"

namespace ferry::streams {
namespace {

std::vector<std::string> splitComma(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) comma = s.size();
    if (comma > start) out.emplace_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool parseUint(const char* s, uint64_t& out) {
  char* end = nullptr;
  out = std::strtoull(s, &end, 10);
  return end != s && *end == '\0';
}

}  // namespace

const char* usage() {
  return "usage: streams-emulator --name inst-1 --members inst-1,inst-2 --shards 16\n"
         "         [--host 127.0.0.1] [--port 0] [--control-token T] [--drain-seconds 2]\n"
         "         [--sse-keepalive-ms 15000] [--body-limit-bytes 33554432]\n"
         "         [--applied-log-limit 100000] [--journal FILE]\n"
         "         [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE] [--tls-port 0]]\n";
}

StatusOr<EmulatorOptions> parseOptions(int argc, char** argv) {
  EmulatorOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return invalidArgument(std::string(flag) + ": missing value");
    const char* value = argv[++i];
    uint64_t n = 0;
    if (flag == "--name") {
      o.name = value;
    } else if (flag == "--members") {
      o.members = splitComma(value);
    } else if (flag == "--shards") {
      if (!parseUint(value, n) || n == 0 || n > (1u << 20) || !isPowerOfTwo(n)) {
        return invalidArgument("--shards: expected a power of two");
      }
      o.shards = static_cast<uint32_t>(n);
    } else if (flag == "--host") {
      o.host = value;
    } else if (flag == "--port") {
      if (!parseUint(value, n) || n > 65535) return invalidArgument("--port: expected 0..65535");
      o.port = static_cast<uint16_t>(n);
    } else if (flag == "--control-token") {
      o.control_token = value;
    } else if (flag == "--drain-seconds") {
      char* end = nullptr;
      o.drain_seconds = std::strtod(value, &end);
      if (end == value || *end != '\0' || o.drain_seconds < 0) {
        return invalidArgument("--drain-seconds: expected a non-negative number");
      }
    } else if (flag == "--sse-keepalive-ms") {
      if (!parseUint(value, n) || n == 0)
        return invalidArgument("--sse-keepalive-ms: expected > 0");
      o.sse_keepalive_ms = n;
    } else if (flag == "--applied-log-limit") {
      if (!parseUint(value, n) || n == 0)
        return invalidArgument("--applied-log-limit: expected > 0");
      o.applied_log_limit = n;
    } else if (flag == "--body-limit-bytes") {
      if (!parseUint(value, n) || n == 0)
        return invalidArgument("--body-limit-bytes: expected > 0");
      o.body_limit = n;
    } else if (flag == "--journal") {
      if (*value == '\0') return invalidArgument("--journal: expected a file path");
      o.journal = value;
    } else if (flag == "--tls-cert") {
      o.tls_cert = value;
    } else if (flag == "--tls-key") {
      o.tls_key = value;
    } else if (flag == "--tls-client-ca") {
      o.tls_client_ca = value;
    } else if (flag == "--tls-port") {
      if (!parseUint(value, n) || n > 65535)
        return invalidArgument("--tls-port: expected 0..65535");
      o.tls_port = static_cast<uint16_t>(n);
    } else {
      return invalidArgument(std::string(flag) + ": unknown flag");
    }
  }
  if (o.name.empty()) return invalidArgument("--name: must not be empty");
  if (o.members.empty()) o.members.push_back(o.name);
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    return invalidArgument("--tls-cert and --tls-key go together");
  }
  if (!o.tls_client_ca.empty() && o.tls_cert.empty()) {
    return invalidArgument("--tls-client-ca needs --tls-cert and --tls-key");
  }
  return o;
}

}  // namespace ferry::streams
