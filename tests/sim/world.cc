#include "tests/sim/world.h"

#include <chrono>
#include <filesystem>

namespace stampfs::sim {

World::World(int mounts, std::string root, ConflictPolicy policy)
    : table_(MakeFakeTableStore()),
      blobs_(MakeFakeBlobStore()),
      root_(std::move(root)),
      policy_(policy) {
  std::filesystem::remove_all(root_);
  std::filesystem::create_directories(root_);
  mounts_.resize(mounts);
  for (int i = 0; i < mounts; ++i) {
    SimMount& m = mounts_[i];
    m.id = i;
    m.cache_dir = root_ + "/m" + std::to_string(i);
    m.table_plan = std::make_shared<FaultPlan>();
    m.blob_plan = std::make_shared<FaultPlan>();
    m.table = MakeFaultyTableStore(*table_, m.table_plan);
    m.blobs = MakeFaultyBlobStore(*blobs_, m.blob_plan);
  }
}

World::~World() {
  for (SimMount& m : mounts_) Kill(m);
  std::filesystem::remove_all(root_);
}

Status World::Start(SimMount& m) {
  Kill(m);
  std::filesystem::create_directories(m.cache_dir);
  auto meta = MetaCache::Open(m.cache_dir + "/meta.db");
  if (!meta.ok()) return meta.status();
  NamespaceOptions o;
  o.container = kContainer;
  o.table = kTable;
  o.ttl_ms = kTtlMs;
  o.now_ms = [this] { return now_ns_ / 1000000; };
  auto ns = std::make_unique<Namespace>(*m.table, *m.blobs, meta->get(), o);
  Status s = ns->Init();
  if (!s.ok()) return s;
  ns->ReserveInoRange().PermitUnchecked();  // main.cc: a warning only
  std::unique_ptr<ForeignView> foreign;
  if (foreign_ttl_ms_ > 0) {
    ImportOptions io;
    io.container = kContainer;
    io.table = kTable;
    io.now_ns = [this] { return now_ns_; };
    foreign = std::make_unique<ForeignView>(*m.table, *m.blobs, io, foreign_ttl_ms_,
                                            ns->options().offline_after_ms,
                                            [this] { return now_ns_ / 1000000; });
    ForeignView* view = foreign.get();
    ns->OnDirectoryRead([view](const std::string& dir, Namespace::DirectoryCheck how) {
      const bool changed = view->Check(dir, how);
      // A check nobody waits for runs on the view's thread: it ends here, so
      // the order of store calls (and every fault) stays the seed's.
      view->Settle();
      return changed;
    });
  }
  ns->ListRoot().PermitUnchecked();
  auto blocks = BlockCache::Open(m.cache_dir + "/blocks/" + kContainer, 64ull << 20);
  if (!blocks.ok()) return blocks.status();
  FileDataOptions fo;
  fo.container = kContainer;
  fo.block_size = kBlockSize;
  fo.single_put_limit = kSinglePutLimit;
  fo.conflict = policy_;
  fo.host = "m" + std::to_string(m.id);
  fo.now_ns = [this] { return now_ns_; };
  fo.async_commit = async_;
  fo.commit_threads = 0;
  fo.commit_delay_ms = 0;  // due at once: commits happen at pump steps
  m.meta = std::move(*meta);
  m.ns = std::move(ns);
  m.blocks = std::move(*blocks);
  m.data = std::make_unique<FileData>(*m.ns, *m.blobs, *m.blocks, fo);
  if (foreign) {
    // No kernel here: KernelStale tells no one (FileData has no listener).
    Namespace* nsp = m.ns.get();
    FileData* data = m.data.get();
    foreign->OnChanged([nsp](const std::string& dir) { nsp->DropCached(dir); },
                       [data](uint64_t ino) { data->KernelStale(ino); });
    m.foreign = std::move(foreign);
  }
  // main.cc ignores a failed replay: what is left stays in the journal.
  return m.data->ReplayJournal();
}

void World::Kill(SimMount& m) {
  if (m.ns) m.ns->OnDirectoryRead(nullptr);
  if (m.foreign) m.foreign->OnChanged(nullptr, nullptr);
  m.data.reset();
  m.foreign.reset();
  m.blocks.reset();
  m.ns.reset();
  m.meta.reset();
}

size_t World::Unmount(SimMount& m) {
  size_t left = m.up() ? m.data->CommitAll(std::chrono::seconds(30)) : 0;
  Kill(m);
  return left;
}

std::unique_ptr<SimMount> World::FreshMount(Status* started) {
  auto m = std::make_unique<SimMount>();
  m->id = 100 + fresh_;
  m->cache_dir = root_ + "/fresh" + std::to_string(fresh_++);
  m->table_plan = std::make_shared<FaultPlan>();
  m->blob_plan = std::make_shared<FaultPlan>();
  m->table = MakeFaultyTableStore(*table_, m->table_plan);
  m->blobs = MakeFaultyBlobStore(*blobs_, m->blob_plan);
  *started = Start(*m);
  return m;
}

}  // namespace stampfs::sim
