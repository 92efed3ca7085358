#include "config/listener_http2_section.h"

namespace ferry::config {

namespace {
// RFC 9113 §6.5.2: a window is at most 2^31-1; below 16 KiB a stream would crawl a frame at
// a time. 16 MiB is plenty for one stream and keeps a connection's worst case bounded
// (max_concurrent_streams x window).
constexpr uint32_t kMinStreamWindow = 16 * 1024;
constexpr uint32_t kMaxStreamWindow = 16 * 1024 * 1024;
// One stream is the least that works; past 100000 one connection holds a worker's memory.
constexpr uint32_t kMaxConcurrentStreams = 100'000;
}  // namespace

void readListenerHttp2(YamlReader& reader, const YAML::Node& node, const std::string& path,
                       ListenerHttp2& out) {
  if (!reader.checkMap(node, path,
                       {"enabled", "max_concurrent_streams", "initial_stream_window_bytes"})) {
    return;
  }
  reader.readBool(node, path, "enabled", out.enabled);
  reader.readUint32(node, path, "max_concurrent_streams", 1, kMaxConcurrentStreams,
                    out.max_concurrent_streams);
  reader.readUint32(node, path, "initial_stream_window_bytes", kMinStreamWindow, kMaxStreamWindow,
                    out.initial_stream_window_bytes);
}

}  // namespace ferry::config
