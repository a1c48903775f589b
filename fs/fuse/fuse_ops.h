// The FUSE low-level adapter: each operation converts the kernel's request,
// calls the Namespace or FileData, and replies exactly once. No protocol
// logic lives here.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "fs/data/file_data.h"
#include "fs/namespace/namespace.h"

namespace stampfs {

struct FsContext {
  Namespace* ns;
  FileData* data;
  double ttl_seconds;
  bool read_only;
};

// The operation table; userdata for fuse_session_new must be an FsContext*.
const fuse_lowlevel_ops* FuseOperations();

}  // namespace stampfs
