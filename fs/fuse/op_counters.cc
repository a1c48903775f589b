#include "fs/fuse/op_counters.h"

#include <cerrno>
#include <tuple>
#include <type_traits>

#include "fs/fuse/interrupts.h"
#include "storage/stats.h"

namespace stampfs {
namespace {

const fuse_lowlevel_ops* g_inner = nullptr;

thread_local RequestTarget t_target;

// The first argument when it is an inode, the second when it is an entry
// name. `Named` only for the operations whose second argument is one: write's
// is the data (logged as a path, it put file contents in syslog and read past
// the buffer), setxattr's an attribute name.
template <bool Named, typename... Args>
RequestTarget TargetOf(const Args&... args) {
  RequestTarget target;
  std::tuple<const Args&...> all(args...);
  if constexpr (sizeof...(Args) >= 1) {
    if constexpr (std::is_same_v<std::tuple_element_t<0, std::tuple<Args...>>, fuse_ino_t>) {
      target.ino = std::get<0>(all);
    }
  }
  if constexpr (Named && sizeof...(Args) >= 2) {
    if constexpr (std::is_same_v<std::tuple_element_t<1, std::tuple<Args...>>, const char*>) {
      target.name = std::get<1>(all);
    }
  }
  return target;
}

template <auto Member, bool Named, typename Fn>
struct Counted;

// One wrapper per operation member: counts, then calls the wrapped table
// with the request's interrupt wired to its storage calls.
template <auto Member, bool Named, typename... Args>
struct Counted<Member, Named, void (*)(fuse_req_t, Args...)> {
  static inline Counter* counter = nullptr;
  static void Call(fuse_req_t req, Args... args) {
    counter->Add();
    InterruptScope interruptible(req);
    t_target = TargetOf<Named>(args...);
    (g_inner->*Member)(req, args...);
    t_target = {};
  }
};

template <auto Member, bool Named = false>
void Wrap(fuse_lowlevel_ops* ops, const char* name) {
  using Fn = std::remove_reference_t<decltype(ops->*Member)>;
  if (!(g_inner->*Member)) return;
  Counted<Member, Named, Fn>::counter = new Counter(std::string("ops.") + name);  // lives forever
  ops->*Member = &Counted<Member, Named, Fn>::Call;
}

Counter g_errors_total{"errors.total"};
Counter g_errors_eio{"errors.eio"};
Counter g_errors_erofs{"errors.erofs"};
Counter g_errors_eacces{"errors.eacces"};
Counter g_errors_other{"errors.other"};
Counter g_xattr_absent{"xattr.absent"};

}  // namespace

const fuse_lowlevel_ops* CountedOperations(const fuse_lowlevel_ops* inner) {
  static fuse_lowlevel_ops ops = *inner;
  g_inner = inner;
  Wrap<&fuse_lowlevel_ops::lookup, true>(&ops, "lookup");
  Wrap<&fuse_lowlevel_ops::forget>(&ops, "forget");
  Wrap<&fuse_lowlevel_ops::forget_multi>(&ops, "forget_multi");
  Wrap<&fuse_lowlevel_ops::getattr>(&ops, "getattr");
  Wrap<&fuse_lowlevel_ops::setattr>(&ops, "setattr");
  Wrap<&fuse_lowlevel_ops::readlink>(&ops, "readlink");
  Wrap<&fuse_lowlevel_ops::mknod, true>(&ops, "mknod");
  Wrap<&fuse_lowlevel_ops::mkdir, true>(&ops, "mkdir");
  Wrap<&fuse_lowlevel_ops::unlink, true>(&ops, "unlink");
  Wrap<&fuse_lowlevel_ops::rmdir, true>(&ops, "rmdir");
  Wrap<&fuse_lowlevel_ops::symlink>(&ops, "symlink");
  Wrap<&fuse_lowlevel_ops::rename, true>(&ops, "rename");
  Wrap<&fuse_lowlevel_ops::link>(&ops, "link");
  Wrap<&fuse_lowlevel_ops::open>(&ops, "open");
  Wrap<&fuse_lowlevel_ops::read>(&ops, "read");
  Wrap<&fuse_lowlevel_ops::write>(&ops, "write");
  Wrap<&fuse_lowlevel_ops::flush>(&ops, "flush");
  Wrap<&fuse_lowlevel_ops::release>(&ops, "release");
  Wrap<&fuse_lowlevel_ops::fsync>(&ops, "fsync");
  Wrap<&fuse_lowlevel_ops::opendir>(&ops, "opendir");
  Wrap<&fuse_lowlevel_ops::readdir>(&ops, "readdir");
  Wrap<&fuse_lowlevel_ops::releasedir>(&ops, "releasedir");
  Wrap<&fuse_lowlevel_ops::fsyncdir>(&ops, "fsyncdir");
  Wrap<&fuse_lowlevel_ops::statfs>(&ops, "statfs");
  Wrap<&fuse_lowlevel_ops::setxattr>(&ops, "setxattr");
  Wrap<&fuse_lowlevel_ops::getxattr>(&ops, "getxattr");
  Wrap<&fuse_lowlevel_ops::listxattr>(&ops, "listxattr");
  Wrap<&fuse_lowlevel_ops::removexattr>(&ops, "removexattr");
  Wrap<&fuse_lowlevel_ops::access>(&ops, "access");
  Wrap<&fuse_lowlevel_ops::create, true>(&ops, "create");
  Wrap<&fuse_lowlevel_ops::fallocate>(&ops, "fallocate");
  Wrap<&fuse_lowlevel_ops::readdirplus>(&ops, "readdirplus");
  return &ops;
}

RequestTarget CurrentRequestTarget() { return t_target; }

void CountErrorReply(int err) {
  // "No such attribute" answers the kernel's own probes (security.capability
  // on writes, ACLs on ls -l): an outcome, not an error.
  if (err == ENODATA) return g_xattr_absent.Add();
  g_errors_total.Add();
  switch (err) {
    case EIO:
      g_errors_eio.Add();
      break;
    case EROFS:
      g_errors_erofs.Add();
      break;
    case EACCES:
      g_errors_eacces.Add();
      break;
    default:
      g_errors_other.Add();
      break;
  }
}

}  // namespace stampfs
