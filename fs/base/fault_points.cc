#include "fs/base/fault_points.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "fs/base/log.h"

namespace stampfs {

namespace {

struct FaultSpec {
  std::string point;  // empty: none
  int nth = 1;
  std::atomic<int> passages{0};
};

FaultSpec& Spec() {
  static FaultSpec spec;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("STAMPFS_FAULT");
    if (!env || !*env) return;
    if (!FaultPointsEnabled()) {
      LogWarning("STAMPFS_FAULT is ignored: this build has no fault points (STAMPFS_FAULT_POINTS)");
      return;
    }
    std::string text = env;
    const size_t colon = text.find(':');
    spec.point = text.substr(0, colon);
    if (colon == std::string::npos) return;
    const std::string rest = text.substr(colon + 1);  // "kill" or "kill:N"
    const size_t second = rest.find(':');
    if (second != std::string::npos) spec.nth = std::max(1, std::atoi(rest.c_str() + second + 1));
    LogWarning("fault point armed: " + spec.point + " (passage " + std::to_string(spec.nth) + ")");
  });
  return spec;
}

}  // namespace

bool FaultPointsEnabled() {
#ifdef STAMPFS_FAULT_POINTS
  return true;
#else
  return false;
#endif
}

void FaultPoint(const char* name) {
  FaultSpec& spec = Spec();
  if (spec.point.empty() || spec.point != name) return;
  if (spec.passages.fetch_add(1) + 1 != spec.nth) return;
  LogWarning(std::string("fault point ") + name + ": killing the process");
  kill(getpid(), SIGKILL);
}

}  // namespace stampfs
