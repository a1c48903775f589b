// The checks on the account as a whole (invariants 3-5); invariants 1 and 2
// live in the Ledger. Each returns "" when it holds, else what is wrong.
#pragma once

#include <set>
#include <string>

#include "tests/sim/observe.h"
#include "tests/sim/world.h"

namespace stampfs::sim {

// Invariant 5: no two entries name one blob; at quiescent points also no
// blob without an entry (but the foreign tool's blobs in `unmapped`, which
// no path maps to).
std::string CheckBlobNaming(const Snapshot& snap, bool quiescent,
                            const std::set<std::string>* unmapped = nullptr);

// Invariant 4: fsck (the library, no repair) finds nothing (but about the
// blobs in `unmapped`).
std::string CheckFsck(World& world, const std::set<std::string>* unmapped = nullptr);

// Invariant 3: the tree as mount `m` shows it, in PosixModel::Render's form
// (contents read from the blobs the entries name).
std::string RenderMount(SimMount& m, BlobStore& raw, bool with_content);

}  // namespace stampfs::sim
