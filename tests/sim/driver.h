// One simulation run: a seed decides the scenario (how many mounts, whether
// faults are injected), every operation and every fault. After each step
// the invariants are checked; at the end every mount is quiesced (handles
// closed, killed mounts restarted and their journals replayed, clean
// unmounts) and a fresh mount reads the account back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/sim/schedule.h"

namespace stampfs::sim {

struct SimConfig {
  uint64_t seed = 1;
  int steps = 60;
  Mix mix;
  bool keep_trace = false;  // the trace even when the run passes
  std::string root;         // cache dirs go below; default: a temp dir
};

struct SimResult {
  bool ok = true;
  std::string violation;
  std::string scenario;
  std::vector<std::string> trace;  // one line per step
  std::string Report(uint64_t seed) const;
};

SimResult RunSimulation(const SimConfig& config);

}  // namespace stampfs::sim
