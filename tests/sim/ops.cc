#include "tests/sim/ops.h"

#include <sys/stat.h>

#include <cerrno>

#include "fs/fuse/errno_map.h"
#include "fs/namespace/inode_table.h"
#include "fs/namespace/names.h"

namespace stampfs::sim {

namespace {

// Files stay below the single Put Blob limit (world.h).
constexpr uint64_t kMaxFileSize = 100 * 1024;

std::string Outcome(const Status& s) { return s.ok() ? "ok" : s.ToString(); }

// What open(2) or truncate(2) of `at` gives when it is not a regular file
// (kNotPermitted: a symlink, which the simulation does not follow: skipped).
bool RegularFile(const Result<Attr>& at, Status* status) {
  if (!at.ok()) {
    *status = at.status();
  } else if (at->IsDir()) {
    *status = Status(Code::kIsADirectory, "a directory");
  } else if (at->IsSymlink()) {
    *status = Status(Code::kNotPermitted, "skipped: the simulation follows no symlink");
  }
  return status->ok();
}

}  // namespace

std::string WriteBytes(int step, int mount, uint64_t len) {
  const std::string tag = "<s" + std::to_string(step) + "m" + std::to_string(mount) + ">";
  std::string out;
  out.reserve(len);
  while (out.size() < len) out += tag;
  out.resize(len);
  return out;
}

Executor::Executor(World& world, Ledger& ledger, const Mix& mix, PosixModel* model)
    : world_(world), ledger_(ledger), mix_(mix), model_(model) {}

std::vector<HandleRef> Executor::Handles() const {
  std::vector<HandleRef> out;
  for (const auto& [id, h] : handles_) out.push_back({id, h.mount});
  return out;
}

std::vector<Op> Executor::CloseAll(int mount) const {
  std::vector<Op> out;
  for (const auto& [id, h] : handles_) {
    if (h.mount != mount) continue;
    Op op;
    op.kind = OpKind::kClose;
    op.mount = mount;
    op.handle = id;
    out.push_back(op);
  }
  return out;
}

void Executor::Killed(int mount) {
  for (auto it = handles_.begin(); it != handles_.end();) {
    it = it->second.mount == mount ? handles_.erase(it) : std::next(it);
  }
  for (auto it = kernel_size_.begin(); it != kernel_size_.end();) {
    it = it->first.first == mount ? kernel_size_.erase(it) : std::next(it);
  }
  ledger_.Killed(mount);
}

void Executor::NoteSize(int mount, uint64_t ino, uint64_t size) {
  kernel_size_[{mount, ino}] = size;
}

// The kernel's path walk: one lookup per component (symlinks not followed).
Result<Attr> Executor::Resolve(SimMount& m, const std::string& path) {
  Result<Attr> at = m.ns->GetAttr(kRootIno);
  size_t pos = 1;
  while (at.ok() && pos < path.size()) {
    if (!at->IsDir()) return Status(Code::kNotADirectory, "not a directory on the way");
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    const std::string name = path.substr(pos, next - pos);
    at = m.ns->Lookup(at->ino, name);
    if (at.ok()) {
      Attr shown = *at;
      m.data->OverrideAttr(shown.ino, &shown);  // EntryFor: what the kernel is told
      if (shown.IsRegular()) NoteSize(m.id, shown.ino, shown.size);
    }
    pos = next + 1;
  }
  return at;
}

Result<Attr> Executor::ResolveParent(SimMount& m, const std::string& path) {
  auto parent = Resolve(m, ParentOf(path));
  if (parent.ok() && !parent->IsDir()) return Status(Code::kNotADirectory, "parent");
  return parent;
}

// Creates the default mix leaves out (their switches), decided before the
// POSIX model takes the create.
std::optional<std::string> Executor::SkipCreate(const Op& op, const Snapshot& before) {
  // An append (echo >>) creates the name too when it is free.
  if (op.kind != OpKind::kCreate && op.kind != OpKind::kAppendClose) return std::nullopt;
  if (!mix_.reuse_unlinked && HeldUnlinked(op.path)) {
    return "the name's old file is open (reuse-unlinked)";
  }
  if (op.kind != OpKind::kCreate) return std::nullopt;
  const std::string dir = ParentOf(op.path);
  if (!mix_.rename_open && world_.mounts().size() > 1 && dir != "/" && !before.by_path.count(dir)) {
    // The mount may still list a directory another mount renamed: the new
    // file's commit then drops its data (rename-open).
    return "its directory is gone (rename-open)";
  }
  return std::nullopt;
}

std::string Executor::OpenFile(Op& op, SimMount& m, const Snapshot& before, Status* status) {
  const bool create = op.kind == OpKind::kCreate;
  op.handle = 0;
  auto parent = ResolveParent(m, op.path);
  if (!parent.ok()) {
    *status = parent.status();
    return "";
  }
  const std::string name = BaseName(op.path);
  Result<Attr> attr = Status(Code::kNotFound, "no create");
  bool created = false;
  if (create) {
    // fuse_ops.cc OnCreate: without O_EXCL the entry waits for the first commit.
    // As fs/fuse/fuse_ops.cc: O_EXCL creates are deferred too with commit=async.
    attr = m.ns->Create(parent->ino, name, 0644, 0, 0, !op.excl || m.data->async());
    created = attr.ok();
    if (attr.status().Is(Code::kAlreadyExists) && !op.excl) attr = m.ns->Lookup(parent->ino, name);
  } else {
    attr = m.ns->Lookup(parent->ino, name);
  }
  if (attr.ok()) {
    Attr shown = *attr;
    m.data->OverrideAttr(shown.ino, &shown);
    NoteSize(m.id, shown.ino, shown.size);  // the kernel's i_size from this reply
  }
  if (!RegularFile(attr, status)) return status->Is(Code::kNotPermitted) ? "skip" : "";
  const bool trunc = created || op.trunc;
  OpenFlags flags;
  flags.truncate = trunc;
  flags.created = created;
  flags.writable = true;
  const bool new_view = ledger_.Find(m.id, attr->ino) == nullptr;
  View& v = ledger_.Load(m.id, attr->ino, before, created);
  auto opened = m.data->Open(attr->ino, flags);
  *status = opened.status();
  if (!status->ok()) {
    if (v.refs == 0 && !v.dirty) ledger_.Drop(m.id, attr->ino);
    return "";
  }
  if (new_view && !created && m.foreign) {
    // -o foreign_ttl: the open checked the directory and may have adopted
    // another tool's version (FileData::Load): the one opened.
    const Snapshot now = Observe(world_.raw_table(), world_.raw_blobs());
    if (const ObservedEntry* e = now.Ino(attr->ino)) v.base = v.data = ContentOf(*e);
  }
  v.refs++;
  if (trunc) {
    ledger_.Truncate(v, 0);
    NoteSize(m.id, attr->ino, 0);
  }
  op.handle = next_handle_++;
  OpenHandle h;
  h.id = op.handle;
  h.mount = m.id;
  h.ino = attr->ino;
  h.fh = opened->handle;
  h.path = op.path;
  handles_[h.id] = h;
  return "ino " + std::to_string(attr->ino) + (created ? " (created)" : "");
}

std::string Executor::WriteTo(Op& op, SimMount& m, bool append, int step, Status* status) {
  OpenHandle& h = handles_.at(op.handle);
  View* v = ledger_.Find(m.id, h.ino);
  if (v == nullptr) {
    *status = Status(Code::kInternal, "simulation: handle without a view");
    return "";
  }
  if (v->conflicted && !mix_.write_after_conflict) {
    *status = Status(Code::kNotPermitted,
                     "skipped: written after a conflict or a removed directory (defect 3)");
    return "skip";
  }
  uint64_t off = op.off;
  uint64_t model_off = op.off;
  if (append) {
    // O_APPEND: the kernel writes at its i_size. With append-race that is the
    // size its last reply carried (stale within the TTL); otherwise the
    // size the mount shows now (getattr of an open file).
    Attr shown;
    auto a = m.ns->GetAttr(h.ino);
    if (a.ok()) shown = *a;
    m.data->OverrideAttr(h.ino, &shown);
    off = shown.size;
    if (mix_.append_race && kernel_size_.count({m.id, h.ino})) off = kernel_size_[{m.id, h.ino}];
    model_off = v->data.size();
  }
  if (std::max(off, model_off) + op.len > kMaxFileSize) {
    *status = Status(Code::kNotPermitted, "skipped: the file would outgrow one Put Blob");
    return "skip";
  }
  op.off = off;
  const std::string bytes = WriteBytes(step, m.id, op.len);
  // As fs/fuse/fuse_ops.cc: O_APPEND writes at the open file's end (the kernel's
  // offset is ignored), and the open's handle is checked against conflicts.
  auto n = m.data->Write(h.ino, bytes.data(), bytes.size(), off, append, h.fh);
  *status = n.status();
  if (!n.ok() || *n != bytes.size()) {
    v->uncertain = true;
    v->dirty = true;
    return "at " + std::to_string(off);
  }
  ledger_.Write(*v, model_off, bytes);
  NoteSize(m.id, h.ino, std::max(kernel_size_[{m.id, h.ino}], off + op.len));
  if (model_ && h.model_file) model_->Write(h.model_file, model_off, bytes);
  return "at " + std::to_string(off) +
         (off != model_off ? " (POSIX: at " + std::to_string(model_off) + ")" : "");
}

// flush (close of a dup'd fd), fsync, close (flush, then release).
std::string Executor::Commit(Op& op, SimMount& m, const Snapshot& before, int step, Status* status,
                             std::string* violation) {
  (void)before;
  OpenHandle h = handles_.at(op.handle);
  View* v = ledger_.Find(m.id, h.ino);
  // As fs/fuse/fuse_ops.cc: fsync is FileData::Sync, flush (every close) Flush.
  const bool fsync = op.kind == OpKind::kFsync;
  *status = fsync ? m.data->Sync(h.ino) : m.data->Flush(h.ino);
  std::string out;
  if (v != nullptr && status->ok()) {
    Acknowledge(m, *v, m.data->async() && !fsync, step, violation);
  } else if (v != nullptr &&
             (status->Is(Code::kPreconditionFailed) || status->Is(Code::kNotFound))) {
    // A conflict, or the directory of a new file was removed: either way the
    // open file no longer stands for what this mount wrote.
    ledger_.Conflicted(*v, Observe(world_.raw_table(), world_.raw_blobs()));
  }
  if (op.kind != OpKind::kClose) return out;
  // close(2) returns the flush's status; release's is the kernel's alone.
  Status released = m.data->Release(h.ino);
  out = "release: " + Outcome(released);
  handles_.erase(op.handle);
  if (v != nullptr && --v->refs <= 0) {
    v->refs = 0;
    const bool kept = v->dirty && !released.ok() && !released.Is(Code::kPreconditionFailed);
    if (!kept && !Kept(m, h.ino)) ledger_.DropAfterStep(m.id, h.ino);
  }
  return out;
}

std::string Executor::Truncate(Op& op, SimMount& m, const Snapshot& before, int step,
                               Status* status, std::string* violation) {
  auto at = Resolve(m, op.path);
  if (!RegularFile(at, status)) return status->Is(Code::kNotPermitted) ? "skip" : "";
  View& v = ledger_.Load(m.id, at->ino, before, false);
  const bool open_here = v.refs > 0;
  v.refs++;
  *status = m.data->Truncate(at->ino, op.off);
  v.refs--;
  if (status->ok()) {
    ledger_.Truncate(v, op.off);
    NoteSize(m.id, at->ino, op.off);
    // Not open here: FileData::Truncate's release committed it (commit=async:
    // journaled it).
    if (!open_here) Acknowledge(m, v, m.data->async(), step, violation);
  } else if (status->Is(Code::kPreconditionFailed)) {
    ledger_.Conflicted(v, Observe(world_.raw_table(), world_.raw_blobs()));
  } else {
    v.uncertain = true;
    v.dirty = true;
  }
  if (!open_here && !v.dirty && !Kept(m, at->ino)) ledger_.DropAfterStep(m.id, at->ino);
  return "ino " + std::to_string(at->ino);
}

std::string Executor::ChangeNames(Op& op, SimMount& m, const Snapshot& before, bool fault_armed,
                                  int step, Status* status) {
  auto parent = ResolveParent(m, op.path);
  if (!parent.ok()) {
    *status = parent.status();
    return "";
  }
  const std::string name = BaseName(op.path);
  switch (op.kind) {
    case OpKind::kUnlink: {
      auto gone = m.ns->Unlink(parent->ino, name);
      *status = gone.status();
      const ObservedEntry* e =
          before.by_path.count(op.path) ? &before.by_path.at(op.path) : nullptr;
      if (e && (gone.ok() || fault_armed)) ledger_.Doomed(e->ino);
      if (!gone.ok()) return "";
      if (gone->attr.IsRegular()) {
        m.data->Unlinked(gone->attr.ino, gone->blob, gone->blob_etag);
        if (View* v = ledger_.Find(m.id, gone->attr.ino)) v->unlinked = true;
        ledger_.Doomed(gone->attr.ino);
      }
      return "ino " + std::to_string(gone->attr.ino);
    }
    case OpKind::kRename: {
      auto to_parent = ResolveParent(m, op.path2);
      if (!to_parent.ok()) {
        *status = to_parent.status();
        return "";
      }
      // The kernel answers these itself (same name, a directory into itself).
      if (op.path == op.path2 || op.path2.rfind(op.path + "/", 0) == 0 ||
          op.path.rfind(op.path2 + "/", 0) == 0) {
        *status = Status(Code::kNotPermitted, "skipped: the kernel answers this rename");
        return "skip";
      }
      if (!mix_.rename_open && MovesOpenFile(op.path, before)) {
        *status =
            Status(Code::kNotPermitted, "skipped: moves a file open with changes (rename-open)");
        return "skip";
      }
      auto src = before.by_path.find(op.path);
      auto dst = before.by_path.find(op.path2);
      const bool known = src != before.by_path.end() && dst != before.by_path.end();
      if (known && !mix_.symlink_over_file_xdir && S_ISLNK(src->second.mode) &&
          S_ISREG(dst->second.mode) && ParentOf(op.path) != ParentOf(op.path2)) {
        *status =
            Status(Code::kNotPermitted, "skipped: symlink over a file across dirs (defect 4)");
        return "skip";
      }
      // As fs/fuse/fuse_ops.cc OnRename: commit=async commits what is queued
      // under the source (and the target) first; an open target's data is
      // made local before the copy overwrites its blob.
      const uint64_t target =
          m.data->BeforeRename(parent->ino, name, to_parent->ino, BaseName(op.path2), false);
      uint64_t moved = 0;
      auto orphans = m.ns->Rename(parent->ino, name, to_parent->ino, BaseName(op.path2),
                                  op.noreplace ? unsigned{Namespace::kNoReplace} : 0u, &moved);
      *status = orphans.status();
      if (known && op.path != op.path2 && (orphans.ok() || fault_armed)) {
        ledger_.Doomed(dst->second.ino);
      }
      if (!orphans.ok()) {
        m.data->RenameDone(target);
        return "";
      }
      if (target != 0 && m.ns->RemovedHere(target)) m.data->Unlinked(target, "", "");
      m.data->RenameDone(target);
      for (const std::string& blob : *orphans) m.data->DeleteBlobWhenUnused(0, blob);
      if (moved != 0) m.data->Renamed(moved);  // as fs/fuse/fuse_ops.cc
      return std::to_string(orphans->size()) + " blob(s) to delete";
    }
    case OpKind::kMkdir:
      *status = m.ns->Mkdir(parent->ino, name, 0755, 0, 0).status();
      return "";
    case OpKind::kRmdir:
      *status = m.ns->Rmdir(parent->ino, name);
      return "";
    case OpKind::kSymlink:
      *status = m.ns->Symlink(parent->ino, name, op.path2, 0, 0).status();
      return "";
    case OpKind::kChmod:
    case OpKind::kSetXattr: {
      auto at = m.ns->Lookup(parent->ino, name);
      if (at.ok() && at->IsSymlink()) {
        *status = Status(Code::kNotPermitted, "skipped: the simulation follows no symlink");
        return "skip";
      }
      if (!at.ok()) {
        *status = at.status();
      } else if (op.kind == OpKind::kChmod) {
        SetAttrRequest r;
        r.mode = op.mode;
        // A directory's chmod as fuse_ops.cc makes it (FileData::SetAttr: in
        // commit=async it waits in the journal for the pipeline). A file's
        // goes to the namespace alone: through FileData it would also set
        // the blob's metadata (SetAttrWithBlob), and a crash between that
        // and the entry merge leaves an entry naming the old blob ETag until
        // the next open adopts the new one, which fsck reports at the end
        // (seed 3228; namespace_blob_attrs.cc).
        if (at->IsDir()) {
          *status = m.data->SetAttr(at->ino, r).status();
          ledger_.DirChmod(m.id, at->ino, op.mode, status->ok(), step, op.path);
        } else {
          *status = m.ns->SetAttr(at->ino, r).status();
        }
      } else {
        *status = m.ns->SetXattr(at->ino, "user.sim", "v" + std::to_string(op.mode), 0);
      }
      return "";
    }
    default:
      *status = Status(Code::kInternal, "not a namespace operation");
      return "";
  }
}

// Whether a file that had `path` when opened was unlinked by the mount that
// holds it open (its blob stays until the last close).
bool Executor::HeldUnlinked(const std::string& path) {
  for (const auto& [id, h] : handles_) {
    const View* v = ledger_.Find(h.mount, h.ino);
    if (v != nullptr && v->unlinked && h.path == path) return true;
  }
  return false;
}

// Whether `from` is, or is above, a file some mount has open.
bool Executor::MovesOpenFile(const std::string& from, const Snapshot& before) const {
  for (const auto& [id, h] : handles_) {
    const ObservedEntry* e = before.Ino(h.ino);
    const std::string& path = e ? e->path : h.path;
    if (path == from || path.rfind(from + "/", 0) == 0) return true;
  }
  return false;
}

std::optional<int> Executor::Expect(const Op& op) {
  if (model_ == nullptr) return std::nullopt;
  switch (op.kind) {
    case OpKind::kTruncate:
      return model_->Truncate(op.path, op.off);
    case OpKind::kUnlink:
      return model_->Unlink(op.path);
    case OpKind::kRename:
      return model_->Rename(op.path, op.path2, op.noreplace);
    case OpKind::kMkdir:
      return model_->Mkdir(op.path);
    case OpKind::kRmdir:
      return model_->Rmdir(op.path);
    case OpKind::kSymlink:
      return model_->Symlink(op.path, op.path2);
    case OpKind::kChmod:
      return model_->Chmod(op.path, op.mode);
    case OpKind::kSetXattr:
      return model_->SetXattr(op.path);
    default:
      return std::nullopt;
  }
}

// A shell's `echo >> f`: open (O_APPEND), one write at the kernel's size,
// close; each part checked as the operation it is.
void Executor::Acknowledge(SimMount& m, View& v, bool local, int step, std::string* violation) {
  // Nothing changed (a truncate to the size it had): FileData queued nothing.
  const bool changes = v.dirty && (v.data != v.base || v.tainted);
  if (local && (changes || v.promised)) {
    v.promised = true;
    return;
  }
  v.promised = false;
  ledger_.Acked(m.id, v, Observe(world_.raw_table(), world_.raw_blobs()), step, violation);
}

// The mount still holds changes of `ino` (commit=async: queued or retried).
bool Executor::Kept(SimMount& m, uint64_t ino) const { return m.up() && m.data->Pending(ino); }

void Executor::ResolvePromises(SimMount& m, int step, std::string* violation) {
  for (uint64_t ino : ledger_.Inos(m.id)) {
    View* v = ledger_.Find(m.id, ino);
    if (v == nullptr || Kept(m, ino)) continue;
    if (v->promised) {
      v->promised = false;
      ledger_.Acked(m.id, *v, Observe(world_.raw_table(), world_.raw_blobs()), step, violation);
    }
    // Committed (a new empty file promises nothing, yet was queued): the
    // next open loads the account's version.
    if (v->refs == 0) ledger_.DropAfterStep(m.id, ino);
  }
}

std::string Executor::AppendClose(Op& op, const Snapshot& before, int step, bool fault_armed,
                                  std::string* violation) {
  Op part = op;
  part.kind = OpKind::kOpen;
  part.trunc = false;
  std::string out = "open: " + Run(part, before, step, fault_armed, violation);
  if (part.handle == 0) return out;
  const int handle = part.handle;
  part.kind = OpKind::kAppend;
  out += "; append: " + Run(part, before, step, fault_armed, violation);
  part.kind = OpKind::kClose;
  part.handle = handle;
  out += "; close: " + Run(part, before, step, fault_armed, violation);
  return out;
}

std::string Executor::Run(Op& op, const Snapshot& before, int step, bool fault_armed,
                          std::string* violation) {
  SimMount& m = world_.mounts()[op.mount];
  Status status;
  std::string detail;
  std::optional<int> expected;
  switch (op.kind) {
    case OpKind::kCreate:
    case OpKind::kOpen: {
      op.handle = 0;
      if (auto why = SkipCreate(op, before)) return "skipped (skipped: " + *why + ")";
      uint64_t file = 0;
      if (model_) {
        expected = op.kind == OpKind::kCreate ? model_->Create(op.path, op.excl, op.trunc, &file)
                                              : model_->Open(op.path, op.trunc, &file);
      }
      detail = OpenFile(op, m, before, &status);
      if (model_ && status.ok()) handles_[op.handle].model_file = file;
      break;
    }
    case OpKind::kWrite:
    case OpKind::kAppend:
      detail = WriteTo(op, m, op.kind == OpKind::kAppend, step, &status);
      break;
    case OpKind::kFlush:
    case OpKind::kFsync:
    case OpKind::kClose:
      detail = Commit(op, m, before, step, &status, violation);
      break;
    case OpKind::kTruncate:
      detail = Truncate(op, m, before, step, &status, violation);
      break;
    case OpKind::kAppendClose:
      if (auto why = SkipCreate(op, before)) return "skipped (skipped: " + *why + ")";
      return AppendClose(op, before, step, fault_armed, violation);
    case OpKind::kPump: {
      const size_t ran = m.data->async() ? m.data->CommitDue() : 0;
      ResolvePromises(m, step, violation);
      return "committed " + std::to_string(ran);
    }
    default:
      detail = ChangeNames(op, m, before, fault_armed, step, &status);
      // A rename commits what is queued under its source first: those
      // acknowledgements are checked now, before later commits build on them.
      if (op.kind == OpKind::kRename && m.up() && m.data->async()) {
        ResolvePromises(m, step, violation);
      }
      break;
  }
  if (detail == "skip") return "skipped (" + status.message() + ")";
  if (!expected) expected = Expect(op);
  std::string out = Outcome(status) + (detail.empty() ? "" : " [" + detail + "]");
  if (model_ && expected) {
    const int got = status.ok() ? 0 : ErrnoFor(status);
    if (got != *expected && violation->empty()) {
      *violation = "invariant 3: " + op.Describe() + " gave errno " + std::to_string(got) + " (" +
                   Outcome(status) + "), POSIX gives " + std::to_string(*expected);
    }
  }
  return out;
}

}  // namespace stampfs::sim
