#include "fs/file_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fs/log.h"

namespace stampfs {

namespace {

Status ErrnoStatus(const std::string& what) {
  return Status(Code::kInternal, what + ": " + std::strerror(errno));
}

// Blob metadata that lets the table be rebuilt from the container alone.
BlobMetadata MetadataFor(const Attr& attr, int64_t mtime_ns) {
  return {{"mode", std::to_string(attr.mode)},
          {"uid", std::to_string(attr.uid)},
          {"gid", std::to_string(attr.gid)},
          {"mtime", std::to_string(mtime_ns)}};
}

}  // namespace

FileData::FileData(Namespace& ns, BlobStore& blobs, std::string container, std::string work_dir)
    : ns_(ns), blobs_(blobs), container_(std::move(container)), work_dir_(std::move(work_dir)) {}

FileData::~FileData() {
  for (auto& [ino, f] : files_) {
    if (f->fd >= 0) close(f->fd);
  }
}

std::shared_ptr<FileData::OpenFile> FileData::Find(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(ino);
  return it == files_.end() ? nullptr : it->second;
}

// An anonymous file in the work directory: nothing is left behind on exit.
Result<int> FileData::MakeLocalFile() {
  int fd = open(work_dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus("create a local copy in " + work_dir_);
  return fd;
}

Status FileData::Download(uint64_t ino, OpenFile& file, const FileState& state) {
  file.blob = state.blob;
  file.base_etag = state.blob_etag;
  file.mtime_ns = state.attr.mtime_ns;
  file.size = 0;
  if (state.blob_etag.empty() || state.attr.size == 0) return Status::Ok();
  int fd = file.fd;
  blob_requests_++;
  auto r = blobs_.Read(container_, state.blob, 0, 0, Condition::IfMatch(state.blob_etag),
                       [fd](uint64_t offset, const char* data, size_t len) {
                         return pwrite(fd, data, len, static_cast<off_t>(offset)) ==
                                static_cast<ssize_t>(len);
                       });
  STAMPFS_RETURN_IF_ERROR(r.status().WithContext("read " + state.path));
  if (ftruncate(fd, static_cast<off_t>(r->bytes)) != 0) return ErrnoStatus("truncate copy");
  file.size = r->bytes;
  (void)ino;
  return Status::Ok();
}

Status FileData::Open(uint64_t ino, bool truncate, bool created) {
  std::shared_ptr<OpenFile> file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = files_[ino];
    if (!slot) slot = std::make_shared<OpenFile>();
    file = slot;
  }
  std::lock_guard<std::mutex> lock(file->mu);
  if (file->refs == 0) {
    auto fd = MakeLocalFile();
    STAMPFS_RETURN_IF_ERROR(fd);
    file->fd = *fd;
    auto state = ns_.GetFile(ino, false);
    Status s = state.ok() ? Download(ino, *file, *state) : state.status();
    if (s.Is(Code::kPreconditionFailed)) {
      // The entry lagged behind the blob (another mount's commit in flight):
      // read the entry again and pin the version it now names.
      state = ns_.GetFile(ino, true);
      s = state.ok() ? Download(ino, *file, *state) : state.status();
    }
    if (!s.ok()) {
      close(file->fd);
      file->fd = -1;
      std::lock_guard<std::mutex> map_lock(mu_);
      files_.erase(ino);
      return s;
    }
    ns_.Pin(ino);
  }
  file->refs++;
  if (created) file->dirty = true;
  if (truncate && (file->size != 0 || file->base_etag.empty())) {
    if (ftruncate(file->fd, 0) != 0) return ErrnoStatus("truncate");
    file->size = 0;
    file->dirty = true;
    file->mtime_ns = NowNs();
  }
  return Status::Ok();
}

Result<size_t> FileData::Read(uint64_t ino, char* buf, size_t size, uint64_t offset) {
  auto file = Find(ino);
  if (!file) return Status(Code::kInvalidArgument, "file is not open");
  std::lock_guard<std::mutex> lock(file->mu);
  ssize_t n = pread(file->fd, buf, size, static_cast<off_t>(offset));
  if (n < 0) return ErrnoStatus("read local copy");
  return static_cast<size_t>(n);
}

Result<size_t> FileData::Write(uint64_t ino, const char* buf, size_t size, uint64_t offset) {
  auto file = Find(ino);
  if (!file) return Status(Code::kInvalidArgument, "file is not open");
  std::lock_guard<std::mutex> lock(file->mu);
  ssize_t n = pwrite(file->fd, buf, size, static_cast<off_t>(offset));
  if (n < 0) return ErrnoStatus("write local copy");
  file->dirty = true;
  file->size = std::max<uint64_t>(file->size, offset + static_cast<uint64_t>(n));
  file->mtime_ns = NowNs();
  return static_cast<size_t>(n);
}

Status FileData::Commit(uint64_t ino, OpenFile& file) {
  if (!file.dirty) return Status::Ok();
  auto state = ns_.GetFile(ino, true);
  if (state.status().Is(Code::kNotFound)) return Status::Ok();  // unlinked: nothing to keep
  STAMPFS_RETURN_IF_ERROR(state);
  // A rename moved the blob (server-side copy of our base): the entry's blob
  // ETag is then the version this copy is based on.
  std::string base = state->blob != file.blob ? state->blob_etag : file.base_etag;
  Condition cond = base.empty() ? Condition::IfNoneMatchAny() : Condition::IfMatch(base);
  int fd = file.fd;
  HttpBody body;
  body.size = file.size;
  body.reader = [fd](uint64_t offset, char* out, size_t len) -> size_t {
    ssize_t n = pread(fd, out, len, static_cast<off_t>(offset));
    return n < 0 ? 0 : static_cast<size_t>(n);
  };
  blob_requests_++;
  auto etag = blobs_.Put(container_, state->blob, body, MetadataFor(state->attr, file.mtime_ns),
                         cond);
  if (etag.status().Is(Code::kPreconditionFailed) || etag.status().Is(Code::kAlreadyExists)) {
    LogWarning("conflict: another writer committed " + state->path +
               " first; this mount's changes were not written");
    return Status(Code::kPreconditionFailed, "conflict on " + state->path);
  }
  STAMPFS_RETURN_IF_ERROR(etag.status().WithContext("write " + state->path));
  auto attr = ns_.CommitFile(ino, file.size, file.mtime_ns, *etag);
  STAMPFS_RETURN_IF_ERROR(attr);
  file.blob = state->blob;
  file.base_etag = *etag;
  file.dirty = false;
  return Status::Ok();
}

Status FileData::Flush(uint64_t ino) {
  auto file = Find(ino);
  if (!file) return Status::Ok();
  std::lock_guard<std::mutex> lock(file->mu);
  return Commit(ino, *file);
}

Status FileData::Release(uint64_t ino) {
  auto file = Find(ino);
  if (!file) return Status::Ok();
  std::unique_lock<std::mutex> lock(file->mu);
  Status s = Commit(ino, *file);
  if (--file->refs > 0) return s;
  close(file->fd);
  file->fd = -1;
  std::string orphan = file->delete_on_close;
  lock.unlock();
  {
    std::lock_guard<std::mutex> map_lock(mu_);
    files_.erase(ino);
  }
  ns_.Unpin(ino);
  if (!orphan.empty()) {
    blob_requests_++;
    blobs_.Delete(container_, orphan, Condition::None()).PermitUnchecked();
  }
  return s;
}

Status FileData::Truncate(uint64_t ino, uint64_t size) {
  STAMPFS_RETURN_IF_ERROR(Open(ino, size == 0, false));
  Status s;
  {
    auto file = Find(ino);
    std::lock_guard<std::mutex> lock(file->mu);
    if (file->size != size) {
      if (ftruncate(file->fd, static_cast<off_t>(size)) != 0) s = ErrnoStatus("truncate");
      file->size = size;
      file->dirty = true;
      file->mtime_ns = NowNs();
    }
    if (s.ok()) s = Commit(ino, *file);
  }
  Status r = Release(ino);
  return s.ok() ? r : s;
}

bool FileData::OverrideAttr(uint64_t ino, Attr* attr) {
  auto file = Find(ino);
  if (!file) return false;
  std::lock_guard<std::mutex> lock(file->mu);
  if (!file->dirty) return false;
  attr->size = file->size;
  attr->mtime_ns = file->mtime_ns;
  return true;
}

void FileData::Unlinked(uint64_t ino, const std::string& blob) {
  if (blob.empty()) return;
  DeleteBlobWhenUnused(ino, blob);
}

void FileData::DeleteBlobWhenUnused(uint64_t ino, const std::string& blob) {
  if (auto file = Find(ino)) {
    std::lock_guard<std::mutex> lock(file->mu);
    if (file->refs > 0) {
      file->delete_on_close = blob;
      file->dirty = false;  // its name is gone: nothing to commit
      return;
    }
  }
  blob_requests_++;
  blobs_.Delete(container_, blob, Condition::None()).PermitUnchecked();
}

}  // namespace stampfs
