// libFuzzer target: the downstream HTTP/1.1 codec (ServerCodec) fed arbitrary bytes in
// arbitrary reads (tests/fuzz/fuzz_input.h). Besides the sanitizers, it checks what the codec
// promises its connection (proxy/http/codec.h):
//  - no request event after a request's end, and a refusal's status is a 4xx or 5xx;
//  - the same bytes give the same requests whether read in one piece or split as the input
//    says (proxygen's byte-at-a-time rule, as tests/proxy/http/http1/server_codec_test.cc),
//    except how much of an unfinished body was passed on before an error.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "proxy/http/http1/codec_factory.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/proxy/http/http1/test_fakes.h"

namespace ferry::http::http1 {
namespace {

struct Outcome {
  bool ok = true;
  int status = 0;
  std::vector<std::string> requests;  // RecordedRequest::summary() of each
};

Outcome parse(fuzz::SplitInput input, bool split) {
  Buffer output;
  Buffer pending;
  FakeServerCallbacks callbacks;
  callbacks.on_end = answerOk;
  CodecSettings settings;
  // Small, so the 431 path is in reach of small inputs (1 KiB is the config minimum).
  settings.max_request_header_bytes = 2048;
  auto codec = createServerCodec(output, callbacks, settings);
  Outcome out;
  while (out.ok && !input.done()) {
    if (split) {
      pending.add(input.next());
    } else {
      pending.add(input.data());
      while (!input.done()) input.next();
    }
    out.ok = codec->dispatch(pending);
  }
  if (!out.ok) {
    out.status = codec->error().http_status;
    // The connection answers it before closing: an error status (400, 413, 431, 501, 505...).
    if (out.status < 400 || out.status > 599)
      fuzz::fail("ServerCodec refused with a non-error status");
  }
  for (const auto& r : callbacks.requests) {
    if (r->data_after_end) fuzz::fail("request data after the request's end");
    // A request cut short by an error may have passed on part of its body first (the codec
    // streams bodies): how much depends on the reads, so only its head is compared.
    out.requests.push_back(r->ended ? r->summary()
                           : r->headers
                               ? "unfinished " + r->headers->method + " " + r->headers->path
                               : "unfinished, no head");
  }
  return out;
}

}  // namespace
}  // namespace ferry::http::http1

namespace {

// What each read decoded, for the report of a broken invariant.
void printOutcome(const char* label, const ferry::http::http1::Outcome& o) {
  std::fprintf(stderr, "---- %s: ok=%d\n", label, o.ok ? 1 : 0);
  for (const auto& r : o.requests) std::fprintf(stderr, "%s\n--\n", r.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ferry::http::http1;
  const Outcome split = parse(ferry::fuzz::SplitInput(data, size), true);
  const Outcome whole = parse(ferry::fuzz::SplitInput(data, size), false);
  if (split.ok != whole.ok || split.requests != whole.requests) {
    printOutcome("split reads", split);
    printOutcome("one read", whole);
  }
  if (split.ok != whole.ok || split.status != whole.status) {
    ferry::fuzz::fail("split and whole reads disagree on accepting the bytes");
  }
  if (split.requests != whole.requests) {
    ferry::fuzz::fail("split and whole reads decoded different requests");
  }
  return 0;
}
