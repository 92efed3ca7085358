#include "integration/cell/fleet_files.h"

#include <cstdio>
#include <fstream>

namespace ferry::testing {

std::string urlsJson(const std::vector<std::pair<std::string, uint16_t>>& members,
                     const std::string& scheme) {
  std::string out = "{";
  for (size_t i = 0; i < members.size(); ++i) {
    if (i > 0) out.append(",");
    out.append("\"").append(members[i].first).append("\":\"").append(scheme);
    out.append("://127.0.0.1:");
    out.append(std::to_string(members[i].second)).append("\"");
  }
  out.append("}\n");
  return out;
}

std::string ferryConfigYaml(const FerryConfigParams& p) {
  std::string out;
  out.append("instance_name: ").append(p.instance_name).append("\n");
  out.append("listener: {address: 127.0.0.1, port: 0");
  if (!p.listener_tls.empty()) out.append(", tls: ").append(p.listener_tls);
  out.append("}\n");
  out.append("local_instance: {address: 127.0.0.1, port: ")
      .append(std::to_string(p.emulator_port))
      .append("}\n");
  out.append("admin: {address: 127.0.0.1, port: 0}\n");
  out.append("workers: ").append(std::to_string(p.workers)).append("\n");
  out.append("forwarding: {enabled: ")
      .append(p.forwarding_enabled ? "true" : "false")
      .append(", fleet_file: ")
      .append(p.fleet_file)
      .append(p.forwarding_tls.empty() ? ", allow_http_peers: true"
                                       : ", allow_http_peers: false, tls: " + p.forwarding_tls)
      .append(", owner_routing: {enabled: ")
      .append(p.owner_routing ? "true" : "false")
      .append("}}\n");
  return out;
}

Status writeFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) return internalError("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return internalError("cannot rename " + tmp);
  return Status::ok();
}

}  // namespace ferry::testing
