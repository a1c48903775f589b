#include "tests/sim/schedule.h"

#include "tests/sim/model.h"

namespace stampfs::sim {

bool Mix::Enable(const std::string& name) {
  if (name == "append-race") return append_race = true;
  if (name == "write-after-conflict") return write_after_conflict = true;
  if (name == "symlink-over-file-xdir") return symlink_over_file_xdir = true;
  if (name == "twin-names") return twin_names = true;
  if (name == "lying-404") return lying_404 = true;
  if (name == "commit-faults") return commit_faults = true;
  if (name == "rename-open") return rename_open = true;
  if (name == "orphan-blob") return orphan_blob = true;
  if (name == "reuse-unlinked") return reuse_unlinked = true;
  if (name == "dir-faults") return dir_faults = true;
  if (name == "ambiguous-put") return ambiguous_put = true;
  if (name == "async-commit") return async_commit = true;
  if (name == "forget") return forget = true;
  if (name == "outage") return outage = true;
  if (name == "foreign") return foreign = true;
  return false;
}

bool Mix::Disable(const std::string& name) {
  if (name == "async-commit") return !(async_commit = false);
  if (name == "reuse-unlinked") return !(reuse_unlinked = false);
  if (name == "forget") return !(forget = false);
  if (name == "outage") return !(outage = false);
  if (name == "foreign") return !(foreign = false);
  return false;
}

std::vector<std::string> Mix::Names() {
  return {"append-race",
          "write-after-conflict",
          "symlink-over-file-xdir",
          "twin-names",
          "lying-404",
          "commit-faults",
          "ambiguous-put",
          "dir-faults",
          "rename-open",
          "orphan-blob",
          "reuse-unlinked",
          "async-commit",
          "forget",
          "outage",
          "foreign"};
}

namespace {

const char* KindName(OpKind k) {
  static const char* const kNames[] = {
      "create",  "open",   "write",        "append", "flush",   "fsync", "close",    "truncate",
      "unlink",  "rename", "mkdir",        "rmdir",  "symlink", "chmod", "setxattr", "kill",
      "restart", "freeze", "append-close", "pump",   "forget",  "outage"};
  return kNames[static_cast<int>(k)];
}

}  // namespace

bool Commits(OpKind kind) {
  return kind == OpKind::kFlush || kind == OpKind::kFsync || kind == OpKind::kClose ||
         kind == OpKind::kTruncate || kind == OpKind::kAppendClose || kind == OpKind::kPump;
}

std::string Op::Describe() const {
  std::string s = "m" + std::to_string(mount) + " " + KindName(kind);
  switch (kind) {
    case OpKind::kCreate:
    case OpKind::kOpen:
      s += " '" + Printable(path) + "'" + (excl ? " O_EXCL" : "") + (trunc ? " O_TRUNC" : "") +
           (handle ? " -> h" + std::to_string(handle) : "");
      break;
    case OpKind::kWrite:
      s += " h" + std::to_string(handle) + " off=" + std::to_string(off) +
           " len=" + std::to_string(len);
      break;
    case OpKind::kAppend:
      s += " h" + std::to_string(handle) + " len=" + std::to_string(len);
      break;
    case OpKind::kAppendClose:
      s += " '" + Printable(path) + "' len=" + std::to_string(len) + " (echo >>)";
      break;
    case OpKind::kFlush:
    case OpKind::kFsync:
    case OpKind::kClose:
      s += " h" + std::to_string(handle);
      break;
    case OpKind::kTruncate:
      s += " '" + Printable(path) + "' size=" + std::to_string(off);
      break;
    case OpKind::kRename:
      s += " '" + Printable(path) + "' -> '" + Printable(path2) + "'" +
           (noreplace ? " NOREPLACE" : "");
      break;
    case OpKind::kSymlink:
      s += " '" + Printable(path) + "' -> target '" + Printable(path2) + "'";
      break;
    case OpKind::kChmod:
      s += " '" + Printable(path) + "' " + std::to_string(mode);
      break;
    case OpKind::kFreeze:
      s += " for " + std::to_string(len) + " steps";
      break;
    case OpKind::kOutage:
      s += " for " + std::to_string(len) + " steps" + (excl ? ", its first Put lands" : "");
      break;
    case OpKind::kForget:
    case OpKind::kKill:
    case OpKind::kRestart:
      break;
    default:
      s += " '" + Printable(path) + "'";
  }
  return s;
}

Schedule::Schedule(const Mix& mix, bool faults, bool async) : faults_(faults), async_(async) {
  names_ = {"a",
            "b",
            "c",
            "sp ace",
            "x\\y",  // '\' (stored as U+F05C in blob names)
            "per%cent",
            "ha#sh",
            "q?m",
            ",comma",          // leading ','
            "~tilde",          // leading '~'
            "\xC3(",           // not UTF-8
            "u\xEF\x81\x9Cv",  // U+F05C itself (no twin in the default mix)
            std::string(200, 'L') + "-long",
            std::string(120, '%')};  // escaped key over 512 units: hashed
  if (mix.twin_names) {
    names_.push_back("x\xEF\x81\x9Cy");  // the blob-name twin of "x\y"
    names_.push_back("\xEF\x83\x83(");   // the blob-name twin of "\xC3("
  }
  dirs_ = {"/", "/d1", "/d2", "/d1/e", "/#sp ace\\"};
}

std::string Schedule::Path(std::mt19937_64& rng) const {
  const std::string& dir = dirs_[rng() % dirs_.size()];
  const std::string& name = names_[rng() % names_.size()];
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string Schedule::AnyPath(std::mt19937_64& rng) const {
  if (rng() % 4 == 0) return dirs_[1 + rng() % (dirs_.size() - 1)];
  return Path(rng);
}

// `drawn`, or (half the time, when there are any) one of the existing paths.
std::string Schedule::Existing(std::mt19937_64& rng, const std::vector<std::string>& existing,
                               std::string drawn) const {
  if (existing.empty() || rng() % 2 == 0) return drawn;
  return existing[rng() % existing.size()];
}

Op Schedule::Next(std::mt19937_64& rng, const std::vector<bool>& up,
                  const std::vector<HandleRef>& handles,
                  const std::vector<std::string>& existing) const {
  Op op;
  op.mount = static_cast<int>(rng() % up.size());
  if (!up[op.mount]) {
    op.kind = OpKind::kRestart;
    return op;
  }
  std::vector<int> mine;
  for (const HandleRef& h : handles) {
    if (h.mount == op.mount) mine.push_back(h.id);
  }
  // Weights: handle operations only when this mount has a handle.
  struct Choice {
    OpKind kind;
    int weight;
  };
  const bool have = !mine.empty();
  const Choice choices[] = {
      {OpKind::kCreate, 10},
      {OpKind::kOpen, 6},
      {OpKind::kWrite, have ? 14 : 0},
      {OpKind::kAppend, have ? 8 : 0},
      {OpKind::kFlush, have ? 5 : 0},
      {OpKind::kFsync, have ? 3 : 0},
      {OpKind::kClose, have ? 10 : 0},
      {OpKind::kTruncate, 3},
      {OpKind::kUnlink, 4},
      {OpKind::kRename, 7},
      {OpKind::kMkdir, 5},
      {OpKind::kRmdir, 2},
      {OpKind::kSymlink, 3},
      {OpKind::kChmod, 2},
      {OpKind::kSetXattr, 2},
      {OpKind::kKill, faults_ ? 2 : 0},
      {OpKind::kFreeze, faults_ ? 1 : 0},
      {OpKind::kAppendClose, 5},
      {OpKind::kPump, async_ ? 6 : 0},
      {OpKind::kForget, 3},
      {OpKind::kOutage, faults_ && async_ ? 2 : 0},
  };
  int total = 0;
  for (const Choice& c : choices) total += c.weight;
  int pick = static_cast<int>(rng() % total);
  for (const Choice& c : choices) {
    if (pick < c.weight) {
      op.kind = c.kind;
      break;
    }
    pick -= c.weight;
  }
  if (have) op.handle = mine[rng() % mine.size()];
  switch (op.kind) {
    case OpKind::kCreate:
      op.path = Existing(rng, existing, Path(rng));
      op.excl = rng() % 3 == 0;
      op.trunc = rng() % 2 == 0;
      break;
    case OpKind::kOpen:
      op.path = Existing(rng, existing, Path(rng));
      op.trunc = rng() % 4 == 0;
      break;
    case OpKind::kWrite:
      op.off = rng() % 3 == 0 ? 0 : rng() % 6000;
      op.len = 1 + rng() % (rng() % 5 == 0 ? 40000 : 300);
      break;
    case OpKind::kAppend:
      op.len = 1 + rng() % 200;
      break;
    case OpKind::kAppendClose:
      op.path = Existing(rng, existing, Path(rng));
      op.len = 1 + rng() % 100;
      break;
    case OpKind::kTruncate:
      op.path = Existing(rng, existing, Path(rng));
      op.off = rng() % 2 == 0 ? 0 : rng() % 400;
      break;
    case OpKind::kRename:
      op.path = Existing(rng, existing, AnyPath(rng));
      op.path2 = Existing(rng, existing, AnyPath(rng));
      op.noreplace = rng() % 5 == 0;
      break;
    case OpKind::kMkdir:
      op.path = rng() % 2 ? dirs_[1 + rng() % (dirs_.size() - 1)] : Path(rng);
      break;
    case OpKind::kRmdir:
      op.path = Existing(rng, existing, AnyPath(rng));
      break;
    case OpKind::kSymlink:
      op.path = Existing(rng, existing, Path(rng));
      op.path2 = rng() % 2 ? "a" : "../d1/x\\y";
      break;
    case OpKind::kChmod: {
      static const uint32_t kModes[] = {0600, 0640, 0644, 0755, 0700};
      op.path = Existing(rng, existing, AnyPath(rng));
      op.mode = kModes[rng() % 5];
      break;
    }
    case OpKind::kUnlink:
    case OpKind::kSetXattr:
      op.path = Existing(rng, existing, Path(rng));
      break;
    case OpKind::kFreeze:
      op.len = 1 + rng() % 4;
      break;
    case OpKind::kOutage:
      op.len = 5 + rng() % 25;
      op.excl = rng() % 2 == 0;
      break;
    default:
      break;
  }
  return op;
}

}  // namespace stampfs::sim
