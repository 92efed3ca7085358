#include "proxy/server/allocator.h"

#ifdef FERRY_MIMALLOC
#include <mimalloc.h>
#endif

namespace ferry::server {

std::string allocatorName() {
#ifdef FERRY_MIMALLOC
  // mi_version() is major*100 + minor*10 + patch (209 = 2.0.9). Calling it also keeps
  // libmimalloc among the binary's needed libraries under --as-needed.
  const int v = mi_version();
  return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
         std::to_string(v % 10);
#else
  return "system";
#endif
}

}  // namespace ferry::server
