// Live counters of a running stampfs, read by `stampfs stat` through the
// control socket (fs/daemon/control_socket.h).
//
// A Counter is a relaxed atomic: bumping one costs one uncontended
// fetch_add, so the hot paths (every HTTP attempt, every FUSE operation) can
// count without locks. Counters live for the whole process: declare them
// with static storage (namespace scope or function-local static), never on
// the stack. Gauges are values computed when a snapshot is taken (dirty
// bytes of the block cache).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace stampfs {

class Counter {
 public:
  // Registers the counter under `name` (dotted, e.g. "requests.blob.get").
  explicit Counter(std::string name);
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Get() const { return value_.load(std::memory_order_relaxed); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::atomic<uint64_t> value_{0};
};

using Gauge = std::function<uint64_t()>;
// Adds (or replaces) a gauge read at every snapshot. The daemon registers
// these once it has built what they read; ClearGauges before that goes away.
void RegisterGauge(const std::string& name, Gauge gauge);
void ClearGauges();

// Every counter and gauge by name, sorted by name. Counters with the same
// name are summed.
std::vector<std::pair<std::string, uint64_t>> StatsSnapshot();
// The snapshot as one flat JSON object: {"bytes.down":123,...}.
std::string StatsJson();

}  // namespace stampfs
