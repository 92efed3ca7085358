// libFuzzer target: the YAML config loader (config/config_loader.h), which a reload runs on
// whatever file is on disk. yaml-cpp throws; the loader must turn every throw into errors
// that name a key path, and report an error whenever it returns no config. A config that
// names files (fleet_file, TLS files) reads them: the fuzzer runs in a scratch directory.

#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config_loader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string yaml(reinterpret_cast<const char*>(data), size);
  const ferry::config::LoadResult result = ferry::config::loadConfigString(yaml);
  if (result.config.has_value() == !result.errors.empty()) {
    ferry::fuzz::fail("the loader returned a config with errors, or neither");
  }
  for (const auto& e : result.errors) {
    if (e.message.empty()) ferry::fuzz::fail("a config error without a message");
  }
  return 0;
}
