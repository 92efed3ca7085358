#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/fuzz_input.h"

namespace ferry::fuzz {

void fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

}  // namespace ferry::fuzz
