#pragma once

// Group commit for POST /effects: concurrent POSTs share one transaction and
// one COMMIT (one fsync with --sync full), and each learns its outcome only
// once that COMMIT has returned.
//
// Leader and followers, with no thread of its own: a connection thread queues
// its POST and, when no group is running, becomes the leader: it takes what is
// queued at that moment (at most max_group_posts, oldest first), runs it as one
// group, and wakes the threads waiting for those POSTs. POSTs that arrive
// meanwhile queue up and form the next group, led by one of their own threads.
// Nothing waits for more POSTs to arrive, so a lone client's POST runs at once,
// on its own thread, as a group of one.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>

#include "remote_effect/store.hpp"

namespace skewbench::remote_effect {

// What the committer has run since it was made.
struct GroupStats {
  std::int64_t groups = 0;
  std::int64_t posts = 0;
  std::size_t largest_group = 0;
};

class GroupCommitter {
 public:
  // Runs one group and sets each POST's result or error (Store::post_group).
  using RunGroup = std::function<void(std::span<PendingPost* const>)>;

  GroupCommitter(RunGroup run_group, std::size_t max_group_posts);
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Returns once the group holding `post` has run: its result or its error is
  // set. The calling thread may run that group, and others, itself.
  void submit(PendingPost& post);

  GroupStats stats() const;

  // POSTs queued and not yet taken into a group.
  std::size_t queued() const;

 private:
  // One submitting thread. Each has its own condition variable, so that the
  // end of a group wakes only that group's threads and the next leader, not
  // every thread in the queue.
  struct Waiter {
    PendingPost* post = nullptr;
    bool done = false;  // guarded by mutex_
    std::condition_variable wake;
  };
  void lead(std::unique_lock<std::mutex>& lock);
  void run_group(std::span<PendingPost* const> group) noexcept;

  RunGroup run_group_;
  std::size_t max_group_posts_;
  mutable std::mutex mutex_;
  std::deque<Waiter*> queue_;  // guarded by mutex_
  bool leading_ = false;       // guarded by mutex_: a group is running
  GroupStats stats_;           // guarded by mutex_
};

}  // namespace skewbench::remote_effect
