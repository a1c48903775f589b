#include "fs/fuse/fuse_ops.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "fs/fuse/errno_map.h"
#include "fs/base/log.h"
#include "fs/fuse/op_counters.h"

namespace stampfs {

namespace {

FsContext& Ctx(fuse_req_t req) { return *static_cast<FsContext*>(fuse_req_userdata(req)); }

// " /dir/name" for the log line of the operation running on this thread.
std::string TargetForLog(fuse_req_t req) {
  RequestTarget t = CurrentRequestTarget();
  if (t.ino == 0) return {};
  auto dir = Ctx(req).ns->KnownPath(t.ino);
  std::string out = " " + (dir ? *dir : "(inode " + std::to_string(t.ino) + ")");
  if (t.name != nullptr) out = dir ? " " + JoinPath(*dir, t.name) : out + "/" + t.name;
  return out;
}

// Logs (I/O-level failures loudly, expected outcomes quietly) and replies.
void ReplyError(fuse_req_t req, const Status& status, const char* op) {
  int err = ErrnoFor(status);
  std::string line = std::string(op) + TargetForLog(req) + ": " + status.ToString();
  if (err == EIO || err == EACCES) {
    LogWarning(line);
  } else {
    LogDebug(line);
  }
  CountErrorReply(err);
  fuse_reply_err(req, err);
}

fuse_entry_param EntryFor(fuse_req_t req, const Attr& attr) {
  FsContext& c = Ctx(req);
  fuse_entry_param e{};
  Attr shown = c.ns->Present(attr);
  c.data->OverrideAttr(attr.ino, &shown);
  e.ino = attr.ino;
  e.attr = ToStat(shown);
  e.attr_timeout = c.ttl_seconds;
  e.entry_timeout = c.ttl_seconds;
  return e;
}

void ReplyEntry(fuse_req_t req, const Result<Attr>& attr, const char* op) {
  if (!attr.ok()) return ReplyError(req, attr.status(), op);
  fuse_entry_param e = EntryFor(req, *attr);
  fuse_reply_entry(req, &e);
}

void ReplyAttr(fuse_req_t req, const Result<Attr>& attr, const char* op) {
  if (!attr.ok()) return ReplyError(req, attr.status(), op);
  fuse_entry_param e = EntryFor(req, *attr);
  fuse_reply_attr(req, &e.attr, Ctx(req).ttl_seconds);
}

void ReplyStatus(fuse_req_t req, const Status& s, const char* op) {
  if (!s.ok()) return ReplyError(req, s, op);
  fuse_reply_err(req, 0);
}

void OnInit(void*, fuse_conn_info* conn) {
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  // Always readdirplus: one partition query carries every attribute.
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
}

void OnLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto attr = Ctx(req).ns->Lookup(parent, name);
  if (attr.status().Is(Code::kNotFound)) {
    // A negative entry the kernel may cache for the TTL.
    fuse_entry_param e{};
    e.ino = 0;
    e.entry_timeout = Ctx(req).ttl_seconds;
    fuse_reply_entry(req, &e);
    return;
  }
  ReplyEntry(req, attr, "lookup");
}

void OnForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Ctx(req).ns->Forget(ino, nlookup);
  fuse_reply_none(req);
}

void OnForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) Ctx(req).ns->Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void OnGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  auto attr = Ctx(req).ns->GetAttr(ino);
  if (attr.status().Is(Code::kNotFound)) {
    // fstat right after an open racing a rename over the name: the entry
    // names the new file before this mount marks the old one removed.
    if (auto open = Ctx(req).data->OpenAttr(ino)) {
      attr = *open;
    } else {
      // Another writer removed or replaced the name the kernel knows this
      // inode by (its cached attributes were dropped: an open's permission
      // check asks here first): ESTALE makes the kernel walk the path again
      // (stat, open) and find what the name holds now, or nothing.
      attr = Status(Code::kStale, attr.status().message());
    }
  }
  ReplyAttr(req, attr, "getattr");
}

int64_t TimeNs(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void OnSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* st, int to_set, fuse_file_info*) {
  FsContext& c = Ctx(req);
  if (to_set & FUSE_SET_ATTR_SIZE) {
    Status s = c.data->Truncate(ino, static_cast<uint64_t>(st->st_size));
    if (!s.ok()) return ReplyError(req, s, "truncate");
  }
  SetAttrRequest r;
  if (to_set & FUSE_SET_ATTR_MODE) r.mode = st->st_mode;
  if (to_set & FUSE_SET_ATTR_UID) r.uid = st->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) r.gid = st->st_gid;
  if (to_set & FUSE_SET_ATTR_ATIME_NOW)
    r.atime_ns = NowNs();
  else if (to_set & FUSE_SET_ATTR_ATIME)
    r.atime_ns = TimeNs(st->st_atim);
  if (to_set & FUSE_SET_ATTR_MTIME_NOW)
    r.mtime_ns = NowNs();
  else if (to_set & FUSE_SET_ATTR_MTIME)
    r.mtime_ns = TimeNs(st->st_mtim);
  bool other = r.mode || r.uid || r.gid || r.atime_ns || r.mtime_ns;
  ReplyAttr(req, other ? c.data->SetAttr(ino, r) : c.ns->GetAttr(ino), "setattr");
}

struct DirHandle {
  std::vector<DirEntry> entries;
  bool loaded = false;
};

void OnOpendir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  fi->fh = reinterpret_cast<uint64_t>(new DirHandle);
  fuse_reply_open(req, fi);
}

void OnReleasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete reinterpret_cast<DirHandle*>(fi->fh);
  fuse_reply_err(req, 0);
}

// Offsets: 1 = after ".", 2 = after "..", 2+i+1 = after entry i.
void ReadDirCommon(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                   bool plus) {
  FsContext& c = Ctx(req);
  auto* h = reinterpret_cast<DirHandle*>(fi->fh);
  if (off == 0 || !h->loaded) {
    auto entries = c.ns->ReadDir(ino);
    if (!entries.ok()) return ReplyError(req, entries.status(), "readdir");
    h->entries = std::move(*entries);
    h->loaded = true;
  }
  std::vector<char> buf(size);
  size_t used = 0;
  for (off_t i = off; i < static_cast<off_t>(h->entries.size()) + 2; ++i) {
    const bool dot = i < 2;
    const char* name = i == 0 ? "." : i == 1 ? ".." : h->entries[i - 2].name.c_str();
    size_t n;
    if (plus) {
      fuse_entry_param e{};
      if (dot || !h->entries[i - 2].attr_complete) {
        // Entry ino 0: the kernel links nothing and counts no lookup (a
        // subdirectory whose own partition is not cached is left to lookup:
        // its times and st_nlink come from there); st_ino must still be
        // non-zero or readdir(3) hides the entry.
        e.attr.st_ino = i == 0 ? ino : dot ? kRootIno : h->entries[i - 2].attr.ino;
        e.attr.st_mode = dot ? S_IFDIR : h->entries[i - 2].attr.mode;
      } else {
        e = EntryFor(req, h->entries[i - 2].attr);
      }
      n = fuse_add_direntry_plus(req, buf.data() + used, size - used, name, &e, i + 1);
      if (n > size - used) break;
      if (e.ino != 0) c.ns->Remember(ino, h->entries[i - 2]);
    } else {
      struct stat st {};
      st.st_ino = i == 0 ? ino : i == 1 ? kRootIno : h->entries[i - 2].attr.ino;
      st.st_mode = dot ? S_IFDIR : h->entries[i - 2].attr.mode;
      n = fuse_add_direntry(req, buf.data() + used, size - used, name, &st, i + 1);
      if (n > size - used) break;
    }
    used += n;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void OnReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, false);
}

void OnReaddirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  ReadDirCommon(req, ino, size, off, fi, true);
}

void OnMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  const fuse_ctx* who = fuse_req_ctx(req);
  ReplyEntry(req, Ctx(req).ns->Mkdir(parent, name, mode, who->uid, who->gid), "mkdir");
}

// FIFOs, sockets (bind(2)) and devices are entries with no data; the kernel
// serves their opens itself (a FIFO's reads and writes never reach FUSE).
void OnMknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  const fuse_ctx* who = fuse_req_ctx(req);
  ReplyEntry(req, Ctx(req).ns->Mknod(parent, name, mode, rdev, who->uid, who->gid), "mknod");
}

void OnRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  ReplyStatus(req, Ctx(req).ns->Rmdir(parent, name), "rmdir");
}

void OnUnlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  FsContext& c = Ctx(req);
  auto gone = c.ns->Unlink(parent, name);
  if (!gone.ok()) return ReplyError(req, gone.status(), "unlink");
  c.data->Unlinked(*gone);
  fuse_reply_err(req, 0);
}

void OnRename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
              const char* newname, unsigned int flags) {
  FsContext& c = Ctx(req);
  if (flags & ~static_cast<unsigned>(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
    return (void)fuse_reply_err(req, EINVAL);  // RENAME_WHITEOUT: overlayfs only
  }
  unsigned f = 0;
  if (flags & RENAME_NOREPLACE) f |= Namespace::kNoReplace;
  if (flags & RENAME_EXCHANGE) f |= Namespace::kExchange;
  const bool exchange = (flags & RENAME_EXCHANGE) != 0;
  const uint64_t target = c.data->BeforeRename(parent, name, newparent, newname, exchange);
  uint64_t moved = 0;
  auto orphans = c.ns->Rename(parent, name, newparent, newname, f, &moved);
  if (!orphans.ok()) {
    c.data->RenameDone(target);
    return ReplyError(req, orphans.status(), "rename");
  }
  // The replaced file: its blob is the rename's (overwritten or orphaned).
  if (target != 0 && c.ns->RemovedHere(target)) c.data->Unlinked(target, "", "");
  c.data->RenameDone(target);
  for (const std::string& blob : *orphans) c.data->DeleteBlobWhenUnused(0, blob);
  if (moved != 0) c.data->Renamed(moved);
  if (exchange) {  // both were renamed
    for (auto at : {std::pair<uint64_t, const char*>{parent, name}, {newparent, newname}}) {
      if (auto e = c.ns->Peek(at.first, at.second); e.ok()) c.data->Renamed(e->ino);
    }
  }
  fuse_reply_err(req, 0);
}

void OnSymlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  const fuse_ctx* who = fuse_req_ctx(req);
  ReplyEntry(req, Ctx(req).ns->Symlink(parent, name, target, who->uid, who->gid), "symlink");
}

void OnReadlink(fuse_req_t req, fuse_ino_t ino) {
  auto target = Ctx(req).ns->ReadLink(ino);
  if (!target.ok()) return ReplyError(req, target.status(), "readlink");
  fuse_reply_readlink(req, target->c_str());
}

void OnLink(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char* newname) {
  FsContext& c = Ctx(req);
  // Only a committed file is linked: what is queued or still pending is
  // committed first (both commit modes).
  if (c.data->Pending(ino) || c.ns->IsPending(ino)) {
    Status s = c.data->Sync(ino);
    if (!s.ok()) return ReplyError(req, s, "link");
  }
  ReplyEntry(req, c.ns->Link(ino, newparent, newname), "link");
}

OpenFlags OpenFlagsOf(int flags, bool created) {
  OpenFlags f;
  f.created = created;
  f.truncate = created || (flags & O_TRUNC);
  f.writable = (flags & O_ACCMODE) != O_RDONLY;
  return f;
}

void OnCreate(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
              fuse_file_info* fi) {
  FsContext& c = Ctx(req);
  const fuse_ctx* who = fuse_req_ctx(req);
  // Without O_EXCL the entry waits for the first commit (one transaction
  // with the blob's ETag); O_EXCL reserves the name in the table now, but
  // with commit=async only on this mount: across mounts the later commit
  // finds the name taken and becomes a conflict copy (docs/semantics.md).
  const bool deferred = !(fi->flags & O_EXCL) || c.data->async();
  // A new file will keep a cache file open until committed: room first.
  if (Status room = c.data->WaitForRoom(); !room.ok()) return ReplyError(req, room, "create");
  auto attr = c.ns->Create(parent, name, mode, who->uid, who->gid, deferred);
  bool created = attr.ok();
  if (attr.status().Is(Code::kAlreadyExists) && !(fi->flags & O_EXCL)) {
    attr = c.ns->Lookup(parent, name);  // another mount won the race: open its file
  }
  if (!attr.ok()) return ReplyError(req, attr.status(), "create");
  auto opened = c.data->Open(attr->ino, OpenFlagsOf(fi->flags, created));
  if (!opened.ok()) {
    // A create that fails leaves no name behind.
    if (created) {
      if (auto gone = c.ns->Unlink(parent, name); gone.ok()) c.data->Unlinked(*gone);
    }
    return ReplyError(req, opened.status(), "create");
  }
  fi->fh = opened->handle;
  fi->direct_io = (fi->flags & O_APPEND) ? 1 : 0;
  fuse_entry_param e = EntryFor(req, *attr);
  fuse_reply_create(req, &e, fi);
}

void OnOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  FsContext& c = Ctx(req);
  auto opened = c.data->Open(ino, OpenFlagsOf(fi->flags, false));
  if (!opened.ok()) return ReplyError(req, opened.status(), "open");
  fi->fh = opened->handle;
  fi->keep_cache = opened->keep_cache ? 1 : 0;
  // O_APPEND writes land at the daemon's end of file, not the kernel's
  // offset (FileData::Write): the page cache, placing them by the kernel's
  // i_size, would show them elsewhere.
  fi->direct_io = (fi->flags & O_APPEND) ? 1 : 0;
  fuse_reply_open(req, fi);
}

void OnRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info*) {
  std::unique_ptr<char[]> buf(new char[size]);
  auto n = Ctx(req).data->Read(ino, buf.get(), size, static_cast<uint64_t>(off));
  if (!n.ok()) return ReplyError(req, n.status(), "read");
  fuse_reply_buf(req, buf.get(), *n);
}

void OnWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, size_t size, off_t off,
             fuse_file_info* fi) {
  const bool append = (fi->flags & O_APPEND) != 0;
  auto n = Ctx(req).data->Write(ino, buf, size, static_cast<uint64_t>(off), append, fi->fh);
  if (!n.ok()) return ReplyError(req, n.status(), "write");
  fuse_reply_write(req, *n);
}

void OnFlush(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  ReplyStatus(req, Ctx(req).data->Flush(ino), "flush");
}

void OnFsync(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  ReplyStatus(req, Ctx(req).data->Sync(ino), "fsync");
}

// A directory's entries are durable once the files of this mount are
// committed (a new file's entry is inserted by its first commit).
void OnFsyncdir(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) {
  ReplyStatus(req, Ctx(req).data->SyncAll(), "fsyncdir");
}

void OnRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  ReplyStatus(req, Ctx(req).data->Release(ino), "release");
}

void OnFallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                 fuse_file_info*) {
  ReplyStatus(req,
              Ctx(req).data->Fallocate(ino, mode, static_cast<uint64_t>(offset),
                                       static_cast<uint64_t>(length)),
              "fallocate");
}

void OnStatfs(fuse_req_t req, fuse_ino_t) {
  // A container has no fixed capacity: report a large, constant one.
  struct statvfs s {};
  s.f_bsize = s.f_frsize = 4096;
  s.f_blocks = s.f_bfree = s.f_bavail = (1ULL << 50) / 4096;
  s.f_files = s.f_ffree = s.f_favail = 1ULL << 32;
  s.f_namemax = 255;
  fuse_reply_statfs(req, &s);
}

void OnAccess(fuse_req_t req, fuse_ino_t, int) {
  // Permission checks are the kernel's (default_permissions).
  fuse_reply_err(req, 0);
}

void OnSetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
                int flags) {
  int f = 0;
  if (flags & XATTR_CREATE) f |= Namespace::kXattrCreate;
  if (flags & XATTR_REPLACE) f |= Namespace::kXattrReplace;
  ReplyStatus(req, Ctx(req).ns->SetXattr(ino, name, std::string(value, size), f), "setxattr");
}

void OnGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  auto v = Ctx(req).ns->GetXattr(ino, name);
  if (!v.ok()) return ReplyError(req, v.status(), "getxattr");
  if (size == 0) return (void)fuse_reply_xattr(req, v->size());
  if (size < v->size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, v->data(), v->size());
}

void OnListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  auto names = Ctx(req).ns->ListXattr(ino);
  if (!names.ok()) return ReplyError(req, names.status(), "listxattr");
  std::string list;
  for (const std::string& n : *names) list.append(n).push_back('\0');
  if (size == 0) return (void)fuse_reply_xattr(req, list.size());
  if (size < list.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, list.data(), list.size());
}

void OnRemovexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  ReplyStatus(req, Ctx(req).ns->RemoveXattr(ino, name), "removexattr");
}

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops ops{};
  ops.init = OnInit;
  ops.lookup = OnLookup;
  ops.forget = OnForget;
  ops.forget_multi = OnForgetMulti;
  ops.getattr = OnGetattr;
  ops.setattr = OnSetattr;
  ops.opendir = OnOpendir;
  ops.releasedir = OnReleasedir;
  ops.readdir = OnReaddir;
  ops.readdirplus = OnReaddirplus;
  ops.mkdir = OnMkdir;
  ops.mknod = OnMknod;
  ops.rmdir = OnRmdir;
  ops.unlink = OnUnlink;
  ops.rename = OnRename;
  ops.symlink = OnSymlink;
  ops.readlink = OnReadlink;
  ops.link = OnLink;
  ops.create = OnCreate;
  ops.open = OnOpen;
  ops.read = OnRead;
  ops.write = OnWrite;
  ops.flush = OnFlush;
  ops.fsync = OnFsync;
  ops.fsyncdir = OnFsyncdir;
  ops.release = OnRelease;
  ops.fallocate = OnFallocate;
  ops.statfs = OnStatfs;
  ops.access = OnAccess;
  ops.setxattr = OnSetxattr;
  ops.getxattr = OnGetxattr;
  ops.listxattr = OnListxattr;
  ops.removexattr = OnRemovexattr;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops* FuseOperations() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return &ops;
}

}  // namespace stampfs
