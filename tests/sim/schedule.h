// The seeded schedule: which operation runs next, on which mount, with which
// arguments. Names come from a pool of ordinary and hostile names; parts of
// the mix that reach a known, still open defect of issue 12 are left out
// unless their switch (Mix) turns them on.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/sim/mix.h"

namespace stampfs::sim {

enum class OpKind {
  kCreate,
  kOpen,
  kWrite,
  kAppend,
  kFlush,
  kFsync,
  kClose,
  kTruncate,
  kUnlink,
  kRename,
  kMkdir,
  kRmdir,
  kSymlink,
  kChmod,
  kSetXattr,
  kKill,
  kRestart,
  kFreeze,
  kAppendClose,  // open O_APPEND, write, close: a shell's >>
  kPump,         // commit=async: the pipeline commits what is due (CommitDue)
  kForget,       // the kernel FORGETs every inode it does not hold open (drop_caches)
  kOutage,       // commit=async: the service gone for minutes, the pipeline retrying
};

struct Op {
  OpKind kind = OpKind::kCreate;
  int mount = 0;
  std::string path, path2;  // path2: rename target, symlink target
  // outage: `excl` = its first Put lands
  bool excl = false, trunc = false, noreplace = false;
  int handle = 0;
  // write; truncate size in `off`; freeze steps, outage rounds in `len`
  uint64_t off = 0, len = 0;
  uint32_t mode = 0;
  std::string Describe() const;
};

struct HandleRef {
  int id;
  int mount;
};

class Schedule {
 public:
  Schedule(const Mix& mix, bool faults, bool async = false);
  // `up[i]`: mount i is running; `handles`: the open handles; `existing`:
  // paths the account holds (half the paths drawn are one of them).
  Op Next(std::mt19937_64& rng, const std::vector<bool>& up, const std::vector<HandleRef>& handles,
          const std::vector<std::string>& existing) const;
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  std::string Path(std::mt19937_64& rng) const;
  std::string AnyPath(std::mt19937_64& rng) const;  // a file path or a directory
  std::string Existing(std::mt19937_64& rng, const std::vector<std::string>& existing,
                       std::string drawn) const;
  std::vector<std::string> names_;
  std::vector<std::string> dirs_;
  bool faults_;
  bool async_;
};

// Whether a step of this kind commits (flush, fsync, close, truncate).
bool Commits(OpKind kind);

}  // namespace stampfs::sim
