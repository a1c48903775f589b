#include "fs/data/block_layout.h"

#include <cstdio>
#include <random>

#include "storage/auth.h"

namespace stampfs {

// Tier t starts after per_tier blocks of each size B << i, i < t:
// per_tier * B * (2^t - 1).
uint64_t BlockLayout::StartOf(uint64_t k) const {
  const uint64_t tier = k / per_tier_;
  const uint64_t tier_start = per_tier_ * base_ * ((1ull << tier) - 1);
  return tier_start + (k % per_tier_) * (base_ << tier);
}

uint64_t BlockLayout::IndexAt(uint64_t offset) const {
  uint64_t tier = 0;
  uint64_t tier_start = 0;
  for (;;) {
    const uint64_t tier_bytes = per_tier_ * (base_ << tier);
    if (offset < tier_start + tier_bytes || tier >= 40) break;
    tier_start += tier_bytes;
    ++tier;
  }
  return tier * per_tier_ + (offset - tier_start) / (base_ << tier);
}

uint64_t BlockLayout::MaxFileSize() const {
  uint64_t blocks = 0;
  while (blocks < kMaxBlocks && SizeOf(blocks) <= kMaxBlockBytes) blocks += per_tier_;
  return StartOf(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

uint64_t BlockLayout::LengthIn(uint64_t k, uint64_t size) const {
  const uint64_t start = StartOf(k);
  if (start >= size) return 0;
  const uint64_t len = SizeOf(k);
  return size - start < len ? size - start : len;
}

bool ValidBlockSize(uint64_t size) {
  return size >= kMinBlockSize && size <= kMaxBlockSize && (size & (size - 1)) == 0;
}

uint64_t RewriteBlockSize(uint64_t size) {
  uint64_t base = kMinBlockSize;
  while (base < kMaxBlockSize && base * kRewriteBlocks < size) base <<= 1;
  return base;
}

std::string WriterBlockId(uint64_t tag, uint64_t index) {
  char digits[33];
  std::snprintf(digits, sizeof(digits), "%016llx%016llx", static_cast<unsigned long long>(tag),
                static_cast<unsigned long long>(index));
  return Base64Encode(std::string(digits, 32));
}

uint64_t NewWriterTag() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t tag = 0;
  while (tag == 0) tag = rng();
  return tag;
}

}  // namespace stampfs
