// How a file's bytes map to the blocks of its block blob, and block ids.
//
// Block k covers a deterministic byte range given the file's base block size
// B (recorded per file: entry property "bsize" and blob metadata "bsize"):
// blocks come in tiers of kBlocksPerTier, and tier t has blocks of B << t.
// With B = 4 MiB, 10,000 blocks of 4 MiB reach 39 GiB, then 8 MiB blocks,
// 16 MiB, ...: a 200 GiB file needs about 25,300 blocks, and 50,000 blocks
// (the Azure limit) hold 31 * 10,000 * B = 1.2 TiB. Nothing is tuned per file.
//
// Files rewritten in place (a commit that changes a small part of an
// existing version: databases, logs appended to) move to a finer layout,
// RewriteBlockSize(size): about kRewriteBlocks blocks, at least 16 KiB
// each, so such a commit uploads its changes plus at most one block on
// either side of each changed range (fs/data/file_commit.cc, docs/design.md).
// Bases below kMinOptionBlockSize have tiers of kRewriteBlocksPerTier.
//
// Block ids: canonical base64 of 32 hex digits = 16 hex digits of a per-writer
// random tag + 16 hex digits of the block index. Every id has the length of
// BlockIdFor's (storage/blob_store.h), so all ids of a blob share one length,
// and two writers staging blocks of the same blob never reuse each other's ids.
#pragma once

#include <cstdint>
#include <string>

namespace stampfs {

inline constexpr uint64_t kBlocksPerTier = 10000;
inline constexpr uint64_t kMaxBlocks = 50000;
inline constexpr uint64_t kDefaultBlockSize = 4ull << 20;
inline constexpr uint64_t kMinBlockSize = 16ull << 10;        // a rewrite layout's smallest
inline constexpr uint64_t kMinOptionBlockSize = 64ull << 10;  // -o block_size's smallest
inline constexpr uint64_t kRewriteBlocks = 4096;
// Rewrite layouts (base below kMinOptionBlockSize) double every 2,000 blocks:
// a database that keeps growing after its move is never stopped by the
// block count (16 KiB: 7.8 TiB before a block would pass kMaxBlockBytes).
inline constexpr uint64_t kRewriteBlocksPerTier = 2000;
inline constexpr uint64_t kMaxBlockBytes = 2ull << 30;  // Azure's limit is 4000 MiB
inline constexpr uint64_t kMaxBlockSize = 64ull << 20;  // tier 4 blocks stay under 4000 MiB

class BlockLayout {
 public:
  BlockLayout() : BlockLayout(kDefaultBlockSize) {}
  explicit BlockLayout(uint64_t base)
      : base_(base),
        per_tier_(base < kMinOptionBlockSize ? kRewriteBlocksPerTier : kBlocksPerTier) {}

  uint64_t base() const { return base_; }
  // Blocks of one size before the size doubles.
  uint64_t per_tier() const { return per_tier_; }
  uint64_t SizeOf(uint64_t k) const { return base_ << (k / per_tier_); }
  uint64_t StartOf(uint64_t k) const;
  uint64_t EndOf(uint64_t k) const { return StartOf(k) + SizeOf(k); }
  // The block holding byte `offset`.
  uint64_t IndexAt(uint64_t offset) const;
  // Blocks needed for a file of `size` bytes (0 for an empty file).
  uint64_t CountFor(uint64_t size) const { return size == 0 ? 0 : IndexAt(size - 1) + 1; }
  // Bytes of block k inside a file of `size` bytes.
  uint64_t LengthIn(uint64_t k, uint64_t size) const;
  // The largest file this layout holds: kMaxBlocks blocks, none over kMaxBlockBytes.
  uint64_t MaxFileSize() const;

 private:
  uint64_t base_;
  uint64_t per_tier_;
};

// True for a block size the layout accepts: a power of two in [kMinBlockSize, kMaxBlockSize].
bool ValidBlockSize(uint64_t size);

// The base block size of the rewrite layout for a file of `size` bytes: the
// smallest power of two >= kMinBlockSize with at most kRewriteBlocks blocks
// of it covering `size` (a layout of this base holds at least 31 * 10,000 /
// 4096 = 75 times `size`).
uint64_t RewriteBlockSize(uint64_t size);
// A rewrite layout: below what -o block_size may set for new files.
inline bool IsRewriteLayout(const BlockLayout& layout) {
  return layout.base() < kMinOptionBlockSize;
}

// base64 of "%016x%016x" (tag, index): 44 characters, like BlockIdFor.
std::string WriterBlockId(uint64_t tag, uint64_t index);
// A random writer tag (never 0).
uint64_t NewWriterTag();

}  // namespace stampfs
