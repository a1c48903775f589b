// Counts every FUSE operation by kind ("ops.lookup", "ops.write", ...,
// storage/stats.h) by wrapping an operation table: each wrapper bumps its
// counter and calls the wrapped operation, so fs/fuse/fuse_ops.cc stays unaware.
// Failed replies are counted by errno ("errors.total", "errors.eio", ...).
// The wrappers also remember, per thread, the inode and name the running
// operation is about, so error logs can name them, and let a FUSE interrupt
// of the request cancel its storage calls (fs/fuse/interrupts.h).
#pragma once

#include <string>

#include "fs/fuse/fuse_ops.h"

namespace stampfs {

// The operations of `inner` (which must outlive every session using the
// result), each counted. Call once per process.
const fuse_lowlevel_ops* CountedOperations(const fuse_lowlevel_ops* inner);

// Counts one error reply (ReplyError in fs/fuse/fuse_ops.cc); ENODATA (no
// such xattr) is counted as "xattr.absent", not as an error.
void CountErrorReply(int err);

// What the operation running on this thread is about, for its log lines:
// its inode argument (0: none) and its name argument (null: none; valid
// while the operation runs).
struct RequestTarget {
  uint64_t ino = 0;
  const char* name = nullptr;
};
RequestTarget CurrentRequestTarget();

}  // namespace stampfs
