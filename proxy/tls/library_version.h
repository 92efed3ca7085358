#pragma once
// Which OpenSSL this ferry runs with, as OpenSSL names itself ("OpenSSL 3.0.19 27 Jan 2026"):
// the shared library's when ferry loads libssl and libcrypto, the archive's when the release
// build links them in (FERRY_STATIC_DEPS, root CMakeLists.txt), where a security update
// arrives only with a rebuild. Shown by `ferry --version` and as the `tls` label of
// ferry_build_info, as `nginx -V` and `haproxy -vv` name theirs.

namespace ferry::tls {

// Static text owned by OpenSSL; callable at any time, before any TLS context exists.
const char* libraryVersion();

}  // namespace ferry::tls
