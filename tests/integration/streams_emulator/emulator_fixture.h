#pragma once
// Starts one streams-emulator ("inst-1" of a 4-member fleet, 16 shards) for a test and stops
// it afterwards. Helpers find stream names owned by inst-1 or by another member, using the
// same ownership code as the emulator.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "integration/harness/http_client.h"
#include "integration/harness/process.h"

namespace ferry::testing {

using namespace std::chrono_literals;

class EmulatorTest : public ::testing::Test {
 protected:
  static constexpr char kToken[] = "test-token";

  void SetUp() override { startEmulator({}); }
  void TearDown() override {
    if (emulator_) emulator_->stop();
  }

  // (Re)starts the emulator with extra flags.
  void startEmulator(const std::vector<std::string>& extra);

  // Names owned by this emulator (inst-1) / by another member (its name in `owner`).
  std::string ownedName(const std::string& prefix) const;
  std::string foreignName(const std::string& prefix, std::string* owner) const;
  std::string shardOf(const std::string& name) const;

  // PUT /v1/stream/{name}; asserts 201.
  void createStream(const std::string& name, const std::string& content_type);
  StatusOr<HttpResponse> request(const std::string& method, const std::string& path,
                                 const Headers& headers = {}, const std::string& body = {});
  // POST /v1/debug/control with the token; asserts 200.
  void control(const std::string& json);

  std::vector<std::string> members_ = {"inst-1", "inst-2", "inst-3", "inst-4"};
  uint32_t shards_ = 16;
  std::unique_ptr<Process> emulator_;
  uint16_t port_ = 0;
};

}  // namespace ferry::testing
