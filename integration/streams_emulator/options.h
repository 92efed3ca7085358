#pragma once
// Command-line flags of streams-emulator (see README.md). Parsed once in main().

#include <cstdint>
#include <string>
#include <vector>

#include "proxy/common/status.h"

namespace ferry::streams {

struct EmulatorOptions {
  std::string name = "inst-1";
  std::vector<std::string> members;  // default: {name}
  uint32_t shards = 16;
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string control_token;  // empty: the debug routes always answer 403
  double drain_seconds = 2.0;
  uint64_t sse_keepalive_ms = 15000;
  uint64_t body_limit = 32ull << 20;
  // Entries of /v1/debug/applied kept per stream (the newest); bounds memory in long benches.
  uint64_t applied_log_limit = 100000;
  // --journal: the store's changes are written here before each answer and replayed at start
  // (journal.h); empty: in memory only.
  std::string journal;
  // HTTPS: with a certificate and key, a second listener serves the same instance over TLS.
  std::string tls_cert;       // PEM chain, leaf first
  std::string tls_key;        // PEM private key
  std::string tls_client_ca;  // when set, TLS clients must present a certificate this CA signed
  uint16_t tls_port = 0;
};

StatusOr<EmulatorOptions> parseOptions(int argc, char** argv);
const char* usage();

}  // namespace ferry::streams
