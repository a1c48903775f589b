// e2e helper: the system calls no shell tool of Debian 12 makes
// (tests/e2e/posix.sh).
//
//   stampfs_posix rename plain|noreplace|exchange FROM TO   renameat2(2)
//   stampfs_posix mknod-reg PATH                            mknod(2) of S_IFREG, mode 0644
//   stampfs_posix unlinked PATH REF [recreate]              a build tool's temporary file:
//       open PATH (holding REF's bytes), unlink it, then through the descriptor
//       read (== REF), fstat (st_nlink 0), write, ftruncate, fsync; with
//       `recreate`, create PATH anew (O_EXCL) and write "new file" meanwhile;
//       the old descriptor still reads the old data; close.
//   stampfs_posix unlinked-links PATH REF NAME...           the same for a hard-linked
//       file: PATH and every NAME are its names; after the unlink of PATH and
//       of each NAME in turn, fstat shows st_nlink one lower.
//   stampfs_posix fallocate-punch PATH                      fallocate(2) PUNCH_HOLE
//   stampfs_posix rename whiteout FROM TO                   renameat2 RENAME_WHITEOUT
//
// Exit 0 on success; otherwise prints the errno's name (EEXIST, EINVAL...)
// on stdout and exits 1.
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int Failed() {
  const int err = errno;
  const char* name = strerrorname_np(err);
  printf("%s\n", name ? name : std::to_string(err).c_str());
  return 1;
}

int Step(const char* what) {
  printf("%s: ", what);
  return Failed();
}

int Wrong(const char* what, long long got, long long want) {
  printf("%s: %lld, expected %lld\n", what, got, want);
  return 1;
}

bool ReadAt(int fd, std::string* out, size_t n, off_t off) {
  out->assign(n, '\0');
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, out->data() + done, n - done, off + static_cast<off_t>(done));
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

int Unlinked(const char* path, const char* ref_path, bool recreate,
             const std::vector<std::string>& others) {
  std::ifstream in(ref_path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  std::string ref = buf.str();
  const int fd = open(path, O_RDWR);
  if (fd < 0) return Step("open");
  if (unlink(path) != 0) return Step("unlink");
  struct stat st {};
  for (size_t i = 0; i < others.size(); ++i) {
    if (fstat(fd, &st) != 0) return Step("fstat between unlinks");
    const auto left = static_cast<long long>(others.size() - i);
    if (static_cast<long long>(st.st_nlink) != left) return Wrong("st_nlink", st.st_nlink, left);
    if (unlink(others[i].c_str()) != 0) return Step("unlink of another name");
  }
  if (stat(path, &st) == 0 || errno != ENOENT) return Wrong("stat of the name (ENOENT)", errno, ENOENT);
  if (fstat(fd, &st) != 0) return Step("fstat");
  if (st.st_nlink != 0) return Wrong("st_nlink", static_cast<long long>(st.st_nlink), 0);
  if (st.st_size != static_cast<off_t>(ref.size())) return Wrong("st_size", st.st_size, ref.size());
  std::string got;
  if (!ReadAt(fd, &got, ref.size(), 0)) return Step("pread");
  if (got != ref) return Wrong("pread: bytes differ from REF", 0, 0);
  const std::string more = "written after the unlink";
  if (pwrite(fd, more.data(), more.size(), 10) != static_cast<ssize_t>(more.size())) {
    return Step("pwrite");
  }
  ref.replace(10, more.size(), more);
  const size_t half = ref.size() / 2;
  if (ftruncate(fd, static_cast<off_t>(half)) != 0) return Step("ftruncate");
  ref.resize(half);
  if (fstat(fd, &st) != 0) return Step("fstat after ftruncate");
  if (st.st_size != static_cast<off_t>(half)) return Wrong("st_size after ftruncate", st.st_size, half);
  if (st.st_nlink != 0) return Wrong("st_nlink after ftruncate", st.st_nlink, 0);
  if (fsync(fd) != 0) return Step("fsync");
  if (recreate) {
    const int nfd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (nfd < 0) return Step("create of the same name");
    struct stat nst {};
    if (fstat(nfd, &nst) != 0) return Step("fstat of the new file");
    if (nst.st_ino == st.st_ino) return Wrong("the new file's inode", nst.st_ino, 0);
    const std::string text = "new file";
    if (write(nfd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return Step("write of the new file");
    }
    if (close(nfd) != 0) return Step("close of the new file");
  }
  if (!ReadAt(fd, &got, ref.size(), 0)) return Step("pread after fsync");
  if (got != ref) return Wrong("pread after fsync: bytes differ", 0, 0);
  if (close(fd) != 0) return Step("close");
  return 0;
}

int Usage(const char* self) {
  fprintf(stderr, "usage: %s rename plain|noreplace|exchange|whiteout FROM TO | mknod-reg PATH | "
          "unlinked PATH REF [recreate] | unlinked-links PATH REF NAME... | "
          "fallocate-punch PATH\n", self);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage(argv[0]);
  const std::string op = argv[1];
  if (op == "mknod-reg" && argc == 3) {
    return mknod(argv[2], S_IFREG | 0644, 0) == 0 ? 0 : Failed();
  }
  if (op == "unlinked" && (argc == 4 || argc == 5)) {
    return Unlinked(argv[2], argv[3], argc == 5 && std::string(argv[4]) == "recreate", {});
  }
  if (op == "unlinked-links" && argc >= 5) {
    return Unlinked(argv[2], argv[3], false, std::vector<std::string>(argv + 4, argv + argc));
  }
  if (op == "fallocate-punch" && argc == 3) {
    const int fd = open(argv[2], O_RDWR);
    if (fd < 0) return Step("open");
    const int r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1);
    close(fd);
    return r == 0 ? 0 : Failed();
  }
  if (op != "rename" || argc != 5) return Usage(argv[0]);
  const std::string mode = argv[2];
  unsigned flags = 0;
  if (mode == "noreplace") {
    flags = RENAME_NOREPLACE;
  } else if (mode == "exchange") {
    flags = RENAME_EXCHANGE;
  } else if (mode == "whiteout") {
    flags = RENAME_WHITEOUT;
  } else if (mode != "plain") {
    return Usage(argv[0]);
  }
  return renameat2(AT_FDCWD, argv[3], AT_FDCWD, argv[4], flags) == 0 ? 0 : Failed();
}
