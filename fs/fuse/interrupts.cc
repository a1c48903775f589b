#include "fs/fuse/interrupts.h"

#include <mutex>
#include <vector>

namespace stampfs {

// One per thread that runs operations. libfuse may call the interrupt
// callback of a request while or just after the operation replies, so a slot
// is never freed: a thread that ends hands its slot to the next one, and the
// callback acts only when the slot still serves the request it names.
struct InterruptSlot {
  std::mutex mu;
  fuse_req_t req = nullptr;  // GUARDED_BY(mu): the request running, if any
  CancelToken token;
};

namespace {

struct SlotPool {
  std::mutex mu;
  std::vector<InterruptSlot*> free;  // GUARDED_BY(mu)
};
SlotPool& Pool() {
  static auto* pool = new SlotPool;  // never destroyed: threads may end after exit begins
  return *pool;
}

// This thread's slot, taken from the pool at first use and given back when
// the thread ends.
class ThreadSlot {
 public:
  InterruptSlot* get() {
    if (!slot_) {
      std::lock_guard<std::mutex> lock(Pool().mu);
      if (Pool().free.empty()) {
        slot_ = new InterruptSlot;
      } else {
        slot_ = Pool().free.back();
        Pool().free.pop_back();
      }
    }
    return slot_;
  }
  ~ThreadSlot() {
    if (!slot_) return;
    std::lock_guard<std::mutex> lock(Pool().mu);
    Pool().free.push_back(slot_);
  }

 private:
  InterruptSlot* slot_ = nullptr;
};
thread_local ThreadSlot t_slot;

const CancelToken* TokenOf(InterruptSlot* slot) { return &slot->token; }

void OnInterrupt(fuse_req_t req, void* data) {
  auto* slot = static_cast<InterruptSlot*>(data);
  std::lock_guard<std::mutex> lock(slot->mu);
  if (slot->req == req) slot->token.CancelAt(CancelToken::Clock::now() + kInterruptGrace);
}

}  // namespace

InterruptScope::InterruptScope(fuse_req_t req) : slot_(t_slot.get()), current_(TokenOf(slot_)) {
  {
    std::lock_guard<std::mutex> lock(slot_->mu);
    slot_->req = req;
    slot_->token.Reset();
  }
  // Calls OnInterrupt at once when the request was interrupted already.
  // (No request: a unit test calling an operation directly.)
  if (req != nullptr) fuse_req_interrupt_func(req, OnInterrupt, slot_);
}

InterruptScope::~InterruptScope() {
  // The request may be answered and freed by now: only forget it.
  std::lock_guard<std::mutex> lock(slot_->mu);
  slot_->req = nullptr;
}

}  // namespace stampfs
