// Fault injection through real sockets (docs/fault-injection.md): the real ferry, with
// `fault:` enabled, in front of the real streams-emulator. An aborted append gets the
// configured status and never reaches the instance; a delayed one reaches it after the delay;
// requests without the header pass untouched; each access-log record says what was injected;
// --validate names a bad fault key. Every wait awaits a condition.

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "integration/harness/process.h"
#include "tests/integration/proxy/support/ferry_process.h"
#include "tests/integration/proxy/support/http_message.h"

namespace ferry::itest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::unique_ptr<testing::Process> startEmulator(uint16_t* bound) {
  testing::ProcessOptions o;
  o.argv = {EMULATOR_BIN, "--name", "inst-1", "--members", "inst-1",
            "--shards",   "4",      "--port", "0"};
  auto p = testing::Process::start(std::move(o));
  if (!p.isOk()) return nullptr;
  auto line = (*p)->waitForLine(R"(^streams-emulator inst-1 listening on 127\.0\.0\.1:(\d+)$)",
                                std::chrono::seconds(10));
  if (!line.isOk()) return nullptr;
  *bound = static_cast<uint16_t>(std::stoi(line->at(1)));
  return std::move(*p);
}

std::vector<std::string> logLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Polls the log until it holds `count` records (the worker writes after the response).
std::vector<std::string> waitForRecords(const std::string& path, size_t count) {
  for (Deadline deadline = defaultDeadline(); Clock::now() < deadline;) {
    auto got = logLines(path);
    if (got.size() >= count) return got;
    std::this_thread::sleep_for(5ms);
  }
  return logLines(path);
}

// The record's "fault": its string, "null", or "<absent>".
std::string faultOf(const std::string& record) {
  rapidjson::Document doc;
  doc.Parse(record.c_str(), record.size());
  if (doc.HasParseError() || !doc.IsObject()) return "<not a JSON object>";
  auto it = doc.FindMember("fault");
  if (it == doc.MemberEnd()) return "<absent>";
  if (it->value.IsNull()) return "null";
  return it->value.IsString() ? it->value.GetString() : "<not a string>";
}

class FaultTest : public ::testing::Test {
 protected:
  void start(const std::string& fault_yaml) {
    emulator_ = startEmulator(&emulator_port_);
    ASSERT_NE(emulator_, nullptr);
    log_ = writeTempFile("", ".log");
    FerryConfigParams params;
    params.upstream_port = emulator_port_;
    params.access_log = log_;
    params.extra_yaml = "fault: " + fault_yaml + "\n";
    std::string error;
    ferry_ = FerryProcess::start(renderConfig(params), &error);
    ASSERT_NE(ferry_, nullptr) << error;
  }
  // One request on a fresh connection; the response, or nullopt.
  std::optional<HttpMessage> send(const std::string& method, const std::string& path,
                                  const std::string& body, bool fault_header) {
    Socket client = Socket::connectTo(ferry_->port());
    EXPECT_TRUE(client.valid());
    std::string request = method + " " + path + " HTTP/1.1\r\nHost: test.local\r\n" +
                          "Content-Type: application/octet-stream\r\n" +
                          (fault_header ? "X-Ferry-Fault: 1\r\n" : "") +
                          "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    if (!client.sendAll(request)) return std::nullopt;
    return readResponse(client, defaultDeadline());
  }

  uint16_t emulator_port_ = 0;
  std::unique_ptr<testing::Process> emulator_;
  std::string log_;
  std::unique_ptr<FerryProcess> ferry_;
};

TEST_F(FaultTest, AbortAnswersWithTheStatusAndTheInstanceNeverSeesTheRequest) {
  start("{enabled: true, abort: {percent: 100, status: 429}}");
  EXPECT_NE(ferry_->stderrText().find("WARNING: fault injection is on"), std::string::npos)
      << ferry_->stderrText();
  // Without the header: the instance creates the stream and takes an append.
  auto created = send("PUT", "/v1/stream/fault-a", "", false);
  ASSERT_TRUE(created);
  EXPECT_EQ(created->status, 201) << created->raw_head << created->body;
  auto appended = send("POST", "/v1/stream/fault-a", "kept", false);
  ASSERT_TRUE(appended);
  EXPECT_EQ(appended->status, 204) << appended->raw_head << appended->body;

  // With it: ferry's own 429, the fault_injected envelope, nothing upstream.
  auto aborted = send("POST", "/v1/stream/fault-a", "lost", true);
  ASSERT_TRUE(aborted);
  EXPECT_EQ(aborted->status, 429) << aborted->raw_head;
  EXPECT_NE(aborted->body.find(R"("code":"fault_injected")"), std::string::npos) << aborted->body;
  EXPECT_EQ(ferry_->stat("ferry_fault_aborts_total"), 1);
  EXPECT_EQ(ferry_->stat("ferry_fault_delays_total"), 0);

  auto read = send("GET", "/v1/stream/fault-a?offset=-1", "", false);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->status, 200) << read->raw_head;
  EXPECT_EQ(read->body, "kept") << "the aborted append reached the instance";

  auto records = waitForRecords(log_, 4);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(faultOf(records[0]), "null") << records[0];
  EXPECT_EQ(faultOf(records[1]), "null") << records[1];
  EXPECT_EQ(faultOf(records[2]), "abort") << records[2];
  EXPECT_NE(records[2].find(R"("status":429)"), std::string::npos) << records[2];
  EXPECT_NE(records[2].find(R"("upstream":null)"), std::string::npos) << records[2];
  EXPECT_EQ(faultOf(records[3]), "null") << records[3];
}

TEST_F(FaultTest, DelayedRequestReachesTheInstanceAfterTheDelay) {
  start("{enabled: true, delay: {percent: 100, duration: 300ms}}");
  auto created = send("PUT", "/v1/stream/fault-d", "", false);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->raw_head << created->body;
  const auto sent = Clock::now();
  auto delayed = send("POST", "/v1/stream/fault-d", "late", true);
  const auto took = Clock::now() - sent;
  ASSERT_TRUE(delayed);
  EXPECT_EQ(delayed->status, 204) << delayed->raw_head << delayed->body;
  EXPECT_GE(took, 300ms);
  EXPECT_EQ(ferry_->stat("ferry_fault_delays_total"), 1);
  EXPECT_EQ(ferry_->stat("ferry_fault_aborts_total"), 0);
  auto read = send("GET", "/v1/stream/fault-d?offset=-1", "", false);
  ASSERT_TRUE(read);
  EXPECT_EQ(read->body, "late");
  auto records = waitForRecords(log_, 3);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(faultOf(records[1]), "delay") << records[1];
  EXPECT_NE(records[1].find(R"("upstream":"local")"), std::string::npos) << records[1];
}

TEST(FaultValidateTest, ValidateNamesTheBadKey) {
  const std::string config = writeTempFile(
      "instance_name: inst-1\nfault: {enabled: true, abort: {percent: 100, status: 200}}\n");
  CommandResult result = runFerry({"--validate", "--config", config});
  EXPECT_EQ(result.exit_code, 1) << result.out;
  EXPECT_NE(result.out.find("fault.abort.status: must be an integer 400..599"), std::string::npos)
      << result.out;
}

}  // namespace
}  // namespace ferry::itest
