// Issue 30: another tool writing into the container (switch `foreign`). It
// puts new blobs (no stampfs metadata), overwrites blobs (stampfs's too) and
// deletes them, straight on the shared account; each change queues a blob
// event, delivered to the owner mount (m0) late, twice, out of order or
// never, as the seed decides. The mounts run with -o foreign_ttl
// (world.h). Its own random stream: a run without it draws what it drew.
//
// Checked here (the ledger takes the tool as one more writer, invariants 1
// and 2):
// - a read through a mount returns one whole version of the file, never a
//   mix (a version seen in the account, put by the tool, or the reading
//   mount's own data), even when the tool overwrites between two reads;
// - the bound: right after an event is applied (its ApplyEvent ok), and
//   after foreign_ttl has passed and a listing checked the directory, the
//   mount shows the tool's version (or its removal) when the blob is still
//   at it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "storage/blob_events.h"
#include "tests/sim/faults.h"
#include "tests/sim/ledger.h"
#include "tests/sim/observe.h"
#include "tests/sim/world.h"

namespace stampfs::sim {

// One action of the tool, or of the checks it brings: a step of the trace,
// checked like any other (`actor`: the mount whose calls changed the account,
// -1 for the tool itself).
struct ForeignStep {
  std::string line;
  int actor = -1;
  std::string violation;
};

class ForeignActor {
 public:
  // `open_paths(m)`: the paths (at open) of the files mount m has open.
  ForeignActor(uint64_t seed, World& world, Ledger& ledger, std::deque<MountFaults>& faults,
               std::function<std::vector<std::string>(int)> open_paths);

  // Between two steps of the schedule: what the tool does now (often
  // nothing), one action at a time; `step` returns each for its checks.
  // `step`: the schedule's step just run.
  void Act(const Snapshot& before, int step, const std::function<void(ForeignStep&)>& done);
  // The tool wrote something: a conflict copy may have a reason (invariant 6),
  // and fsck may meet what no mount adopted yet.
  bool wrote() const { return writes_ > 0; }
  // The end: every blob the tool touched is adopted through a refresh of it
  // on the raw account (`stampfs import --refresh` of those names). Returns
  // the blobs that cannot be mapped to a file (reported as problems).
  std::set<std::string> CatchUp(std::string* trace);

 private:
  struct Version {
    std::string blob, path, content, etag;  // etag/content "" for a delete
    bool put = true;
  };
  struct Queued {
    BlobEvent event;
    Version version;
  };
  void Write(const Snapshot& before, ForeignStep& out);
  void Deliver(const Snapshot& before, ForeignStep& out);
  void Read(const Snapshot& before, ForeignStep& out);
  void Wait(const Snapshot& before, ForeignStep& out);
  // The event of the next change to `blob`: the next sequencer and id.
  BlobEvent NextEvent(BlobEvent::Kind kind, const std::string& blob, const std::string& api);
  // Puts `content` at `blob` (path `path`), or deletes it; queues its event.
  std::string Put(const std::string& blob, const std::string& path, const std::string& content,
                  const Snapshot& before);
  std::string Delete(const std::string& blob, const std::string& path, const Snapshot& before);
  // The bound: mount `m` shows `v` (still the blob's version) right now.
  void CheckShown(SimMount& m, const Version& v, bool list, const Snapshot& before,
                  std::string* violation, std::string* note);
  std::string Later(SimMount& m, const std::string& path);
  bool Reachable(const SimMount& m) const;
  std::string PathOfBlob(const std::string& blob, const Snapshot& before) const;

  std::mt19937_64 rng_;
  World& world_;
  Ledger& ledger_;
  std::deque<MountFaults>& faults_;
  std::function<std::vector<std::string>(int)> open_paths_;
  std::deque<Queued> queue_;  // events not delivered yet
  std::vector<Version> history_;
  std::map<std::string, std::string> paths_;  // blob -> path, for blobs it put
  int writes_ = 0;
  int step_ = 0;
  uint64_t sequencer_ = 0;
  int events_ = 0;
};

}  // namespace stampfs::sim
