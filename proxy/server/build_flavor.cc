#include "proxy/server/build_flavor.h"

// FERRY_BUILD_FLAVOR is defined for this file alone (proxy/server/CMakeLists.txt), so that
// changing the flavor recompiles one file, not every user of ferry_server.
#ifndef FERRY_BUILD_FLAVOR
#error "FERRY_BUILD_FLAVOR must be defined by the build (proxy/server/CMakeLists.txt)"
#endif

namespace ferry::server {

const char* buildFlavor() { return FERRY_BUILD_FLAVOR; }

}  // namespace ferry::server
