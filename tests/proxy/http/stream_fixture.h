#pragma once
// One ActiveStream between fakes (stream_fakes.h): n scripted filters, a fake terminal filter
// the test plays the upstream through, a fake client encoder; every event in one log. Shared by
// active_stream_test.cc and filter_chain/filter_chain_test.cc.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/event/dispatcher.h"
#include "proxy/event/worker_context.h"
#include "proxy/http/active_stream.h"
#include "proxy/stats/proxy_stats.h"
#include "tests/proxy/http/stream_fakes.h"
#include "tests/support/stats/stats_lookup.h"

namespace ferry::http::testing {

class StreamFixture : public ::testing::Test {
 protected:
  StreamFixture() : proxy_stats_(store_) {}

  // Builds a stream with `n` scripted filters named f0..f{n-1}.
  void start(int n, uint32_t replay_limit = 64 * 1024) {
    config_.replay_limit = replay_limit;
    for (int i = 0; i < n; ++i) {
      auto factory = std::make_shared<ScriptedFilterFactory>("f" + std::to_string(i), log_);
      factories_.push_back(factory);
      config_.filters.push_back(factory);
    }
    terminal_factory_ = std::make_shared<FakeTerminalFactory>(log_);
    config_.terminal = terminal_factory_;
    stream_ = std::make_unique<ActiveStream>(owner_, encoder_, worker_, config_, proxy_stats_);
    terminal_ = terminal_factory_->last;
    ASSERT_NE(terminal_, nullptr);
  }
  ScriptedFilter& filter(int i) { return *factories_[i]->created.at(0); }

  void sendRequestHeaders(bool end_stream, const std::string& path = "/v1/stream/s1") {
    auto h = std::make_unique<RequestHeaders>();
    h->method = "POST";
    h->path = path;
    h->authority = "ferry";
    stream_->onRequestHeaders(std::move(h), end_stream);
  }
  void sendRequestData(const std::string& bytes, bool end_stream) {
    Buffer b;
    b.add(bytes);
    stream_->onRequestData(b, end_stream);
  }
  // A 409 from the local instance, held whole by filter `i` (StopAndBuffer); `then` runs when
  // the filter sees the whole body.
  void holdConflict(int i, std::function<FilterStatus(Buffer&)> then) {
    filter(i).on_response_headers = [](ResponseHeaders& h, bool) {
      return h.status == 409 ? FilterStatus::StopAndBuffer : FilterStatus::Continue;
    };
    filter(i).on_response_body = [then, this](Buffer& data, bool end) {
      if (!end) return FilterStatus::Continue;
      if (held_conflict_seen_) return FilterStatus::Continue;  // a later response
      held_conflict_seen_ = true;
      return then(data);
    };
  }
  void sendConflict() {
    terminal_->respond(409, {{"content-type", "application/json"}, {"streams-replay-to", "b"}},
                       false);
    terminal_->respondData("{\"error\":", false);
    terminal_->respondData("\"409\"}", true);
  }
  int64_t stat(const std::string& name) { return ferry::testing::statOf(store_, name); }

  testing::Log log_;
  stats::Store store_;
  stats::ProxyStats proxy_stats_;
  event::Dispatcher dispatcher_;
  event::WorkerSlots slots_;
  event::WorkerContext worker_{dispatcher_, slots_};  // the stream's worker
  StreamConfig config_;
  std::vector<std::shared_ptr<ScriptedFilterFactory>> factories_;
  std::shared_ptr<FakeTerminalFactory> terminal_factory_;
  FakeStreamOwner owner_;
  FakeResponseEncoder encoder_{log_};
  std::unique_ptr<ActiveStream> stream_;
  FakeTerminal* terminal_ = nullptr;
  bool held_conflict_seen_ = false;
  const UpstreamTarget owner_target_{"b", "http", "10.0.0.2", 8081, ""};
};

}  // namespace ferry::http::testing
