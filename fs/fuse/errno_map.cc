#include "fs/fuse/errno_map.h"

#include <cerrno>

namespace stampfs {

int ErrnoFor(const Status& status) {
  switch (status.code()) {
    case Code::kOk:
      return 0;
    case Code::kNotFound:
      return ENOENT;
    case Code::kAlreadyExists:
      return EEXIST;
    // Another mount changed what we based this write on. The namespace retries
    // or turns this into a conflict copy before it gets here; what remains is
    // an I/O error the caller must see.
    case Code::kPreconditionFailed:
      return EIO;
    // 409 other than "exists": a lease or a container being deleted. Busy.
    case Code::kConflict:
      return EBUSY;
    case Code::kAuth:
      return EACCES;
    // The backend is slow or gone after every retry: the operation failed.
    case Code::kThrottled:
    case Code::kTimeout:
    case Code::kTransport:
    case Code::kCorruption:
    case Code::kInternal:
      return EIO;
    // The caller was interrupted (a signal: FUSE_INTERRUPT) and gave up.
    case Code::kCancelled:
      return EINTR;
    case Code::kInvalidArgument:
      return EINVAL;
    // An entity over 1 MiB (xattrs, long symlink) or a file past the blob limit.
    case Code::kTooLarge:
      return EFBIG;
    case Code::kNotSupported:
      return ENOTSUP;
    case Code::kReadOnly:
      return EROFS;
    case Code::kNotEmpty:
      return ENOTEMPTY;
    case Code::kNotADirectory:
      return ENOTDIR;
    case Code::kIsADirectory:
      return EISDIR;
    case Code::kNameTooLong:
      return ENAMETOOLONG;
    case Code::kNoAttribute:
      return ENODATA;
    case Code::kRange:
      return ERANGE;
    case Code::kNotPermitted:
      return EPERM;
    case Code::kIllegalSequence:
      return EILSEQ;
    case Code::kNoSpace:
      return ENOSPC;
    // An open of an inode whose name was removed or replaced and whose data
    // is gone: the kernel walks the path once more (do_filp_open retries on
    // ESTALE) and opens what the name holds now.
    case Code::kStale:
      return ESTALE;
  }
  return EIO;
}

}  // namespace stampfs
