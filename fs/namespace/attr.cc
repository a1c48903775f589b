#include "fs/namespace/attr.h"

#include <chrono>

namespace stampfs {

Result<Attr> AttrFromEntity(const Entity& e) {
  if (!e.Has("ino") || !e.Has("mode")) {
    return Status(Code::kCorruption, "entry " + e.partition_key + "/" + e.row_key +
                                         " lacks ino or mode");
  }
  Attr a;
  a.ino = static_cast<uint64_t>(e.GetInt64("ino"));
  a.mode = static_cast<uint32_t>(e.GetInt64("mode"));
  a.uid = static_cast<uint32_t>(e.GetInt64("uid"));
  a.gid = static_cast<uint32_t>(e.GetInt64("gid"));
  a.size = static_cast<uint64_t>(e.GetInt64("size"));
  a.mtime_ns = e.GetInt64("mtime");
  a.ctime_ns = e.GetInt64("ctime", a.mtime_ns);
  a.atime_ns = e.GetInt64("atime", a.mtime_ns);
  a.rdev = static_cast<uint64_t>(e.GetInt64("rdev"));
  a.nlink = static_cast<uint32_t>(e.GetInt64("nlink"));  // hard links' inode records only
  return a;
}

void AttrToEntity(const Attr& a, Entity* e) {
  e->properties["ino"] = static_cast<int64_t>(a.ino);
  e->properties["mode"] = static_cast<int64_t>(a.mode);
  e->properties["uid"] = static_cast<int64_t>(a.uid);
  e->properties["gid"] = static_cast<int64_t>(a.gid);
  e->properties["size"] = static_cast<int64_t>(a.size);
  e->properties["mtime"] = a.mtime_ns;
  e->properties["ctime"] = a.ctime_ns;
  e->properties["atime"] = a.atime_ns;
  if (a.rdev != 0) e->properties["rdev"] = static_cast<int64_t>(a.rdev);
}

static struct timespec ToTimespec(int64_t ns) {
  struct timespec ts;
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += 1000000000;
    ts.tv_sec -= 1;
  }
  return ts;
}

struct stat ToStat(const Attr& a, uint32_t blksize) {
  struct stat st {};
  st.st_ino = a.ino;
  st.st_mode = a.mode;
  st.st_nlink = a.removed ? 0 : a.nlink != 0 ? a.nlink : a.IsDir() ? 2 : 1;
  st.st_rdev = static_cast<dev_t>(a.rdev);
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_size = static_cast<off_t>(a.size);
  st.st_blksize = blksize;
  st.st_blocks = static_cast<blkcnt_t>((a.size + 511) / 512);
  st.st_atim = ToTimespec(a.atime_ns);
  st.st_mtim = ToTimespec(a.mtime_ns);
  st.st_ctim = ToTimespec(a.ctime_ns);
  return st;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace stampfs
