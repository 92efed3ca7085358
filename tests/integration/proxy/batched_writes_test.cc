// `batched_writes`: with it (the default) a worker's writes of one loop pass leave in one
// io_uring submission; without it each socket is written on its own. Either way many clients
// at once get their answers whole, and /config says which is in effect.

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "proxy/event/write_batch.h"
#include "tests/integration/proxy/support/proxy_test_base.h"

namespace ferry::itest {
namespace {

class BatchedWritesTest : public ProxyTest, public ::testing::WithParamInterface<bool> {};

TEST_P(BatchedWritesTest, ManyClientsAtOnceGetTheirAnswersWholeAndConfigSaysWhich) {
  const bool configured = GetParam();
  FerryConfigParams params;
  params.extra_yaml = configured ? "batched_writes: true\n" : "batched_writes: false\n";
  startFerry(params);

  rapidjson::Document doc;
  auto config = ferry_->adminGet("/config");
  ASSERT_TRUE(config);
  doc.Parse(config->c_str());
  ASSERT_FALSE(doc.HasParseError()) << *config;
  EXPECT_EQ(doc["config"]["batched_writes"].GetBool(), configured);
  const bool usable = event::WriteBatch().available();
  EXPECT_EQ(doc["effective"]["batched_writes"].GetBool(), configured && usable) << *config;

  // Every client's request is in before the first answer goes: the answers then leave ferry
  // in the same loop passes, many sockets at a time when batched.
  constexpr int kClients = 24;
  std::vector<Socket> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(connectClient());
    ASSERT_TRUE(clients.back().sendAll(simpleGet("/client/" + std::to_string(i))));
  }
  std::vector<FakeUpstream::Request> requests;
  for (int i = 0; i < kClients; ++i) {
    auto request = upstream_.waitForRequest();
    ASSERT_TRUE(request) << "request " << i;
    requests.push_back(std::move(*request));
  }
  for (auto& request : requests) {
    // 100 KiB each: more than one write's worth for some of them.
    std::string body = request.message.path + "\n" + binaryBody(100 * 1024);
    ASSERT_TRUE(request.connection->sendAll(okResponse(body)));
  }
  for (int i = 0; i < kClients; ++i) {
    auto response = readResponse(clients[i], defaultDeadline());
    ASSERT_TRUE(response) << "client " << i;
    EXPECT_EQ(response->status, 200);
    const std::string path = "/client/" + std::to_string(i);
    const std::string expected = path + "\n" + binaryBody(100 * 1024);
    EXPECT_EQ(response->body.size(), expected.size()) << "client " << i;
    size_t differs = 0;
    while (differs < expected.size() && differs < response->body.size() &&
           response->body[differs] == expected[differs]) {
      ++differs;
    }
    EXPECT_EQ(differs, expected.size())
        << "client " << i << ": the body differs from byte " << differs << " on";
  }
}

INSTANTIATE_TEST_SUITE_P(BatchedWrites, BatchedWritesTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "On" : "Off"; });

}  // namespace
}  // namespace ferry::itest
