#include "tests/sim/foreign.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "fs/admin/dir_refresh.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"
#include "fs/namespace/rename_intent.h"
#include "storage/table_keys.h"
#include "tests/sim/model.h"

namespace stampfs::sim {

namespace {

// Where the tool puts new blobs: directories the mounts use, and new ones.
const char* const kDirs[] = {"/", "/d1", "/d2", "/d1/e", "/f1", "/f1/g"};
const char* const kNames[] = {"a", "b", "c", "sp ace", "per%cent", "t1", "t2"};

// The kernel's path walk; with `list`, each directory on the way is listed
// first (ls), which is when a mount checks it against its blobs.
Result<Attr> Walk(SimMount& m, const std::string& path, bool list) {
  Result<Attr> at = m.ns->GetAttr(kRootIno);
  size_t pos = 1;
  while (at.ok() && pos < path.size()) {
    if (!at->IsDir()) return Status(Code::kNotADirectory, "not a directory on the way");
    if (list) {
      auto entries = m.ns->ReadDir(at->ino);
      if (!entries.ok()) return entries.status();
    }
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    at = m.ns->Lookup(at->ino, path.substr(pos, next - pos));
    pos = next + 1;
  }
  return at;
}

// open(O_RDONLY), reads from 0 to the end in two parts (`between` runs after
// the first `split` bytes), release.
Result<std::string> ReadWhole(SimMount& m, uint64_t ino, uint64_t split,
                              const std::function<void()>& between) {
  auto opened = m.data->Open(ino, OpenFlags{});
  if (!opened.ok()) return opened.status();
  std::string out;
  Status s;
  auto part = [&](uint64_t until) {
    while (s.ok() && out.size() < until) {
      std::string buf(std::min<uint64_t>(until - out.size(), 48 * 1024), '\0');
      auto n = m.data->Read(ino, buf.data(), buf.size(), out.size());
      if (!n.ok()) s = n.status();
      if (!n.ok() || *n == 0) return;
      out.append(buf.data(), *n);
    }
  };
  part(split);
  if (s.ok() && between) between();
  part(UINT64_MAX);
  m.data->Release(ino).PermitUnchecked();
  if (!s.ok()) return s;
  return out;
}

std::string Content(int n, uint64_t len) {
  const std::string tag = "<f" + std::to_string(n) + ">";
  std::string out;
  while (out.size() < len) out += tag;
  out.resize(len);
  return out;
}

bool Stampfs(const BlobProperties& p) { return p.metadata.count("stampfs") > 0; }

}  // namespace

ForeignActor::ForeignActor(uint64_t seed, World& world, Ledger& ledger,
                           std::deque<MountFaults>& faults,
                           std::function<std::vector<std::string>(int)> open_paths)
    : rng_(seed ^ 0x6f726569676e3330ull),
      world_(world),
      ledger_(ledger),
      faults_(faults),
      open_paths_(std::move(open_paths)) {}

bool ForeignActor::Reachable(const SimMount& m) const {
  return m.up() && m.foreign && !faults_[m.id].Unreachable();
}

std::string ForeignActor::PathOfBlob(const std::string& blob, const Snapshot& before) const {
  for (const auto& [path, e] : before.by_path) {
    if (S_ISREG(e.mode) && (e.blob.empty() ? BlobNameFor(path) : e.blob) == blob) return path;
  }
  auto it = paths_.find(blob);
  return it == paths_.end() ? "" : it->second;
}

void ForeignActor::Act(const Snapshot& before, int step,
                       const std::function<void(ForeignStep&)>& done) {
  step_ = step;
  // `before` is the driver's snapshot, brought up to date by each `step`.
  const int write = static_cast<int>(rng_() % 100);
  const int deliver = static_cast<int>(rng_() % 100);
  const int read = static_cast<int>(rng_() % 100);
  const int wait = static_cast<int>(rng_() % 100);
  ForeignStep out;
  if (write < 30) Write(before, out);
  if (!out.line.empty()) done(out);
  out = ForeignStep{};
  if (deliver < 40) Deliver(before, out);
  if (!out.line.empty()) done(out);
  out = ForeignStep{};
  if (read < 12) Read(before, out);
  if (!out.line.empty()) done(out);
  out = ForeignStep{};
  if (wait < 4) Wait(before, out);
  if (!out.line.empty()) done(out);
}

BlobEvent ForeignActor::NextEvent(BlobEvent::Kind kind, const std::string& blob,
                                  const std::string& api) {
  char seq[32];
  std::snprintf(seq, sizeof seq, "%020llu", static_cast<unsigned long long>(++sequencer_));
  BlobEvent ev;
  ev.kind = kind;
  ev.container = kContainer;
  ev.blob = blob;
  ev.sequencer = seq;
  ev.api = api;
  ev.id = "ev" + std::to_string(++events_);
  return ev;
}

std::string ForeignActor::Put(const std::string& blob, const std::string& path,
                              const std::string& content, const Snapshot& before) {
  auto etag = world_.raw_blobs().PutString(kContainer, blob, content, {}, Condition::None());
  if (!etag.ok()) return "put failed: " + etag.status().ToString();
  writes_++;
  if (auto old = before.blobs.find(blob); old != before.blobs.end()) {
    ledger_.ForeignReplaced(old->second, step_);
  }
  ledger_.ForeignPut(blob, content);
  Version v{blob, path, content, *etag, true};
  history_.push_back(v);
  paths_[blob] = path;
  BlobEvent ev = NextEvent(BlobEvent::Kind::kCreated, blob, "PutBlob");
  ev.etag = *etag;
  ev.content_length = content.size();
  queue_.push_back({ev, v});
  return "put '" + Printable(blob) + "' " + std::to_string(content.size()) + " bytes '" +
         Printable(content.substr(0, 12)) + "...' (" + ev.id + ")";
}

std::string ForeignActor::Delete(const std::string& blob, const std::string& path,
                                 const Snapshot& before) {
  Status s = world_.raw_blobs().Delete(kContainer, blob, Condition::None());
  if (!s.ok()) return "delete failed: " + s.ToString();
  writes_++;
  if (auto old = before.blobs.find(blob); old != before.blobs.end()) {
    ledger_.ForeignReplaced(old->second, step_);
  }
  ledger_.ForeignDelete(blob);
  // Its name goes once adopted: what was acknowledged in it goes with it.
  for (const auto& [p, e] : before.by_path) {
    if (S_ISREG(e.mode) && (e.blob.empty() ? BlobNameFor(p) : e.blob) == blob) {
      ledger_.Doomed(e.ino);
    }
  }
  Version v{blob, path, "", "", false};
  history_.push_back(v);
  const BlobEvent ev = NextEvent(BlobEvent::Kind::kDeleted, blob, "DeleteBlob");
  queue_.push_back({ev, v});
  return "delete '" + Printable(blob) + "' (" + ev.id + ")";
}

void ForeignActor::Write(const Snapshot& before, ForeignStep& out) {
  const int kind = static_cast<int>(rng_() % 10);
  const uint64_t len = 1 + rng_() % (rng_() % 5 == 0 ? 100000 : 300);
  const std::string content = Content(writes_ + 1, len);
  if (kind < 4) {
    const std::string dir = kDirs[rng_() % std::size(kDirs)];
    const std::string path = JoinPath(dir, kNames[rng_() % std::size(kNames)]);
    const std::string blob = BlobNameFor(path);
    // Names that are no file (a directory or a symlink has it, a file is
    // above it, blobs are below it): refused by the mapping, left out.
    auto it = before.by_path.find(path);
    if (it != before.by_path.end() && !S_ISREG(it->second.mode)) return;
    for (std::string a = ParentOf(path); a != "/"; a = ParentOf(a)) {
      auto above = before.by_path.find(a);
      if (above != before.by_path.end() && !S_ISDIR(above->second.mode)) return;
      if (before.blobs.count(BlobNameFor(a))) return;
    }
    auto below = before.blobs.lower_bound(blob + "/");
    if (below != before.blobs.end() && below->first.rfind(blob + "/", 0) == 0) return;
    out.line = "foreign " + Put(blob, path, content, before);
    return;
  }
  std::vector<std::string> names;
  for (const auto& [name, c] : before.blobs) {
    if (IsLongPathBlob(name) || IsExchangeTempBlob(name) || name.back() == '/') continue;
    if (!PathOfBlob(name, before).empty()) names.push_back(name);
  }
  if (names.empty()) return;
  const std::string blob = names[rng_() % names.size()];
  const std::string path = PathOfBlob(blob, before);
  out.line = "foreign " + (kind < 8 ? Put(blob, path, content, before) + " over the old"
                                    : Delete(blob, path, before));
}

void ForeignActor::Deliver(const Snapshot& before, ForeignStep& out) {
  SimMount& owner = world_.mounts()[0];
  if (queue_.empty() || !owner.up() || !owner.foreign) return;
  const int mode = static_cast<int>(rng_() % 10);
  size_t idx = 0;
  std::string how = "in order";
  if (mode >= 5 && mode <= 6 && queue_.size() > 1) {
    idx = 1 + rng_() % (queue_.size() - 1);
    how = "out of order";
  } else if (mode == 8) {
    out.line = "foreign event " + queue_.front().event.id + " lost (never delivered)";
    queue_.pop_front();
    return;
  } else if (mode == 9) {
    return;  // late: delivered at a later step
  }
  const Queued q = queue_[idx];
  if (mode == 7) {
    // At least once: a copy comes again later.
    queue_.insert(queue_.begin() + static_cast<long>(1 + rng_() % queue_.size()), q);
    how = "twice";
  }
  out.actor = owner.id;
  const uint64_t changes = owner.foreign->stats().changes;
  Status s = owner.foreign->ApplyEvent(q.event);
  out.line = "foreign event " + q.event.id + " (" + q.event.api + " '" + Printable(q.event.blob) +
             "') to m" + std::to_string(owner.id) + ", " + how + " -> " +
             (s.ok() ? std::string("ok") : s.ToString());
  if (!s.ok()) return;  // the message comes back
  queue_.erase(queue_.begin() + static_cast<long>(idx));
  if (!Reachable(owner)) return;
  if (owner.foreign->stats().changes == changes) {
    // The table had it already (another mount's check): this mount's cache
    // of the table shows it within its own TTL, as any other writer's change.
    world_.Advance(kTtlMs + 1);
    out.line += "; no change here, checked after the mount's TTL";
  }
  std::string note;
  CheckShown(owner, q.version, false, before, &out.violation, &note);
  if (!note.empty()) out.line += "; " + note;
}

void ForeignActor::CheckShown(SimMount& m, const Version& v, bool list, const Snapshot& before,
                              std::string* violation, std::string* note) {
  auto props = world_.raw_blobs().GetProperties(kContainer, v.blob);
  if (v.put ? !props.ok() || props->etag != v.etag || Stampfs(*props)
            : !props.status().Is(Code::kNotFound)) {
    *note = "the blob moved on since";
    return;
  }
  const Snapshot now = Observe(world_.raw_table(), world_.raw_blobs());
  auto at = Walk(m, v.path, list);
  // A directory above that was there before (another mount's check made
  // it) may be cached without the name for the mount's TTL, as any other
  // writer's change: then the bound is that TTL.
  bool lag = false;
  for (std::string a = ParentOf(v.path); a != "/"; a = ParentOf(a))
    lag = lag || before.by_path.count(a);
  if (!list && lag && (v.put ? !at.ok() : at.ok())) {
    world_.Advance(kTtlMs + 1);
    at = Walk(m, v.path, list);
    *note = "after the mount's TTL: ";
  }
  auto e = now.by_path.find(v.path);
  const bool entry = e != now.by_path.end();
  if (entry && (!S_ISREG(e->second.mode) || e->second.betag.empty() ||
                (e->second.blob.empty() ? BlobNameFor(v.path) : e->second.blob) != v.blob)) {
    // Not the tool's name to show: a directory or a symlink, a new file of
    // a mount before its first commit, or a file with another blob.
    *note = "the name is a mount's";
    return;
  }
  for (const std::string& open : open_paths_(m.id)) {
    if (v.path == open || v.path.rfind(open + "/", 0) == 0) {
      *note = "a file this mount has open holds the name or one above it";
      return;
    }
  }
  if (at.ok() && ledger_.Find(m.id, at->ino) != nullptr) {
    *note = "open on this mount";
    return;
  }
  const std::string what = "invariant 7: " + std::string(list ? "after foreign_ttl, " : "") + "m" +
                           std::to_string(m.id) + " shows " + Printable(v.path) + " ";
  if (!v.put) {
    if (at.ok()) {
      *violation = what + "(ino " + std::to_string(at->ino) + ") after its blob '" +
                   Printable(v.blob) + "' was deleted" + (list ? "" : " and the event applied") +
                   "; the table " + (entry ? "still has its entry" : "has no entry");
    }
    *note += "gone, as shown";
    return;
  }
  if (!at.ok() || !at->IsRegular()) {
    *violation =
        what + (at.ok() ? "as no regular file" : "not at all (" + at.status().ToString() + ")") +
        ", though the tool's version " + v.etag + " was " +
        (list ? "put before the check" : "adopted by the event") + "; the table " +
        (entry ? "has an entry (ino " + std::to_string(e->second.ino) + ")" : "has no entry") +
        (now.intents ? ", " + std::to_string(now.intents) + " rename intent(s)" : "") +
        Later(m, v.path);
    return;
  }
  auto data = ReadWhole(m, at->ino, 0, nullptr);
  if (!data.ok()) {
    *note = "read: " + data.status().ToString();
    return;
  }
  if (*data != v.content || at->size != v.content.size()) {
    *violation = what + "(size " + std::to_string(at->size) + ") as '" + Printable(*data, 60) +
                 "', not the tool's version '" + Printable(v.content, 60) + "' (" +
                 std::to_string(v.content.size()) + " bytes)";
    return;
  }
  *note += "shown";
}

// For the report of a name not shown: what the mount shows once its own
// cache's TTL has passed too.
std::string ForeignActor::Later(SimMount& m, const std::string& path) {
  world_.Advance(kTtlMs + 1);
  auto at = Walk(m, path, false);
  Status started;
  auto fresh = world_.FreshMount(&started);
  auto there = fresh->up() ? Walk(*fresh, path, false) : Result<Attr>(started);
  world_.Kill(*fresh);
  return "; after the mount's TTL (" + std::to_string(kTtlMs) + " ms) it shows " +
         (at.ok() ? "ino " + std::to_string(at->ino) : at.status().ToString()) +
         ", a fresh mount " +
         (there.ok() ? "ino " + std::to_string(there->ino) : there.status().ToString());
}

void ForeignActor::Read(const Snapshot& before, ForeignStep& out) {
  std::vector<const ObservedEntry*> files;
  for (const auto& [path, e] : before.by_path) {
    if (S_ISREG(e.mode)) files.push_back(&e);
  }
  const int mount = static_cast<int>(rng_() % world_.mounts().size());
  if (files.empty()) return;
  const ObservedEntry& f = *files[rng_() % files.size()];
  const bool overwrite = rng_() % 3 == 0;
  const uint64_t split = rng_() % (f.content.size() + 1);
  SimMount& m = world_.mounts()[mount];
  if (!m.up()) return;
  out.actor = m.id;
  out.line = "m" + std::to_string(m.id) + " read '" + Printable(f.path) + "' in two parts at " +
             std::to_string(split);
  auto at = Walk(m, f.path, false);
  if (!at.ok() || !at->IsRegular()) {
    out.line += " -> " + (at.ok() ? std::string("not a file") : at.status().ToString());
    return;
  }
  const View* v = ledger_.Find(m.id, at->ino);
  if (v != nullptr && v->uncertain) {
    out.line += " -> skipped (a write failed: the open file's data is unknown)";
    return;
  }
  std::string middle;
  auto data = ReadWhole(m, at->ino, split, [&] {
    if (overwrite && !IsLongPathBlob(f.blob.empty() ? BlobNameFor(f.path) : f.blob)) {
      const std::string blob = f.blob.empty() ? BlobNameFor(f.path) : f.blob;
      const uint64_t len = 1 + rng_() % (rng_() % 3 == 0 ? 100000 : 300);
      middle = "; between them the tool " + Put(blob, f.path, Content(writes_ + 1, len), before);
    }
  });
  out.line += middle;
  if (!data.ok()) {
    out.line += " -> " + data.status().ToString();
    return;
  }
  out.line += " -> " + std::to_string(data->size()) + " bytes '" + Printable(*data, 24) + "'";
  if (!ledger_.KnownVersion(m.id, at->ino, *data)) {
    out.violation = "invariant 7: a read of " + Printable(f.path) + " (ino " +
                    std::to_string(at->ino) + ") through m" + std::to_string(m.id) + " returned '" +
                    Printable(*data, 200) + "' (" + std::to_string(data->size()) +
                    " bytes), which is no whole version any writer gave it (a mix of versions)";
  }
}

void ForeignActor::Wait(const Snapshot& before, ForeignStep& out) {
  // The latest of each blob, still at it.
  std::map<std::string, const Version*> latest;
  for (const Version& v : history_) latest[v.blob] = &v;
  std::vector<const Version*> current;
  for (const auto& [blob, v] : latest) current.push_back(v);
  const int mount = static_cast<int>(rng_() % world_.mounts().size());
  if (current.empty()) return;
  const Version& v = *current[rng_() % current.size()];
  world_.Advance(kForeignTtlMs + 1000 + static_cast<int64_t>(rng_() % 5000));
  SimMount& m = world_.mounts()[mount];
  out.actor = m.id;
  out.line = "foreign_ttl passes; m" + std::to_string(m.id) + " lists its way to '" +
             Printable(v.path) + "' (the tool's " + (v.put ? "put" : "delete") + ")";
  if (!Reachable(m)) {
    out.line += " -> skipped (down or unreachable)";
    return;
  }
  std::string note;
  CheckShown(m, v, true, before, &out.violation, &note);
  out.line += " -> " + note;
}

std::set<std::string> ForeignActor::CatchUp(std::string* trace) {
  ImportOptions io;
  io.container = kContainer;
  io.table = kTable;
  io.now_ns = [this] { return world_.now_ns(); };
  DirRefresher refresher(world_.raw_table(), world_.raw_blobs(), io);
  std::set<std::string> problems;
  int changed = 0;
  std::set<std::string> blobs;
  for (const Version& v : history_) blobs.insert(v.blob);
  for (const std::string& blob : blobs) {
    auto r = refresher.RefreshBlob(blob);
    if (!r.ok()) {
      *trace += " " + Printable(blob) + ": " + r.status().ToString() + ";";
      continue;
    }
    changed += static_cast<int>(r->files_created + r->dirs_created + r->updated + r->removed);
    for (const ImportProblem& p : r->problems) problems.insert(p.blob);
    for (const std::string& e : r->errors) *trace += " " + Printable(blob) + ": " + e + ";";
  }
  *trace += " " + std::to_string(blobs.size()) + " blob(s) refreshed, " + std::to_string(changed) +
            " change(s), " + std::to_string(problems.size()) + " not mapped";
  return problems;
}

}  // namespace stampfs::sim
