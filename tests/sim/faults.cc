#include "tests/sim/faults.h"

#include <vector>

namespace stampfs::sim {

namespace {

Status Injected(int http, const char* code, Code c) {
  return Status(c, std::string("injected ") + std::to_string(http) + " " + code, http, code);
}

}  // namespace

MountFaults::MountFaults(std::shared_ptr<FaultPlan> table, std::shared_ptr<FaultPlan> blobs)
    : table_(std::move(table)), blobs_(std::move(blobs)) {
  Install();
}

void MountFaults::Install() {
  auto injector = [this](const std::string&, int) {
    if (spared_) return Status::Ok();
    if (frozen_steps_ > 0) return RequestTimeout();
    if (crash_plan_ != nullptr && crash_plan_->calls() >= crash_at_) return RequestTimeout();
    return Status::Ok();
  };
  table_->SetInjector(injector);
  blobs_->SetInjector(injector);
  if (outage_ && first_put_lands_ && blobs_->calls("Put") == put_calls_at_outage_) {
    blobs_->FailNth(1, RequestTimeout(), "Put", true);
  }
}

void MountFaults::Outage(int steps, bool first_put_lands) {
  frozen_steps_ = steps;
  outage_ = true;
  first_put_lands_ = first_put_lands;
  put_calls_at_outage_ = blobs_->calls("Put");
  Disarm();
}

void MountFaults::Disarm() {
  table_->Clear();
  blobs_->Clear();
  crash_plan_ = nullptr;
  spared_ = false;
  Install();
}

ArmedFault MountFaults::Arm(std::mt19937_64& rng, const Mix& mix, bool may_crash) {
  ArmedFault out;
  if (frozen_steps_ > 0) {
    out.description = "frozen";
    return out;
  }
  const int dice = static_cast<int>(rng() % 100);
  const int n = 1 + static_cast<int>(rng() % 4);
  if (may_crash && dice < 6) {
    const bool on_table = rng() % 2 == 0;
    const bool applied = rng() % 2 == 0;
    crash_plan_ = (on_table ? table_ : blobs_).get();
    crash_at_ = crash_plan_->calls() + n;
    if (applied) crash_plan_->FailNth(n, RequestTimeout(), "", true);
    out.crash = true;
    out.description = "crash at " + std::string(on_table ? "table" : "blob") + " call " +
                      std::to_string(n) + (applied ? " (applied, reply lost)" : "");
    return out;
  }
  if (dice >= 30) return out;
  struct Kind {
    const char* name;
    Status status;
  };
  std::vector<Kind> kinds = {
      {"timeout", RequestTimeout()}, {"500", Injected(500, "InternalError", Code::kInternal)},
      {"503", ServerBusy()},         {"409", Injected(409, "Conflict", Code::kConflict)},
      {"412", PreconditionFailed()},
  };
  if (mix.lying_404) kinds.push_back({"404", Injected(404, "ResourceNotFound", Code::kNotFound)});
  const Kind& k = kinds[rng() % kinds.size()];
  const bool on_table = rng() % 2 == 0;
  std::vector<std::string> ops;
  if (on_table) {
    ops = {"", "ExecuteBatch", "Get", "QueryPage", "Update", "Insert", "Delete"};
  } else {
    ops = {"Put", "Read", "GetProperties", "Copy", "ListBlobsPage"};
    if (mix.orphan_blob) ops.push_back("Delete");
  }
  const std::string op = ops[rng() % ops.size()];
  bool after = rng() % 3 == 0;
  // A lost reply of a blob write is the ambiguous Put of defect 8.
  if (after && !on_table && op == "Put" && !mix.ambiguous_put) after = false;
  (on_table ? table_ : blobs_)->FailNth(n, k.status, op, after);
  out.description = std::string(k.name) + " on call " + std::to_string(n) + " of " +
                    (on_table ? "table " : "blob ") + (op.empty() ? "any" : op) +
                    (after ? " (applied, reply lost)" : "");
  return out;
}

}  // namespace stampfs::sim
