// What every mount was promised, and who wrote which version: the model
// behind invariants 1 (acknowledged bytes are never lost) and 2 (no commit
// lands over a version its writer never saw).
//
// A View mirrors FileData's OpenFile of one inode on one mount: the content
// of the version it is based on (read from the account when it was loaded)
// and that content with this mount's writes. Contents are compared whole;
// every write carries bytes unique to its step, so two different histories
// never produce one content by accident.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/sim/observe.h"

namespace stampfs::sim {

struct View {
  uint64_t ino = 0;
  std::string base;  // content of the version the data is based on
  std::string data;  // base with this mount's writes
  bool dirty = false;
  bool uncertain = false;  // a write failed: what the cache holds is unknown
  // A conflict switched the open file to the winning version; the bytes
  // written since must still reach the file or a conflict copy.
  bool tainted = false;
  bool conflicted = false;           // a conflict happened since it was loaded (sticky)
  std::map<uint64_t, char> overlay;  // bytes written since the conflict
  std::set<std::string> own;         // versions this view landed without an acknowledgement
  int refs = 0;
  bool unlinked = false;  // this mount unlinked it while open: nothing to commit
  // commit=async: a flush or close acknowledged the data locally; checked
  // (invariant 1) once the pipeline or a replay committed it.
  bool promised = false;
};

class Ledger {
 public:
  // The view `mount` has of `ino`, loaded from `now` when it has none
  // (`fresh`: a new file, based on nothing).
  View& Load(int mount, uint64_t ino, const Snapshot& now, bool fresh);
  View* Find(int mount, uint64_t ino);
  void Drop(int mount, uint64_t ino);
  // Dropped once the step's landings are checked (the view explains them).
  void DropAfterStep(int mount, uint64_t ino) { drops_.push_back({mount, ino}); }
  void EndStep();
  // A killed mount keeps what its journal holds: views with changes.
  void Killed(int mount);
  std::vector<uint64_t> Inos(int mount) const;

  void Write(View& v, uint64_t off, const std::string& bytes);
  void Truncate(View& v, uint64_t size);
  // A flush, fsync, close or truncate returned success (invariant 1, now).
  void Acked(int mount, View& v, const Snapshot& now, int step, std::string* violation);
  // A commit found another writer's version (412): the open file shows it now.
  void Conflicted(View& v, const Snapshot& now);
  // The simulation asked to remove the name of `ino` (unlink, rename over it).
  void Doomed(uint64_t ino) { doomed_.insert(ino); }
  // The foreign tool (foreign.h) put `content` at `blob`, or deleted it: a
  // writer of its own, whose versions explain a file's change in any step.
  void ForeignPut(const std::string& blob, const std::string& content);
  void ForeignDelete(const std::string& blob) { foreign_deleted_.insert(blob); }
  // The tool replaced or deleted a blob holding `content` in step `step`:
  // an acknowledgement of it from before is superseded (a conflict copy's too).
  void ForeignReplaced(const std::string& content, int step) {
    foreign_replaced_.push_back({content, step});
  }
  // Whether `content` is a whole version some writer gave a file: seen in the
  // account, put by the foreign tool, or the data of a view of `ino` on
  // `mount` (what a read through that mount may return).
  bool KnownVersion(int mount, uint64_t ino, const std::string& content) const;

  // After every step of `actor` (-1: none): each file content that changed
  // must be a view of the actor landing on the version it is based on.
  void CheckLandings(const Snapshot& before, const Snapshot& after, int actor, int step,
                     std::string* violation);
  // A chmod of directory `ino` through `mount` returned (`acked`) or failed.
  void DirChmod(int mount, uint64_t ino, uint32_t mode, bool acked, int step,
                const std::string& path);
  // At the end: every acknowledged content is still somewhere, and a
  // directory that still exists has the mode of its last chmod when that
  // was acknowledged and no other mount ever changed its mode.
  void CheckDurable(const Snapshot& end, std::string* violation) const;

 private:
  struct Ack {
    uint64_t ino;
    int mount;
    int step;
    std::string path;
    std::string content;
    std::map<uint64_t, char> overlay;  // a tainted ack: only these bytes were promised
    bool partial = false;
  };
  struct Landing {
    uint64_t ino;
    int step;
    std::string prev;
  };
  static bool Holds(const std::string& content, const std::map<uint64_t, char>& overlay);
  bool Explained(int actor, uint64_t ino, const std::string& prev, const std::string& now,
                 bool new_entry);
  // `now` is a version the foreign tool put at (or its removal of) `e`'s blob.
  bool ForeignExplains(const ObservedEntry& e, const std::string& now) const;
  // Some mount's view of `ino` holds `content` (its data or a version it wrote).
  bool HeldByAnyView(uint64_t ino, const std::string& content) const;

  std::map<std::pair<int, uint64_t>, View> views_;
  std::vector<Ack> acks_;
  std::vector<Landing> landings_;
  std::set<uint64_t> doomed_;
  std::map<uint64_t, std::string> known_;                      // the last content seen of each file
  std::map<std::string, std::set<std::string>> foreign_;       // blob -> contents put there
  std::set<std::string> foreign_deleted_;                      // blobs the foreign tool deleted
  std::vector<std::pair<std::string, int>> foreign_replaced_;  // contents, steps
  std::set<size_t> versions_;  // hashes of every content seen in the account or put
  struct DirMode {
    int mount = 0;
    uint32_t mode = 0;
    bool acked = false;
    bool shared = false;  // chmodded through more than one mount: no single last writer
    int step = 0;
    std::string path;
  };
  std::map<uint64_t, DirMode> dir_modes_;  // the last chmod of each directory
  std::vector<std::pair<int, uint64_t>> drops_;
};

// The content an entry shows ("" before its first commit; a marker when its
// committed blob is gone).
std::string ContentOf(const ObservedEntry& e);

}  // namespace stampfs::sim
