// Faults a mount sees on its way to the shared account, decided by the
// seed: one injected failure armed for a step (a status on the Nth call of
// one table or blob operation, optionally applied before the reply is
// lost), a crash (from the Nth call on every call fails; the driver then
// kills the mount), and a frozen service (every call times out for a few
// steps). The table and the blobs have a FaultPlan each, so a fault can
// name a blob operation apart from the table's of the same name (Delete).
#pragma once

#include <memory>
#include <random>
#include <string>

#include "storage/fakes.h"
#include "tests/sim/mix.h"

namespace stampfs::sim {

struct ArmedFault {
  std::string description;  // for the trace; empty: none
  bool crash = false;       // the mount is killed after the step
};

class MountFaults {
 public:
  MountFaults(std::shared_ptr<FaultPlan> table, std::shared_ptr<FaultPlan> blobs);
  // Before a step of this mount: maybe arms one fault (or a crash when
  // `may_crash`). Frozen steps fail every call.
  ArmedFault Arm(std::mt19937_64& rng, const Mix& mix, bool may_crash);
  // After the step: rules that did not fire are dropped.
  void Disarm();
  void Freeze(int steps) { frozen_steps_ = steps; }
  // An outage of minutes: every call times out for `steps` steps of this
  // mount, each of which the driver stretches to 5-40 s with the pipeline
  // retrying; with `first_put_lands`, the first Put Blob in it is applied
  // before its answer is lost (sent as the service froze).
  void Outage(int steps, bool first_put_lands);
  bool InOutage() const { return outage_ && frozen_steps_ > 0; }
  // Every call times out (frozen, or an outage).
  bool Unreachable() const { return frozen_steps_ > 0; }
  // This step sees no fault at all, frozen or not (a part of the mix the
  // switches leave out); Disarm ends it.
  void Spare() {
    Disarm();
    spared_ = true;
  }
  void StepDone() {
    if (frozen_steps_ > 0) --frozen_steps_;
    if (frozen_steps_ == 0) outage_ = false;
  }
  void Thaw() {
    frozen_steps_ = 0;
    outage_ = false;
    Disarm();
  }

 private:
  void Install();
  std::shared_ptr<FaultPlan> table_;
  std::shared_ptr<FaultPlan> blobs_;
  int frozen_steps_ = 0;
  bool outage_ = false;
  // The outage's landing Put, armed again after every step until it fired:
  // while blobs_->calls("Put") is still `put_calls_at_outage_`.
  bool first_put_lands_ = false;
  int put_calls_at_outage_ = 0;
  bool spared_ = false;
  // A crash: from call `crash_at_` of `crash_plan_` on, every call of either
  // plan fails (that call itself applied first when the crash says so).
  FaultPlan* crash_plan_ = nullptr;
  int crash_at_ = 0;
};

}  // namespace stampfs::sim
