// File contents for open files: a whole-blob get on first open into a local
// file under the cache directory, reads and writes against that copy, a
// whole-blob put on flush/fsync/close when it is dirty.
//
// Every commit is conditional: If-None-Match:* for a file with no blob yet,
// If-Match:<blob ETag seen at open> otherwise; then the entry is merged with
// size, mtime and the new blob ETag. A 412/409 on the blob means another
// writer committed first: the commit fails with kPreconditionFailed (EIO),
// nothing is overwritten and the data stays in the open copy.
//
// All opens of one inode on this mount share one copy, so writes through one
// descriptor are seen through the others at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "fs/namespace.h"
#include "storage/blob_store.h"

namespace stampfs {

class FileData {
 public:
  FileData(Namespace& ns, BlobStore& blobs, std::string container, std::string work_dir);
  ~FileData();

  // Opens the shared copy of `ino` (downloading it on first open unless
  // `truncate`). `created` marks a file just created: it is dirty, so even an
  // empty file gets its blob on close.
  Status Open(uint64_t ino, bool truncate, bool created);
  Result<size_t> Read(uint64_t ino, char* buf, size_t size, uint64_t offset);
  Result<size_t> Write(uint64_t ino, const char* buf, size_t size, uint64_t offset);
  // Commits the copy if it is dirty.
  Status Flush(uint64_t ino);
  // Drops one open; the last one commits what is left and discards the copy.
  Status Release(uint64_t ino);
  // Changes the size of a file, open or not.
  Status Truncate(uint64_t ino, uint64_t size);
  // Size and mtime of a dirty open copy, which win over the entry's.
  bool OverrideAttr(uint64_t ino, Attr* attr);
  // The file's name is gone: its blob is deleted now or after the last close.
  void Unlinked(uint64_t ino, const std::string& blob);
  void DeleteBlobWhenUnused(uint64_t ino, const std::string& blob);

  uint64_t blob_requests() const { return blob_requests_; }

 private:
  struct OpenFile {
    std::mutex mu;
    int fd = -1;
    uint64_t refs = 0;
    bool dirty = false;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
    std::string blob;       // blob name at open (a rename changes it)
    std::string base_etag;  // blob ETag this copy is based on ("" = no blob yet)
    std::string delete_on_close;  // blob to delete after the last close
  };
  std::shared_ptr<OpenFile> Find(uint64_t ino);
  Status Download(uint64_t ino, OpenFile& file, const FileState& state);
  Status Commit(uint64_t ino, OpenFile& file);  // REQUIRES: file.mu held
  Result<int> MakeLocalFile();

  Namespace& ns_;
  BlobStore& blobs_;
  std::string container_;
  std::string work_dir_;
  std::mutex mu_;  // guards files_; taken before any OpenFile::mu
  std::map<uint64_t, std::shared_ptr<OpenFile>> files_;
  std::atomic<uint64_t> blob_requests_{0};
};

}  // namespace stampfs
