#include "storage/stats.h"

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

namespace stampfs {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<const Counter*> counters;  // static storage: never removed
  std::map<std::string, Gauge> gauges;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // outlives every static Counter
  return *registry;
}

}  // namespace

Counter::Counter(std::string name) : name_(std::move(name)) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.counters.push_back(this);
}

void RegisterGauge(const std::string& name, Gauge gauge) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.gauges[name] = std::move(gauge);
}

void ClearGauges() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.gauges.clear();
}

std::vector<std::pair<std::string, uint64_t>> StatsSnapshot() {
  std::map<std::string, uint64_t> values;
  Registry& r = TheRegistry();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (const Counter* c : r.counters) values[c->name()] += c->Get();
    for (const auto& [name, gauge] : r.gauges) values[name] = gauge();
  }
  return {values.begin(), values.end()};
}

std::string StatsJson() {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [name, value] : StatsSnapshot()) object[name] = value;
  return object.dump();
}

}  // namespace stampfs
