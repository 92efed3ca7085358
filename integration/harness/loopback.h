#pragma once
// A listening TCP socket on 127.0.0.1 at a port the kernel picks: what every in-process test
// server (fake upstreams, scripted owners) starts from.

#include <cstdint>

namespace ferry::testing {

// Returns the listening fd (SO_REUSEADDR, close-on-exec, backlog 128) and sets `port`, or -1.
int listenOnLoopback(uint16_t& port);

}  // namespace ferry::testing
