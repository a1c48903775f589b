// e2e helper: the system calls no shell tool of Debian 12 makes
// (tests/e2e/posix.sh).
//
//   stampfs_posix rename plain|noreplace|exchange FROM TO   renameat2(2)
//   stampfs_posix mknod-reg PATH                            mknod(2) of S_IFREG, mode 0644
//
// Exit 0 on success; otherwise prints the errno's name (EEXIST, EINVAL...)
// on stdout and exits 1.
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

int Failed() {
  const int err = errno;
  const char* name = strerrorname_np(err);
  printf("%s\n", name ? name : std::to_string(err).c_str());
  return 1;
}

int Usage(const char* self) {
  fprintf(stderr, "usage: %s rename plain|noreplace|exchange FROM TO | mknod-reg PATH\n", self);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(argv[0]);
  const std::string op = argv[1];
  if (op == "mknod-reg" && argc == 3) {
    return mknod(argv[2], S_IFREG | 0644, 0) == 0 ? 0 : Failed();
  }
  if (op != "rename" || argc != 5) return Usage(argv[0]);
  const std::string mode = argv[2];
  unsigned flags = 0;
  if (mode == "noreplace") {
    flags = RENAME_NOREPLACE;
  } else if (mode == "exchange") {
    flags = RENAME_EXCHANGE;
  } else if (mode != "plain") {
    return Usage(argv[0]);
  }
  return renameat2(AT_FDCWD, argv[3], AT_FDCWD, argv[4], flags) == 0 ? 0 : Failed();
}
