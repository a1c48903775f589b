#include "cache/block_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

namespace stampfs {
namespace {

bool Uncommitted(BlockState s) { return s == BlockState::kDirty || s == BlockState::kStaged; }

Status Errno(const std::string& what) { return LocalError(what, errno); }

// Zeroes [offset, offset + length) when the file system cannot punch holes.
void WriteZeros(int fd, uint64_t offset, uint64_t length) {
  struct stat st;
  if (fstat(fd, &st) != 0) return;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset >= size) return;
  length = std::min(length, size - offset);
  static const char kZeros[65536] = {};
  while (length > 0) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(length, sizeof(kZeros)));
    if (pwrite(fd, kZeros, n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n)) return;
    offset += n;
    length -= n;
  }
}

}  // namespace

Result<std::unique_ptr<BlockCache>> BlockCache::Open(const std::string& dir, uint64_t capacity,
                                                     uint64_t max_blocks) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status(Code::kInvalidArgument, "block cache " + dir + ": " + ec.message());
  auto index = BlockIndex::Open(dir + "/index.db");
  STAMPFS_RETURN_IF_ERROR(index);
  std::unique_ptr<BlockCache> cache(new BlockCache(dir, capacity, max_blocks, std::move(*index)));
  STAMPFS_RETURN_IF_ERROR(cache->Load());
  return cache;
}

BlockCache::BlockCache(std::string dir, uint64_t capacity, uint64_t max_blocks,
                       std::unique_ptr<BlockIndex> index)
    : dir_(std::move(dir)),
      capacity_(capacity),
      max_blocks_(max_blocks),
      index_(std::move(index)) {}

BlockCache::~BlockCache() {
  std::lock_guard<std::mutex> lock(mu_);
  // Keep the LRU order for the next mount (one transaction).
  if (index_->Begin().ok()) {
    for (auto& [id, f] : files_) {
      for (auto& [k, b] : f.blocks) index_->SetAccess(id, k, b.row.access).PermitUnchecked();
    }
    index_->Commit().PermitUnchecked();
  }
  for (auto& [id, f] : files_) {
    if (f.fd >= 0) close(f.fd);
  }
}

std::string BlockCache::DataPath(int64_t id) const {
  return dir_ + "/" + std::to_string(id) + ".data";
}

// Rebuilds the in-memory view from the index; drops what lost its data file
// and data files the index does not know.
Status BlockCache::Load() {
  auto files = index_->Files();
  STAMPFS_RETURN_IF_ERROR(files);
  std::lock_guard<std::mutex> lock(mu_);
  for (FileRow& row : *files) {
    if (access(DataPath(row.id).c_str(), F_OK) != 0) {
      index_->DeleteFile(row.id).PermitUnchecked();
      continue;
    }
    File& f = files_[row.id];
    f.info = CacheFileInfo{row.id, row.blob, row.etag, row.block_size, row.journal};
    if (!row.journal && !row.etag.empty()) {
      auto [it, inserted] = versions_.emplace(std::make_pair(row.blob, row.etag), row.id);
      (void)it;
      if (!inserted) f.discarded = true;  // a duplicate version: dropped below
    }
  }
  auto blocks = index_->Blocks();
  STAMPFS_RETURN_IF_ERROR(blocks);
  for (const BlockRow& row : *blocks) {
    File* f = Find(row.file);
    if (f == nullptr) {
      index_->DeleteBlock(row.file, row.index).PermitUnchecked();
      continue;
    }
    Block& b = f->blocks[row.index];
    b.row = row;
    Account(*f, b, +1);
    if (row.state == BlockState::kClean) LruInsert(b);
    clock_ = std::max(clock_, row.access);
  }
  std::vector<int64_t> empty;
  for (auto& [id, f] : files_) {
    if (f.discarded || (f.blocks.empty() && !f.info.journal)) empty.push_back(id);
  }
  for (int64_t id : empty) RemoveFile(id);
  // Data files without a row: left by a crash between creating and indexing.
  if (DIR* d = opendir(dir_.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() < 6 || name.compare(name.size() - 5, 5, ".data") != 0) continue;
      int64_t id = std::atoll(name.c_str());
      if (files_.count(id) == 0) unlink((dir_ + "/" + name).c_str());
    }
    closedir(d);
  }
  return Status::Ok();
}

BlockCache::File* BlockCache::Find(int64_t id) {
  auto it = files_.find(id);
  return it == files_.end() ? nullptr : &it->second;
}

Status BlockCache::CheckDiskRoom(uint64_t bytes) const {
  struct statvfs fs;
  if (statvfs(dir_.c_str(), &fs) != 0) return Status::Ok();  // the write itself will tell
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes >= bytes + kDiskReserve) return Status::Ok();
  return Status(Code::kNoSpace, "the cache's disk (" + dir_ + ") has " +
                                    std::to_string(free_bytes >> 20) + " MiB free, " +
                                    std::to_string(kDiskReserve >> 20) +
                                    " MiB of it kept for the cache index and journal");
}

Status BlockCache::OpenData(File& f) {
  if (f.fd >= 0) return Status::Ok();
  f.fd = open(DataPath(f.info.id).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  return f.fd >= 0 ? Status::Ok() : Errno("open cache data " + DataPath(f.info.id));
}

// REQUIRES: mu_ held.
Result<int64_t> BlockCache::NewFile(const std::string& blob, const std::string& etag,
                                    uint64_t bsize) {
  auto id = index_->InsertFile(blob, etag, bsize);
  STAMPFS_RETURN_IF_ERROR(id);
  File& f = files_[*id];
  f.info = CacheFileInfo{*id, blob, etag, bsize, std::nullopt};
  f.users = 1;
  // A stale data file of a reused id must not leak old bytes.
  f.fd = open(DataPath(*id).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (f.fd < 0) {
    Status s = Errno("create cache data " + DataPath(*id));
    RemoveFile(*id);
    return s;
  }
  if (!etag.empty()) versions_[{blob, etag}] = *id;
  return *id;
}

Result<int64_t> BlockCache::Acquire(const std::string& blob, const std::string& etag,
                                    uint64_t block_size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!etag.empty()) {
    auto it = versions_.find({blob, etag});
    if (it != versions_.end()) {
      File* f = Find(it->second);
      if (f && !f->discarded && !f->info.journal && f->info.block_size == block_size) {
        STAMPFS_RETURN_IF_ERROR(OpenData(*f));
        f->users++;
        return f->info.id;
      }
      versions_.erase(it);
    }
  }
  auto id = NewFile(blob, etag, block_size);
  STAMPFS_RETURN_IF_ERROR(id);
  if (!etag.empty()) DropUnusedVersions(blob, *id);
  return id;
}

Result<int64_t> BlockCache::AcquireId(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr || f->discarded)
    return Status(Code::kNotFound, "cache file " + std::to_string(id));
  STAMPFS_RETURN_IF_ERROR(OpenData(*f));
  f->users++;
  return id;
}

void BlockCache::Release(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr || --f->users > 0) return;
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->discarded || (f->blocks.empty() && !f->info.journal)) RemoveFile(id);
}

int BlockCache::fd(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  return f ? f->fd : -1;
}

std::optional<CacheFileInfo> BlockCache::Info(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return std::nullopt;
  return f->info;
}

// REQUIRES: mu_ held.
void BlockCache::RemoveFile(int64_t id) {
  File* f = Find(id);
  if (f == nullptr) return;
  for (auto& [k, b] : f->blocks) {
    Account(*f, b, -1);
    LruErase(b);
  }
  if (f->fd >= 0) close(f->fd);
  index_->DeleteFile(id).PermitUnchecked();
  unlink(DataPath(id).c_str());
  auto v = versions_.find({f->info.blob, f->info.etag});
  if (v != versions_.end() && v->second == id) versions_.erase(v);
  files_.erase(id);
}

// Clean versions of `blob` other than `keep` that nobody uses are stale: the
// blob has one current version.
void BlockCache::DropUnusedVersions(const std::string& blob, int64_t keep) {
  std::vector<int64_t> stale;
  for (auto it = versions_.lower_bound({blob, ""});
       it != versions_.end() && it->first.first == blob; ++it) {
    File* f = Find(it->second);
    if (it->second != keep && f && f->users == 0 && !f->info.journal) stale.push_back(it->second);
  }
  for (int64_t id : stale) RemoveFile(id);
}

Status BlockCache::Rekey(int64_t id, const std::string& blob, const std::string& etag) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return Status(Code::kNotFound, "cache file " + std::to_string(id));
  return RekeyLocked(*f, blob, etag);
}

Status BlockCache::RekeyLocked(File& f, const std::string& blob, const std::string& etag) {
  const int64_t id = f.info.id;
  auto old = versions_.find({f.info.blob, f.info.etag});
  if (old != versions_.end() && old->second == id) versions_.erase(old);
  STAMPFS_RETURN_IF_ERROR(index_->UpdateVersion(id, blob, etag));
  f.info.blob = blob;
  f.info.etag = etag;
  DropUnusedVersions(blob, id);
  if (!etag.empty()) versions_[{blob, etag}] = id;
  return Status::Ok();
}

// An open file keeps its key: its reader rekeys it when a pinned read finds
// the blob moved (FileData::Reread), and a writer's version is its own.
bool BlockCache::MoveVersion(const std::string& from_blob, const std::string& from_etag,
                             const std::string& to_blob, const std::string& to_etag) {
  if (from_etag.empty() || to_etag.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = versions_.find({from_blob, from_etag});
  if (it == versions_.end()) return false;
  File* f = Find(it->second);
  if (f == nullptr || f->users > 0 || f->discarded || f->info.journal) return false;
  return RekeyLocked(*f, to_blob, to_etag).ok();
}

Status BlockCache::Discard(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return Status::Ok();
  for (auto it = f->blocks.begin(); it != f->blocks.end();) DropBlock(*f, it++);
  STAMPFS_RETURN_IF_ERROR(index_->DeleteBlocksFrom(id, 0));
  if (f->fd >= 0 && ftruncate(f->fd, 0) != 0) return Errno("discard cache data");
  f->info.journal.reset();
  index_->SetJournal(id, std::nullopt).PermitUnchecked();
  f->discarded = true;
  auto v = versions_.find({f->info.blob, f->info.etag});
  if (v != versions_.end() && v->second == id) versions_.erase(v);
  if (f->users == 0) RemoveFile(id);
  return Status::Ok();
}

BlockState BlockCache::State(int64_t id, uint64_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return BlockState::kAbsent;
  auto it = f->blocks.find(k);
  return it == f->blocks.end() ? BlockState::kAbsent : it->second.row.state;
}

Status BlockCache::Set(int64_t id, uint64_t k, BlockState state, uint64_t offset, uint64_t length,
                       uint64_t extent) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return Status(Code::kNotFound, "cache file " + std::to_string(id));
  auto [it, inserted] = f->blocks.try_emplace(k);
  Block& b = it->second;
  const bool persist =
      inserted || b.row.state != state || b.row.offset != offset || b.row.length != length;
  if (!inserted) Account(*f, b, -1);
  b.row = BlockRow{id, k, offset, length, extent, state, ++clock_};
  Account(*f, b, +1);
  if (state == BlockState::kClean) {
    LruErase(b);
    LruInsert(b);
  } else {
    LruErase(b);
  }
  return persist ? index_->PutBlock(b.row) : Status::Ok();
}

std::map<uint64_t, BlockState> BlockCache::Blocks(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<uint64_t, BlockState> out;
  if (File* f = Find(id)) {
    for (const auto& [k, b] : f->blocks) out[k] = b.row.state;
  }
  return out;
}

Status BlockCache::DropFrom(int64_t id, uint64_t first) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return Status::Ok();
  for (auto it = f->blocks.lower_bound(first); it != f->blocks.end();) DropBlock(*f, it++);
  return index_->DeleteBlocksFrom(id, first);
}

Status BlockCache::Relayout(int64_t id, uint64_t block_size, const std::vector<BlockRow>& rows) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return Status(Code::kNotFound, "cache file " + std::to_string(id));
  std::vector<BlockRow> placed = rows;
  for (BlockRow& r : placed) {
    r.file = id;
    r.access = ++clock_;
  }
  STAMPFS_RETURN_IF_ERROR(index_->Begin());
  Status s = index_->DeleteBlocksFrom(id, 0);
  if (s.ok()) s = index_->SetBlockSize(id, block_size);
  for (size_t i = 0; s.ok() && i < placed.size(); ++i) s = index_->PutBlock(placed[i]);
  if (s.ok()) s = index_->Commit();
  if (!s.ok()) {
    index_->Rollback().PermitUnchecked();  // the memory view stays as it was
    return s;
  }
  for (auto it = f->blocks.begin(); it != f->blocks.end();) DropBlock(*f, it++);
  for (const BlockRow& r : placed) {
    Block& b = f->blocks[r.index];
    b.row = r;
    Account(*f, b, +1);
    if (r.state == BlockState::kClean) LruInsert(b);
  }
  f->info.block_size = block_size;
  return Status::Ok();
}

Status BlockCache::MarkClean(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return Status::Ok();
  for (auto& [k, b] : f->blocks) {
    if (!Uncommitted(b.row.state)) continue;
    Account(*f, b, -1);
    b.row.state = BlockState::kClean;
    Account(*f, b, +1);
    LruInsert(b);
  }
  return index_->MarkClean(id);
}

uint64_t BlockCache::UncommittedBytes(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  return f ? f->uncommitted : 0;
}

void BlockCache::Pin(int64_t id, uint64_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  pins_[{id, k}]++;
}

void BlockCache::Unpin(int64_t id, uint64_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pins_.find({id, k});
  if (it != pins_.end() && --it->second <= 0) pins_.erase(it);
}

void BlockCache::Touch(int64_t id, uint64_t k) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return;
  auto it = f->blocks.find(k);
  if (it == f->blocks.end()) return;
  it->second.row.access = ++clock_;
  if (it->second.in_lru) lru_.splice(lru_.end(), lru_, it->second.lru);
}

// REQUIRES: mu_ held.
void BlockCache::Account(File& f, const Block& b, int sign) {
  const uint64_t n = b.row.extent;
  used_ = sign > 0 ? used_ + n : used_ - n;
  blocks_ = sign > 0 ? blocks_ + 1 : blocks_ - 1;
  if (Uncommitted(b.row.state)) {
    uncommitted_ = sign > 0 ? uncommitted_ + n : uncommitted_ - n;
    f.uncommitted = sign > 0 ? f.uncommitted + n : f.uncommitted - n;
  }
}

void BlockCache::LruInsert(Block& b) {
  if (b.in_lru) return;
  b.lru = lru_.insert(lru_.end(), Key{b.row.file, b.row.index});
  b.in_lru = true;
}

void BlockCache::LruErase(Block& b) {
  if (!b.in_lru) return;
  lru_.erase(b.lru);
  b.in_lru = false;
}

// REQUIRES: mu_ held. The caller deletes the index row and the data.
void BlockCache::DropBlock(File& f, std::map<uint64_t, Block>::iterator it) {
  Account(f, it->second, -1);
  LruErase(it->second);
  f.blocks.erase(it);
}

// Frees the block's disk space; afterwards it reads as zeros.
void BlockCache::Punch(File& f, const BlockRow& row) {
  int fd = f.fd;
  if (fd < 0) fd = open(DataPath(f.info.id).c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(row.offset),
                static_cast<off_t>(row.length)) != 0) {
    WriteZeros(fd, row.offset, row.length);
  }
  if (fd != f.fd) close(fd);
}

// Victims leave the index (one transaction) before their holes are punched:
// after a crash a row never names punched data.
bool BlockCache::MakeRoom(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!Full(bytes)) return true;
  std::vector<BlockRow> victims;
  std::set<int64_t> emptied;
  for (auto it = lru_.begin(); it != lru_.end() && Full(bytes);) {
    Key key = *it++;
    if (pins_.count(key)) continue;
    File* f = Find(key.first);
    if (f == nullptr) continue;
    auto b = f->blocks.find(key.second);
    if (b == f->blocks.end()) continue;
    victims.push_back(b->second.row);
    evicted_ += b->second.row.extent;
    DropBlock(*f, b);  // erases `key` from lru_; `it` already moved past it
    if (f->blocks.empty() && f->users == 0 && !f->info.journal) emptied.insert(key.first);
  }
  if (!victims.empty()) {
    bool began = index_->Begin().ok();
    for (const BlockRow& r : victims) index_->DeleteBlock(r.file, r.index).PermitUnchecked();
    if (began) index_->Commit().PermitUnchecked();
    for (const BlockRow& r : victims) {
      if (File* f = Find(r.file); f && !emptied.count(r.file)) Punch(*f, r);
    }
  }
  for (int64_t id : emptied) RemoveFile(id);  // the data file goes whole
  return !Full(bytes);
}

BlockCacheStats BlockCache::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  BlockCacheStats stats;
  stats.capacity = capacity_;
  stats.used = used_;
  stats.blocks = blocks_;
  stats.uncommitted = uncommitted_;
  stats.files = files_.size();
  stats.evicted = evicted_;
  stats.journal_syncs = journal_syncs_;
  return stats;
}

Status BlockCache::SetJournal(int64_t id, const JournalRecord& record, bool durable) {
  if (durable) {
    // Outside mu_: a sync may take milliseconds. The caller holds the file.
    const int data_fd = fd(id);
    if (data_fd >= 0 && fdatasync(data_fd) != 0) {
      return LocalError("sync cache file " + std::to_string(id), errno);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr) return Status(Code::kNotFound, "cache file " + std::to_string(id));
  STAMPFS_RETURN_IF_ERROR(index_->SetJournal(id, record, durable));
  f->info.journal = record;
  if (durable) journal_syncs_++;
  return Status::Ok();
}

Status BlockCache::ClearJournal(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  File* f = Find(id);
  if (f == nullptr || !f->info.journal) return Status::Ok();
  STAMPFS_RETURN_IF_ERROR(index_->SetJournal(id, std::nullopt));
  f->info.journal.reset();
  return Status::Ok();
}

std::vector<CacheFileInfo> BlockCache::Journaled() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CacheFileInfo> out;
  for (const auto& [id, f] : files_) {
    if (f.info.journal && !f.discarded) out.push_back(f.info);
  }
  return out;
}

}  // namespace stampfs
