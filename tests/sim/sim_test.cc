// The simulation in ctest: a range of seeds (STAMPFS_SIM_SEEDS=A-B overrides
// the default) must hold every invariant with the default mix.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "fs/base/log.h"
#include "tests/sim/driver.h"

namespace stampfs::sim {
namespace {

// Sized to take about a minute on the 2-core CI machine (tests/sim/README.md:
// 2500 seeds, 65 s).
constexpr uint64_t kDefaultSeeds = 2500;

TEST(Simulation, EverySeedOfTheDefaultMixHoldsTheInvariants) {
  SetLogLevel(LogLevel::kError);
  uint64_t first = 1, last = kDefaultSeeds;
  if (const char* env = std::getenv("STAMPFS_SIM_SEEDS")) {
    const std::string range = env;
    const size_t dash = range.find('-');
    first = std::strtoull(range.substr(0, dash).c_str(), nullptr, 10);
    last = dash == std::string::npos ? first
                                     : std::strtoull(range.substr(dash + 1).c_str(), nullptr, 10);
  }
  int failures = 0;
  for (uint64_t seed = first; seed <= last && failures < 3; ++seed) {
    SimConfig config;
    config.seed = seed;
    SimResult r = RunSimulation(config);
    if (!r.ok) {
      ++failures;
      config.keep_trace = true;
      ADD_FAILURE() << RunSimulation(config).Report(seed);
    }
  }
}

}  // namespace
}  // namespace stampfs::sim
