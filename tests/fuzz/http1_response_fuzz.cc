// libFuzzer target: the upstream HTTP/1.1 codec (Http1ClientCodec) reading arbitrary response
// bytes in arbitrary reads (tests/fuzz/fuzz_input.h), then the upstream closing. The first
// data byte picks the request the responses answer (GET, HEAD: no body whatever the head says,
// a POST sent whole, a POST still sending its body). As the pool does, the next request starts
// from the end of the last response while the codec says the connection may be kept.
// Checks, besides the sanitizers: no response event after a response's end, and the same
// responses whether the bytes are read in one piece or split (but for how much of an
// unfinished body was passed on before an error).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "proxy/http/http1/codec_factory.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/proxy/http/http1/test_fakes.h"

namespace ferry::http::http1 {
namespace {

// More requests on one connection add no new paths.
constexpr size_t kMaxResponses = 32;

struct Outcome {
  bool ok = true;
  bool closed_ok = true;
  std::vector<std::string> responses;  // RecordedResponse::summary() of each
};

class Driver {
 public:
  explicit Driver(uint8_t kind) : kind_(kind % 4) {}

  Outcome run(fuzz::SplitInput input, bool split) {
    startRequest();
    Outcome out;
    while (out.ok && !input.done()) {
      if (split) {
        pending_.add(input.next());
      } else {
        pending_.add(input.data());
        while (!input.done()) input.next();
      }
      out.ok = codec_->dispatch(pending_);
    }
    // The close ends the current response or resets its stream.
    codec_->onConnectionClosed();
    out.closed_ok = responses_.back()->resets.empty();
    for (const auto& r : responses_) {
      if (r->data_after_end) fuzz::fail("response data after the response's end");
      // A response cut short may have passed on part of its body first (bodies stream): how
      // much depends on the reads, so only its head is compared.
      out.responses.push_back(r->ended     ? r->summary()
                              : r->headers ? "unfinished " + std::to_string(r->headers->status)
                                           : "unfinished, no head");
    }
    return out;
  }

 private:
  void startRequest() {
    responses_.push_back(std::make_unique<RecordedResponse>());
    RecordedResponse& response = *responses_.back();
    response.on_end = [this] {
      if (codec_->keepAlive() && responses_.size() < kMaxResponses) startRequest();
    };
    RequestEncoder& encoder = codec_->newStream(response, response);
    RequestHeaders headers;
    headers.method = kind_ == 1 ? "HEAD" : kind_ == 0 ? "GET" : "POST";
    headers.path = "/";
    headers.authority = "upstream.test";
    if (kind_ == 2) headers.headers.add("Content-Length", "5");
    encoder.encodeHeaders(headers, kind_ < 2);
    if (kind_ == 2) {
      Buffer body = bufferOf("hello");
      encoder.encodeData(body, true);
    }
  }

  const uint8_t kind_;
  Buffer output_;
  Buffer pending_;
  std::unique_ptr<Http1ClientCodec> codec_ = createClientCodec(output_);
  std::vector<std::unique_ptr<RecordedResponse>> responses_;
};

}  // namespace
}  // namespace ferry::http::http1

namespace {

// What each read decoded, for the report of a broken invariant.
void printOutcome(const char* label, const ferry::http::http1::Outcome& o) {
  std::fprintf(stderr, "---- %s: ok=%d\n", label, o.ok ? 1 : 0);
  for (const auto& r : o.responses) std::fprintf(stderr, "%s\n--\n", r.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::http::http1;
  ferry::fuzz::SplitInput probe(data, size);
  if (probe.data().empty()) return 0;
  const uint8_t kind = static_cast<uint8_t>(probe.data()[0]);
  // The request kind byte is not response data: feed what follows it.
  const size_t header = size - probe.data().size();
  std::vector<uint8_t> rest(data, data + header);
  rest.insert(rest.end(), data + header + 1, data + size);
  const Outcome split = Driver(kind).run(ferry::fuzz::SplitInput(rest.data(), rest.size()), true);
  const Outcome whole = Driver(kind).run(ferry::fuzz::SplitInput(rest.data(), rest.size()), false);
  if (split.ok != whole.ok || split.responses != whole.responses) {
    printOutcome("split reads", split);
    printOutcome("one read", whole);
  }
  if (split.ok != whole.ok || split.closed_ok != whole.closed_ok) {
    ferry::fuzz::fail("split and whole reads disagree on accepting the bytes");
  }
  if (split.responses != whole.responses) {
    ferry::fuzz::fail("split and whole reads decoded different responses");
  }
  return 0;
}
