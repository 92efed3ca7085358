#include "tests/integration/streams_emulator/emulator_fixture.h"

#include "integration/streams_emulator/ownership.h"

namespace ferry::testing {

void EmulatorTest::startEmulator(const std::vector<std::string>& extra) {
  if (emulator_) emulator_->stop();
  ProcessOptions o;
  o.argv = {FERRY_STREAMS_EMULATOR_PATH,
            "--name",
            "inst-1",
            "--members",
            "inst-1,inst-2,inst-3,inst-4",
            "--shards",
            std::to_string(shards_),
            "--port",
            "0",
            "--control-token",
            kToken,
            "--drain-seconds",
            "0"};
  o.argv.insert(o.argv.end(), extra.begin(), extra.end());
  auto p = Process::start(std::move(o));
  ASSERT_TRUE(p.isOk()) << p.status().message();
  emulator_ = std::move(*p);
  auto line =
      emulator_->waitForLine(R"(^streams-emulator inst-1 listening on 127\.0\.0\.1:(\d+)$)", 10s);
  ASSERT_TRUE(line.isOk()) << line.status().message() << emulator_->stderrText();
  port_ = static_cast<uint16_t>(std::stoi(line->at(1)));
}

std::string EmulatorTest::ownedName(const std::string& prefix) const {
  for (int i = 0;; ++i) {
    std::string n = prefix + "-" + std::to_string(i);
    if (streams::ownerIndex(n, shards_, members_) == 0) return n;
  }
}

std::string EmulatorTest::foreignName(const std::string& prefix, std::string* owner) const {
  for (int i = 0;; ++i) {
    std::string n = prefix + "-" + std::to_string(i);
    const int idx = streams::ownerIndex(n, shards_, members_);
    if (idx != 0) {
      if (owner) *owner = members_[idx];
      return n;
    }
  }
}

std::string EmulatorTest::shardOf(const std::string& name) const {
  return streams::shardOf(name, shards_);
}

void EmulatorTest::createStream(const std::string& name, const std::string& content_type) {
  auto r = request("PUT", "/v1/stream/" + name, {{"content-type", content_type}});
  ASSERT_TRUE(r.isOk()) << r.status().message();
  ASSERT_EQ(r->status, 201) << r->body;
}

StatusOr<HttpResponse> EmulatorTest::request(const std::string& method, const std::string& path,
                                             const Headers& headers, const std::string& body) {
  return httpRequest(port_, method, path, headers, body);
}

void EmulatorTest::control(const std::string& json) {
  auto r = request("POST", "/v1/debug/control",
                   {{"x-control-token", kToken}, {"content-type", "application/json"}}, json);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  ASSERT_EQ(r->status, 200) << r->body;
}

}  // namespace ferry::testing
