// ${NAME} and ${NAME:-default} in ferry's YAML: values only, typed after substitution, errors
// naming the key path.
#include "config/env_substitution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <map>

#include "tests/config/config_test_util.h"

namespace ferry::config {
namespace {

using ::testing::HasSubstr;

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string expanded(const std::string& text, const EnvLookup& lookup) {
  std::string error;
  std::optional<std::string> value = expandValue(text, lookup, error);
  EXPECT_TRUE(value.has_value()) << error;
  return value.value_or("<error>");
}

std::string errorOf(const std::string& text, const EnvLookup& lookup) {
  std::string error;
  EXPECT_FALSE(expandValue(text, lookup, error).has_value()) << text;
  return error;
}

TEST(EnvSubstitutionTest, ExpandsVariablesAndDefaults) {
  const EnvLookup env = fakeEnv({{"HOST", "10.0.0.7"}, {"EMPTY", ""}});
  EXPECT_EQ(expanded("${HOST}", env), "10.0.0.7");
  EXPECT_EQ(expanded("https://${HOST}:8443/x", env), "https://10.0.0.7:8443/x");
  EXPECT_EQ(expanded("${MISSING:-inst-1}", env), "inst-1");
  EXPECT_EQ(expanded("${EMPTY:-fallback}", env), "fallback") << "shell semantics for :-";
  EXPECT_EQ(expanded("${MISSING:-}", env), "");
  EXPECT_EQ(expanded("${HOST:-unused}", env), "10.0.0.7");
  EXPECT_EQ(expanded("cost $5 and $$HOME", env), "cost $5 and $HOME") << "$$ is a literal $";
  EXPECT_EQ(expanded("trailing $", env), "trailing $");
}

TEST(EnvSubstitutionTest, RefusesUnsetAndMalformedReferences) {
  const EnvLookup env = fakeEnv({});
  EXPECT_THAT(errorOf("${PORT}", env), HasSubstr("environment variable PORT is not set"));
  EXPECT_THAT(errorOf("${PORT", env), HasSubstr("unterminated"));
  EXPECT_THAT(errorOf("${1X}", env), HasSubstr("invalid variable name"));
  EXPECT_THAT(errorOf("${}", env), HasSubstr("invalid variable name"));
}

// The loader expands the process environment, then types the values: a plain ${PORT} is read as
// an integer, a quoted one stays a string, and a value from the environment cannot change the
// document's structure.
TEST(EnvSubstitutionTest, TheLoaderExpandsValuesBeforeTypingThem) {
  setenv("FERRY_TEST_INSTANCE", "inst-7", 1);
  setenv("FERRY_TEST_PORT", "18080", 1);
  setenv("FERRY_TEST_LOG", "/var/log/ferry #1: access.log", 1);
  const FerryConfig c = configOf(
      "instance_name: ${FERRY_TEST_INSTANCE}\n"
      "listener:\n  port: ${FERRY_TEST_PORT}\n"
      "admin:\n  port: ${FERRY_TEST_ADMIN_PORT:-19901}\n"
      "access_log: ${FERRY_TEST_LOG}\n");
  EXPECT_EQ(c.instance_name, "inst-7");
  EXPECT_EQ(c.listener.port, 18080);
  EXPECT_EQ(c.admin.port, 19901);
  EXPECT_EQ(c.access_log, "/var/log/ferry #1: access.log");
  EXPECT_THAT(errorsOf("instance_name: inst-1\nlistener:\n  port: \"${FERRY_TEST_PORT}\"\n"),
              ::testing::ElementsAre(HasSubstr("listener.port: must be")))
      << "a quoted value stays a string";
  unsetenv("FERRY_TEST_INSTANCE");
  unsetenv("FERRY_TEST_PORT");
  unsetenv("FERRY_TEST_LOG");
}

TEST(EnvSubstitutionTest, AnUnsetVariableIsAnErrorAtItsKeyPath) {
  unsetenv("FERRY_TEST_UNSET");
  EXPECT_THAT(errorsOf("instance_name: inst-1\nforwarding:\n  peer_domains:\n    - a.example\n"
                       "    - ${FERRY_TEST_UNSET}\n"),
              ::testing::Contains(::testing::StartsWith(
                  "forwarding.peer_domains[1]: environment variable FERRY_TEST_UNSET is not set")));
}

TEST(EnvSubstitutionTest, KeysAreNotExpanded) {
  setenv("FERRY_TEST_KEY", "workers", 1);
  EXPECT_THAT(errorsOf("instance_name: inst-1\n${FERRY_TEST_KEY}: 2\n"),
              ::testing::Contains(HasSubstr("unknown key")));
  unsetenv("FERRY_TEST_KEY");
}

// Anchors can make a document cyclic or deep beyond any config ferry reads; the walk stops with
// an error instead of recursing until the stack runs out (found by the config_loader fuzz target,
// tests/fuzz/corpus/config_loader/self-referencing-anchor).
TEST(EnvSubstitutionTest, ADocumentNestedTooDeepIsAnErrorNotACrash) {
  std::string yaml = "instance_name: inst-1\nlistener: ";
  for (int i = 0; i < 100; ++i) yaml += "[";
  for (int i = 0; i < 100; ++i) yaml += "]";
  yaml += "\n";
  EXPECT_THAT(errorsOf(yaml), ::testing::Contains(HasSubstr("nested too deep")));
}

}  // namespace
}  // namespace ferry::config
