// Counts every FUSE operation by kind ("ops.lookup", "ops.write", ...,
// storage/stats.h) by wrapping an operation table: each wrapper bumps its
// counter and calls the wrapped operation, so fs/fuse_ops.cc stays unaware.
// Failed replies are counted by errno ("errors.total", "errors.eio", ...).
#pragma once

#include "fs/fuse_ops.h"

namespace stampfs {

// The operations of `inner` (which must outlive every session using the
// result), each counted. Call once per process.
const fuse_lowlevel_ops* CountedOperations(const fuse_lowlevel_ops* inner);

// Counts one error reply (ReplyError in fs/fuse_ops.cc).
void CountErrorReply(int err);

}  // namespace stampfs
