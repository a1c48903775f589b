// stampfs_sim: runs the deterministic simulation (tests/sim/run wraps it).
//   --seed N        one seed; prints its trace
//   --seeds A-B     a range; prints the report of every failing seed
//   --soak SECONDS  random seeds until the time is up
//   --steps K       operations per seed (default 60)
//   --enable NAME   turns on a part of the mix that hits a known defect
//   --verbose       stampfs's own warnings on stderr
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "fs/base/log.h"
#include "tests/sim/driver.h"

using stampfs::sim::Mix;
using stampfs::sim::RunSimulation;
using stampfs::sim::SimConfig;
using stampfs::sim::SimResult;

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: stampfs_sim (--seed N | --seeds A-B | --soak SECONDS) [--steps K] "
               "[--enable NAME]... [--verbose]\nswitches:");
  for (const std::string& n : Mix::Names()) std::fprintf(stderr, " %s", n.c_str());
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  SimConfig config;
  uint64_t first = 0, last = 0;
  double soak = 0;
  bool single = false;
  stampfs::SetLogLevel(stampfs::LogLevel::kError);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--seed" && has_value) {
      first = last = std::strtoull(argv[++i], nullptr, 10);
      single = true;
    } else if (arg == "--seeds" && has_value) {
      const std::string range = argv[++i];
      const size_t dash = range.find('-');
      if (dash == std::string::npos) return Usage();
      first = std::strtoull(range.substr(0, dash).c_str(), nullptr, 10);
      last = std::strtoull(range.substr(dash + 1).c_str(), nullptr, 10);
    } else if (arg == "--soak" && has_value) {
      soak = std::strtod(argv[++i], nullptr);
    } else if (arg == "--steps" && has_value) {
      config.steps = std::atoi(argv[++i]);
    } else if (arg == "--enable" && has_value) {
      if (!config.mix.Enable(argv[++i])) return Usage();
    } else if (arg == "--disable" && has_value) {
      if (!config.mix.Disable(argv[++i])) return Usage();
    } else if (arg == "--verbose") {
      stampfs::SetLogLevel(stampfs::LogLevel::kWarning);
    } else {
      return Usage();
    }
  }
  if (!single && last < first) return Usage();
  if (!single && soak <= 0 && last == 0) return Usage();
  config.keep_trace = single;
  int failures = 0;
  uint64_t runs = 0;
  auto one = [&](uint64_t seed) {
    config.seed = seed;
    SimResult r = RunSimulation(config);
    ++runs;
    if (single || !r.ok) std::printf("%s\n", r.Report(seed).c_str());
    if (!r.ok) ++failures;
    std::fflush(stdout);
  };
  const auto start = std::chrono::steady_clock::now();
  if (soak > 0) {
    std::random_device entropy;
    std::mt19937_64 seeds((static_cast<uint64_t>(entropy()) << 32) | entropy());
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < soak) {
      one(seeds() % 1000000000000ull);
    }
  } else {
    for (uint64_t seed = first; seed <= last; ++seed) one(seed);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu seed(s), %d failing, %.1f s\n", static_cast<unsigned long long>(runs), failures,
              secs);
  return failures == 0 ? 0 : 1;
}
