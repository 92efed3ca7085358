#include "proxy/peers/peer_table_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace ferry::peers {
namespace {

using ::testing::HasSubstr;

const PeerPolicy kHttpsOnly{};
const PeerPolicy kAllowHttp{true, {}};

PeerOrigin mustParse(std::string_view url, const PeerPolicy& policy = kHttpsOnly) {
  auto origin = parseOrigin(url, policy);
  EXPECT_TRUE(origin.isOk()) << url << ": " << origin.status().message();
  return origin.isOk() ? *origin : PeerOrigin{};
}

// Bytes made printable for a failure message.
std::string quoted(const std::string& bytes) {
  std::string out;
  for (char c : bytes) {
    out += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : "\\x" + std::to_string(c);
  }
  return out;
}

std::string errorOf(std::string_view url, const PeerPolicy& policy = kHttpsOnly) {
  auto origin = parseOrigin(url, policy);
  EXPECT_FALSE(origin.isOk()) << url << " was accepted as " << origin->origin();
  EXPECT_EQ(origin.status().code(), StatusCode::InvalidArgument);
  return origin.status().message();
}

TEST(ParseOriginTest, AcceptsBareOrigins) {
  EXPECT_EQ(mustParse("https://10.0.0.1:8443"), (PeerOrigin{"https", "10.0.0.1", 8443}));
  EXPECT_EQ(mustParse("https://a.example"), (PeerOrigin{"https", "a.example", 443}));
  EXPECT_EQ(mustParse("http://127.0.0.1", kAllowHttp), (PeerOrigin{"http", "127.0.0.1", 80}));
  EXPECT_EQ(mustParse("http://127.0.0.1:8081", kAllowHttp).origin(), "http://127.0.0.1:8081");
  EXPECT_EQ(mustParse("https://[::1]:8443"), (PeerOrigin{"https", "::1", 8443}));
  EXPECT_EQ(mustParse("https://[2001:DB8::1]"), (PeerOrigin{"https", "2001:db8::1", 443}));
  EXPECT_EQ(mustParse("https://a_b-c.example:1"), (PeerOrigin{"https", "a_b-c.example", 1}));
  EXPECT_EQ(mustParse("https://h:65535").port, 65535);
  EXPECT_EQ(mustParse("https://localhost").host, "localhost");
}

TEST(ParseOriginTest, NormalisesCase) {
  EXPECT_EQ(mustParse("HTTPS://Streams-1.Example:8443"),
            (PeerOrigin{"https", "streams-1.example", 8443}));
}

TEST(ParseOriginTest, ToleratesOneTrailingSlash) {
  EXPECT_EQ(mustParse("https://a.example:8443/"), (PeerOrigin{"https", "a.example", 8443}));
  EXPECT_EQ(errorOf("https://a.example//"), "path not allowed in \"https://a.example//\"");
}

TEST(ParseOriginTest, RejectsUserinfo) {
  EXPECT_EQ(errorOf("https://u@h"), "userinfo not allowed in \"https://u@h\"");
  EXPECT_EQ(errorOf("https://u:p@h:443"), "userinfo not allowed in \"https://u:p@h:443\"");
  EXPECT_EQ(errorOf("https://@h"), "userinfo not allowed in \"https://@h\"");
}

TEST(ParseOriginTest, RejectsPath) {
  EXPECT_EQ(errorOf("https://h/v1"), "path not allowed in \"https://h/v1\"");
  EXPECT_EQ(errorOf("https://h:8443/a/b/"), "path not allowed in \"https://h:8443/a/b/\"");
}

TEST(ParseOriginTest, RejectsQuery) {
  EXPECT_EQ(errorOf("https://h?x=1"), "query not allowed in \"https://h?x=1\"");
  EXPECT_EQ(errorOf("https://h/?"), "query not allowed in \"https://h/?\"");
}

TEST(ParseOriginTest, RejectsFragment) {
  EXPECT_EQ(errorOf("https://h#f"), "fragment not allowed in \"https://h#f\"");
  EXPECT_EQ(errorOf("https://h/#"), "fragment not allowed in \"https://h/#\"");
}

TEST(ParseOriginTest, RejectsHttpUnlessAllowed) {
  EXPECT_THAT(errorOf("http://10.0.0.1:8080"), HasSubstr("http not allowed"));
  EXPECT_THAT(errorOf("http://10.0.0.1:8080"), HasSubstr("\"http://10.0.0.1:8080\""));
  mustParse("http://10.0.0.1:8080", kAllowHttp);
}

TEST(ParseOriginTest, RejectsOtherSchemesAndNonUrls) {
  EXPECT_THAT(errorOf("ftp://h"), HasSubstr("scheme must be https or http"));
  EXPECT_THAT(errorOf("ws://h", kAllowHttp), HasSubstr("scheme must be https or http"));
  EXPECT_THAT(errorOf("10.0.0.1:8443"), HasSubstr("not an origin"));
  EXPECT_THAT(errorOf("://h"), HasSubstr("not an origin"));
  EXPECT_THAT(errorOf("https:/h"), HasSubstr("not an origin"));
  EXPECT_EQ(errorOf(""), "empty origin");
}

TEST(ParseOriginTest, RejectsBadPorts) {
  for (const char* url :
       {"https://h:0", "https://h:65536", "https://h:99999999", "https://h:", "https://h:80a",
        "https://h:-1", "https://h:+80", "https://[::1]:", "https://[::1]:0", "https://h:1:2"}) {
    EXPECT_THAT(errorOf(url), HasSubstr("port must be 1..65535")) << url;
  }
}

TEST(ParseOriginTest, RejectsBadHosts) {
  EXPECT_THAT(errorOf("https://"), HasSubstr("missing host"));
  EXPECT_THAT(errorOf("https://:443"), HasSubstr("missing host"));
  EXPECT_THAT(errorOf("https://1.2.3"), HasSubstr("invalid IPv4 literal"));
  EXPECT_THAT(errorOf("https://999.1.1.1"), HasSubstr("invalid IPv4 literal"));
  EXPECT_THAT(errorOf("https://[::g]"), HasSubstr("invalid IPv6 literal"));
  EXPECT_THAT(errorOf("https://[::1"), HasSubstr("invalid IPv6 literal"));
  EXPECT_THAT(errorOf("https://[fe80::1%25eth0]"), HasSubstr("invalid IPv6 literal"));
  EXPECT_THAT(errorOf("https://[::1]x"), HasSubstr("invalid authority"));
  EXPECT_THAT(errorOf("https://::1"), HasSubstr("missing host"));  // unbracketed IPv6
  EXPECT_THAT(errorOf("https://a..b"), HasSubstr("invalid host"));
  EXPECT_THAT(errorOf("https://.a"), HasSubstr("invalid host"));
  EXPECT_THAT(errorOf("https://a%2eb"), HasSubstr("invalid host"));
  EXPECT_THAT(errorOf("https://a\\b"), HasSubstr("invalid host"));
}

TEST(ParseOriginTest, RejectsWhitespaceAndControlBytes) {
  EXPECT_THAT(errorOf("https://h "), HasSubstr("invalid character"));
  EXPECT_THAT(errorOf(" https://h"), HasSubstr("invalid character"));
  // The bad byte is escaped in the message, so a publication can't forge log lines.
  EXPECT_EQ(errorOf(std::string("https://h\n") + "x"), "invalid character in \"https://h\\x0ax\"");
}

TEST(ParseOriginTest, DomainAllowList) {
  const PeerPolicy policy{false, {"streams.internal", "Example.COM"}};
  mustParse("https://streams.internal", policy);
  mustParse("https://streams-1.cell-a.streams.internal:8443", policy);
  mustParse("https://A.example.com", policy);
  EXPECT_EQ(errorOf("https://evil.example", policy),
            "host \"evil.example\" not in peer_domains in \"https://evil.example\"");
  // A suffix match must be on a label boundary.
  EXPECT_THAT(errorOf("https://evilstreams.internal", policy), HasSubstr("not in peer_domains"));
  EXPECT_THAT(errorOf("https://streams.internal.evil", policy), HasSubstr("not in peer_domains"));
  // IP literals are rejected unless listed exactly.
  EXPECT_THAT(errorOf("https://10.0.0.1", policy), HasSubstr("not in peer_domains"));
  const PeerPolicy ips{false, {"10.0.0.1", "[::1]", "0.1"}};
  mustParse("https://10.0.0.1:8443", ips);
  mustParse("https://[::1]:8443", ips);
  EXPECT_THAT(errorOf("https://10.0.0.2", ips), HasSubstr("not in peer_domains"));
  EXPECT_THAT(errorOf("https://10.0.0.1", PeerPolicy{false, {"0.0.1"}}),
              HasSubstr("not in peer_domains"));
}

TEST(ParseFleetUrlsTest, ParsesATable) {
  auto table = parseFleetUrls(
      R"({"streams-1":"https://10.0.0.1:8443","streams-2":"https://10.0.0.2:8443/"})", kHttpsOnly);
  ASSERT_TRUE(table.isOk()) << table.status().message();
  ASSERT_EQ(table->size(), 2u);
  EXPECT_EQ(table->at("streams-1"), (PeerOrigin{"https", "10.0.0.1", 8443}));
  EXPECT_EQ(table->at("streams-2"), (PeerOrigin{"https", "10.0.0.2", 8443}));
}

TEST(ParseFleetUrlsTest, EmptyObjectIsAnEmptyTable) {
  auto table = parseFleetUrls(" {} \n", kHttpsOnly);
  ASSERT_TRUE(table.isOk());
  EXPECT_TRUE(table->empty());
}

TEST(ParseFleetUrlsTest, OneBadEntryRejectsTheWholeTable) {
  auto table = parseFleetUrls(
      R"({"inst-1":"https://h1","inst-2":"https://u@h","inst-3":"https://h3"})", kHttpsOnly);
  ASSERT_FALSE(table.isOk());
  EXPECT_EQ(table.status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(table.status().message(), "inst-2: userinfo not allowed in \"https://u@h\"");
}

TEST(ParseFleetUrlsTest, EachRejectionNamesTheEntry) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"a":"https://h/p"})", "a: path not allowed in \"https://h/p\""},
      {R"({"a":"https://h?q"})", "a: query not allowed in \"https://h?q\""},
      {R"({"a":"https://h#f"})", "a: fragment not allowed in \"https://h#f\""},
      {R"({"a":"https://h:0"})", "a: port must be 1..65535 in \"https://h:0\""},
  };
  for (const auto& [json, message] : cases) {
    auto table = parseFleetUrls(json, kHttpsOnly);
    ASSERT_FALSE(table.isOk()) << json;
    EXPECT_EQ(table.status().message(), message);
  }
  auto http = parseFleetUrls(R"({"a":"http://h"})", kHttpsOnly);
  ASSERT_FALSE(http.isOk());
  EXPECT_THAT(http.status().message(), ::testing::StartsWith("a: http not allowed"));
  EXPECT_TRUE(parseFleetUrls(R"({"a":"http://h"})", kAllowHttp).isOk());
  auto domain =
      parseFleetUrls(R"({"a":"https://x.other"})", PeerPolicy{false, {"streams.internal"}});
  ASSERT_FALSE(domain.isOk());
  EXPECT_EQ(domain.status().message(),
            "a: host \"x.other\" not in peer_domains in \"https://x.other\"");
}

TEST(ParseFleetUrlsTest, RejectsBadNames) {
  auto table = parseFleetUrls(R"({"ok":"https://h","bad name":"https://h"})", kHttpsOnly);
  ASSERT_FALSE(table.isOk());
  EXPECT_THAT(table.status().message(),
              ::testing::StartsWith("\"bad name\": not a valid instance name"));
  EXPECT_FALSE(parseFleetUrls(R"({"":"https://h"})", kHttpsOnly).isOk());
  EXPECT_FALSE(parseFleetUrls(R"({"a/b":"https://h"})", kHttpsOnly).isOk());
  auto nul = parseFleetUrls(R"({"a\u0000b":"https://h"})", kHttpsOnly);
  ASSERT_FALSE(nul.isOk());
  EXPECT_THAT(nul.status().message(), HasSubstr("\"a\\x00b\""));
}

TEST(ParseFleetUrlsTest, RejectsNonObjectJson) {
  for (const char* json : {R"(["https://h"])", R"("https://h")", "42", "null", "true"}) {
    auto table = parseFleetUrls(json, kHttpsOnly);
    ASSERT_FALSE(table.isOk()) << json;
    EXPECT_THAT(table.status().message(), HasSubstr("must be a JSON object")) << json;
  }
  EXPECT_THAT(parseFleetUrls("[]", kHttpsOnly).status().message(), HasSubstr("(got array)"));
}

TEST(ParseFleetUrlsTest, RejectsNonStringValues) {
  auto table = parseFleetUrls(R"({"inst-1":"https://h","inst-2":8443})", kHttpsOnly);
  ASSERT_FALSE(table.isOk());
  EXPECT_EQ(table.status().message(), "\"inst-2\": origin must be a string (got number)");
  EXPECT_THAT(parseFleetUrls(R"({"a":{"url":"https://h"}})", kHttpsOnly).status().message(),
              HasSubstr("(got object)"));
  EXPECT_THAT(parseFleetUrls(R"({"a":null})", kHttpsOnly).status().message(),
              HasSubstr("(got null)"));
}

TEST(ParseFleetUrlsTest, RejectsInvalidJson) {
  for (const char* json : {"", "{", R"({"a":"https://h",})", R"({"a":"https://h"} {})",
                           R"({'a':'https://h'})", "{\"a\":\"https://h\"} x"}) {
    auto table = parseFleetUrls(json, kHttpsOnly);
    ASSERT_FALSE(table.isOk()) << json;
    EXPECT_THAT(table.status().message(), ::testing::StartsWith("invalid JSON at offset ")) << json;
  }
}

// RapidJSON's streams end at a NUL: without the length check, valid JSON, a NUL and garbage
// passed (the same garbage without the NUL was refused).
TEST(ParseFleetUrlsTest, RejectsAnythingAfterTheRootEvenBehindANul) {
  const std::string valid = R"({"a":"https://h"})";
  for (const std::string& tail : {std::string("\0garbage", 8), std::string("\0", 1),
                                  std::string(" \n\0{}", 5), std::string("\0\0\0", 3)}) {
    auto table = parseFleetUrls(valid + tail, kHttpsOnly);
    ASSERT_FALSE(table.isOk()) << quoted(tail);
    EXPECT_THAT(table.status().message(), ::testing::StartsWith("invalid JSON at offset "))
        << quoted(tail);
  }
  // Trailing JSON whitespace is still fine.
  EXPECT_TRUE(parseFleetUrls(valid + " \t\r\n", kHttpsOnly).isOk());
  auto offset = parseFleetUrls(valid + std::string(" \0x", 3), kHttpsOnly);
  ASSERT_FALSE(offset.isOk());
  EXPECT_THAT(offset.status().message(), HasSubstr("offset 18"));
}

TEST(ParseFleetUrlsTest, RejectsDuplicateNames) {
  auto table = parseFleetUrls(R"({"a":"https://h1","a":"https://h2"})", kHttpsOnly);
  ASSERT_FALSE(table.isOk());
  EXPECT_EQ(table.status().message(), "\"a\": duplicate name");
}

TEST(ParsePeerMapTest, ValidatesEveryEntry) {
  auto ok = parsePeerMap({{"inst-1", "https://h1:8443"}, {"inst-2", "https://h2"}}, kHttpsOnly);
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok->at("inst-2"), (PeerOrigin{"https", "h2", 443}));
  auto bad = parsePeerMap({{"inst-1", "https://h1"}, {"inst-2", "https://u@h"}}, kHttpsOnly);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().message(), "inst-2: userinfo not allowed in \"https://u@h\"");
  auto name = parsePeerMap({{"in st", "https://h1"}}, kHttpsOnly);
  ASSERT_FALSE(name.isOk());
  EXPECT_THAT(name.status().message(), HasSubstr("\"in st\": not a valid instance name"));
}

class LoadFleetFileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    files_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& f : files_) {
      std::remove(f.c_str());
    }
  }
  std::vector<std::string> files_;
};

TEST_F(LoadFleetFileTest, ReadsAndParses) {
  const std::string path = write("peers_ok.json", R"({"a":"https://h:1"})");
  auto table = loadFleetFile(path, kHttpsOnly);
  ASSERT_TRUE(table.isOk()) << table.status().message();
  EXPECT_EQ(table->at("a"), (PeerOrigin{"https", "h", 1}));
}

TEST_F(LoadFleetFileTest, ReportsParseErrors) {
  const std::string path = write("peers_bad.json", R"({"a":"https://u@h"})");
  EXPECT_EQ(loadFleetFile(path, kHttpsOnly).status().message(),
            "a: userinfo not allowed in \"https://u@h\"");
}

TEST_F(LoadFleetFileTest, MissingFileAndDirectory) {
  auto missing = loadFleetFile("/nonexistent/urls.json", kHttpsOnly);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  EXPECT_EQ(missing.status().message(),
            "cannot read \"/nonexistent/urls.json\": No such file or directory");
  auto dir = loadFleetFile(::testing::TempDir(), kHttpsOnly);
  ASSERT_FALSE(dir.isOk());
  EXPECT_THAT(dir.status().message(), HasSubstr("is a directory"));
}

TEST_F(LoadFleetFileTest, RejectsAFileWithANulAndGarbageAfterValidJson) {
  const std::string path =
      write("peers_nul.json", std::string("{\"a\":\"https://h:1\"}\0garbage", 27));
  auto table = loadFleetFile(path, kHttpsOnly);
  ASSERT_FALSE(table.isOk());
  EXPECT_THAT(table.status().message(), HasSubstr("invalid JSON at offset 19"));
}

TEST_F(LoadFleetFileTest, RejectsHugeFiles) {
  const std::string path = write("peers_huge.json", std::string(kMaxFleetFileBytes + 1, ' '));
  EXPECT_THAT(loadFleetFile(path, kHttpsOnly).status().message(), HasSubstr("larger than"));
}

TEST(ValidatePeerDomainTest, AcceptsNamesAndLiterals) {
  for (const char* d :
       {"streams.internal", "Example.COM", "localhost", "10.0.0.1", "::1", "[::1]", "a_b-c.d"}) {
    EXPECT_TRUE(validatePeerDomain(d).isOk()) << d;
  }
  for (const char* d : {"", ".example.com", "example.com.", "a..b", "*.example.com", "a b", "1.2.3",
                        "[::g]", "https://example.com", "example.com:443"}) {
    EXPECT_FALSE(validatePeerDomain(d).isOk()) << d;
  }
}

}  // namespace
}  // namespace ferry::peers
