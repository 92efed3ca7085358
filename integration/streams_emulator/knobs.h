#pragma once
// Test knobs of the emulator, set with POST /v1/debug/control (X-Control-Token required).
//
// Every control POST replaces the whole knob set with the knobs it names ({} clears them all;
// "reset_knobs":true says so explicitly). "members" and "handover_ms" are not knobs: they
// change the member set (a hand-over) only when present. Knobs never apply to /health,
// /readyz, /livez or /v1/debug/*.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/common/status.h"

namespace ferry::streams {

struct Knobs {
  bool early_409 = false;                   // non-owner: answer 409 right after the request head
  uint64_t early_409_after_bytes = 0;       // non-owner: answer 409 after N body bytes (0 = off)
  uint64_t delay_ms = 0;                    // delay every data-plane answer
  std::optional<uint64_t> cut_after_bytes;  // send head + N body bytes, then close
  bool append_timeout = false;              // apply appends, then answer 408 append_timeout
  bool refuse = false;                      // close every new connection right after accept
  bool reset = false;                       // RST (SO_LINGER 0) data-plane requests at their head
};

struct ControlUpdate {
  Knobs knobs;
  std::optional<std::vector<std::string>> members;
  uint64_t handover_ms = 0;
};

// Parses a control body; an error names the offending field.
StatusOr<ControlUpdate> parseControl(std::string_view body);

// The knob set and members as JSON (the control endpoint's answer).
std::string describeControl(const Knobs& knobs, const std::vector<std::string>& members);

}  // namespace ferry::streams
