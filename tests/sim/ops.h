// Runs one scheduled operation on a mount through the calls fs/fuse/fuse_ops.cc
// makes (path walk by Lookup, Create/Open, Write, Flush, Release, Truncate,
// Unlink + Unlinked, Rename + DeleteBlobWhenUnused, ...), and keeps the
// Ledger (and, in reference runs, the POSIX model) in step with what each
// call returned.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/sim/ledger.h"
#include "tests/sim/model.h"
#include "tests/sim/observe.h"
#include "tests/sim/schedule.h"
#include "tests/sim/world.h"

namespace stampfs::sim {

struct OpenHandle {
  int id = 0;
  int mount = 0;
  uint64_t ino = 0;
  uint64_t fh = kAnyHandle;  // OpenResult::handle, passed to Write as fs/fuse/fuse_ops.cc does
  uint64_t model_file = 0;   // reference runs
  std::string path;          // at open (a file not in the table yet has no other)
};

class Executor {
 public:
  Executor(World& world, Ledger& ledger, const Mix& mix, PosixModel* model);

  // Runs `op` (a kCreate/kOpen gets its handle id here). `before`: the
  // account before the step. Returns the outcome for the trace; sets
  // `violation` when the reference model disagrees (invariant 3) or an
  // acknowledgement is not kept (invariant 1).
  std::string Run(Op& op, const Snapshot& before, int step, bool fault_armed,
                  std::string* violation);
  // The mount is gone (kill -9): its handles with it.
  void Killed(int mount);
  std::vector<HandleRef> Handles() const;
  // The paths (at open) of the files `mount` has open.
  std::vector<std::string> OpenPaths(int mount) const {
    std::vector<std::string> out;
    for (const auto& [id, h] : handles_) {
      if (h.mount == mount) out.push_back(h.path);
    }
    return out;
  }
  bool AnyOpen() const { return !handles_.empty(); }
  uint64_t InoOf(int handle) const {
    auto it = handles_.find(handle);
    return it == handles_.end() ? 0 : it->second.ino;
  }
  // Closes every handle of `mount` (quiescing), as steps of their own.
  std::vector<Op> CloseAll(int mount) const;
  // commit=async: every view of `m` whose local acknowledgement the mount has
  // committed since (or, the mount down, ever will: CommitAll ran) is
  // checked against the account (invariant 1).
  void ResolvePromises(SimMount& m, int step, std::string* violation);

 private:
  Result<Attr> Resolve(SimMount& m, const std::string& path);
  Result<Attr> ResolveParent(SimMount& m, const std::string& path);
  std::string OpenFile(Op& op, SimMount& m, const Snapshot& before, Status* status);
  std::string WriteTo(Op& op, SimMount& m, bool append, int step, Status* status);
  std::string Commit(Op& op, SimMount& m, const Snapshot& before, int step, Status* status,
                     std::string* violation);
  std::string Truncate(Op& op, SimMount& m, const Snapshot& before, int step, Status* status,
                       std::string* violation);
  std::string ChangeNames(Op& op, SimMount& m, const Snapshot& before, bool fault_armed, int step,
                          Status* status);
  // Reference runs: the errno POSIX gives for `op` (nullopt: not compared).
  std::optional<int> Expect(const Op& op);
  void NoteSize(int mount, uint64_t ino, uint64_t size);
  std::string AppendClose(Op& op, const Snapshot& before, int step, bool fault_armed,
                          std::string* violation);
  // A commit acknowledged: checked now (commit=close, fsync) or once
  // committed (commit=async flush and close).
  void Acknowledge(SimMount& m, View& v, bool local, int step, std::string* violation);
  bool Kept(SimMount& m, uint64_t ino) const;
  bool HeldUnlinked(const std::string& path);
  std::optional<std::string> SkipCreate(const Op& op, const Snapshot& before);
  bool MovesOpenFile(const std::string& from, const Snapshot& before) const;

  World& world_;
  Ledger& ledger_;
  Mix mix_;
  PosixModel* model_;
  std::map<int, OpenHandle> handles_;
  int next_handle_ = 1;
  // The kernel's i_size per (mount, ino), as its last reply or write left it.
  std::map<std::pair<int, uint64_t>, uint64_t> kernel_size_;
};

// Bytes a write of step `step` puts in the file: unique to the step.
std::string WriteBytes(int step, int mount, uint64_t len);

}  // namespace stampfs::sim
