// Body: a 409 that arrives while the client is still uploading. ferry replays what it kept,
// then streams the rest of the client's body to the owner: no byte lost or sent twice.
#include "tests/integration/forwarding/forwarding_test.h"

namespace ferry::fwdtest {
namespace {

constexpr size_t kEntry = 0;
constexpr size_t kOwner = 1;

std::string chunk(const std::string& data) {
  char size[32];
  snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

class UploadFixture : public ForwardingTest {
 protected:
  // Uploads `first`, waits until the 409 turned into a forward, then uploads `rest` in
  // `pieces` chunks; checks the owner applied first+rest exactly once.
  void uploadAcross409(size_t first_size, size_t rest_size, int pieces, bool wait_for_409 = true) {
    const std::string s = cell_->streamOwnedBy(kOwner, "up");
    createAt(kOwner, s);
    // inst-1's instance answers 409 after 1000 body bytes, before the upload ends.
    ASSERT_TRUE(cell_->emulator(kEntry).control(R"({"early_409_after_bytes":1000})"));
    const std::string body = patternBody(first_size + rest_size, 7);

    CellClient c;
    ASSERT_TRUE(connectTo(c, cell_->ferry(kEntry)).isOk());
    ASSERT_TRUE(c.send("POST /v1/stream/" + s +
                       " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n" +
                       chunk(body.substr(0, first_size)))
                    .isOk());
    // The forward has started (the early 409 arrived) before the rest is sent.
    Ferry& ferry = cell_->ferry(kEntry);
    if (wait_for_409) {
      ASSERT_GE(ferry.waitForStat(perOwner("ferry_forward_attempts_total", "inst-2"), 1), 1);
    }
    const size_t piece = rest_size / pieces;
    for (int i = 0; i < pieces; ++i) {
      const size_t off = first_size + i * piece;
      const size_t n = i == pieces - 1 ? body.size() - off : piece;
      ASSERT_TRUE(c.send(chunk(body.substr(off, n))).isOk());
    }
    ASSERT_TRUE(c.send("0\r\n\r\n").isOk());

    auto r = c.readResponse(Ms(10000));
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r->status, 204) << r->body;
    EXPECT_EQ(r->headerOr("streams-forwarded-to"), "inst-2");
    auto applied = appliedAt(kOwner, s);
    ASSERT_EQ(applied.size(), 1u);
    EXPECT_EQ(applied[0].bytes, body.size());
    EXPECT_EQ(applied[0].body_sha256, sha256Hex(body));
    EXPECT_EQ(applied[0].forwarded_by, "inst-1");
    EXPECT_TRUE(appliedAt(kEntry, s).empty());
  }
};
using UploadTest = OverTransports<UploadFixture>;
FORWARDING_OVER_TRANSPORTS(UploadTest);

TEST_P(UploadTest, Early409MidUploadAppliesTheWholeBodyOnce) { uploadAcross409(4000, 9000, 3); }

// The part after the 409 goes straight to the owner: it is not bounded by the replay limit.
TEST_P(UploadTest, RestOfTheBodyPastTheReplayLimitStillReachesTheOwner) {
  uploadAcross409(4000, 100000, 5);
}

// The rest sent back to back, racing the 409 (all within the replay limit, so the outcome is
// the same whichever side of the 409 each piece lands on).
TEST_P(UploadTest, BodyRacingThe409AppliesTheWholeBodyOnce) {
  uploadAcross409(2000, 40000, 20, /*wait_for_409=*/false);
}

}  // namespace
}  // namespace ferry::fwdtest
