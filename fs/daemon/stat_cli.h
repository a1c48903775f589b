// `stampfs stat [--json] MOUNTPOINT`: the live counters of the daemon serving
// MOUNTPOINT, read from its control socket (fs/daemon/control_socket.h).
//
// Without --json: one "name value" line per counter, sorted by name, byte
// counts also in human units. With --json: the daemon's flat JSON object as
// is (one line), e.g. {"bytes.down":0,"bytes.up":0,"requests.total":0,...}.
// Exit status 0, or 1 when no daemon serves MOUNTPOINT.
#pragma once

#include <string>
#include <vector>

namespace stampfs {

int StatCommand(const std::vector<std::string>& args);
std::string StatUsage();

}  // namespace stampfs
