// The one place a Status becomes an errno for the kernel.
#pragma once

#include "storage/status.h"

namespace stampfs {

int ErrnoFor(const Status& status);

}  // namespace stampfs
