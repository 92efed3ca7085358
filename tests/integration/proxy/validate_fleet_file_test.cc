// `ferry --validate` reads the fleet file as the running ferry would (issue 10, finding 8):
// valid JSON followed by a NUL and garbage is refused like the same garbage without the NUL.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/integration/proxy/support/ferry_process.h"

namespace ferry::itest {
namespace {

CommandResult validateWithFleetFile(const std::string& fleet_json) {
  const std::string fleet = writeTempFile(fleet_json, ".json");
  const std::string config = writeTempFile(
      "instance_name: inst-1\n"
      "local_instance: {address: 127.0.0.1, port: 8080}\n"
      "forwarding: {enabled: true, allow_http_peers: true, fleet_file: " +
      fleet + "}\n");
  CommandResult result = runFerry({"--validate", "--config", config});
  ::unlink(config.c_str());
  ::unlink(fleet.c_str());
  return result;
}

TEST(ValidateFleetFileTest, RefusesGarbageAfterTheJsonEvenBehindANul) {
  const std::string valid = R"({"inst-2":"http://127.0.0.1:8081"})";
  CommandResult good = validateWithFleetFile(valid + "\n");
  EXPECT_EQ(good.exit_code, 0) << good.out;
  CommandResult plain = validateWithFleetFile(valid + "garbage");
  EXPECT_EQ(plain.exit_code, 1) << plain.out;
  CommandResult nul = validateWithFleetFile(valid + std::string("\0garbage", 8));
  EXPECT_EQ(nul.exit_code, 1) << nul.out;
  EXPECT_NE(nul.out.find("invalid JSON at offset 34"), std::string::npos) << nul.out;
}

}  // namespace
}  // namespace ferry::itest
