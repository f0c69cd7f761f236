#include "remote_effect/group_commit.hpp"

#include <algorithm>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <utility>
#include <vector>

namespace skewbench::remote_effect {

GroupCommitter::GroupCommitter(RunGroup run_group, std::size_t max_group_posts)
    : run_group_(std::move(run_group)), max_group_posts_(max_group_posts) {
  if (max_group_posts_ == 0) throw std::invalid_argument("a group must hold at least one POST");
}

void GroupCommitter::submit(PendingPost& post) {
  Waiter waiter{.post = &post, .done = false, .wake = {}};
  std::unique_lock lock(mutex_);
  queue_.push_back(&waiter);
  try {
    while (!waiter.done) {
      if (leading_) {
        waiter.wake.wait(lock);
      } else {
        lead(lock);
      }
    }
  } catch (...) {
    // lead() failed to allocate before taking anything: no group may find
    // this waiter once it is gone.
    std::erase(queue_, &waiter);
    throw;
  }
}

void GroupCommitter::lead(std::unique_lock<std::mutex>& lock) {
  const auto count = static_cast<std::ptrdiff_t>(std::min(queue_.size(), max_group_posts_));
  std::vector<Waiter*> waiters(queue_.begin(), std::next(queue_.begin(), count));
  std::vector<PendingPost*> group;
  group.reserve(waiters.size());
  for (auto* waiter : waiters) group.push_back(waiter->post);
  queue_.erase(queue_.begin(), std::next(queue_.begin(), count));
  leading_ = true;

  lock.unlock();
  run_group(group);
  lock.lock();

  for (auto* waiter : waiters) {
    waiter->done = true;
    waiter->wake.notify_one();
  }
  ++stats_.groups;
  stats_.posts += static_cast<std::int64_t>(group.size());
  stats_.largest_group = std::max(stats_.largest_group, group.size());
  leading_ = false;
  // The oldest queued POST's thread leads the next group, unless a thread
  // arriving meanwhile takes the queue first (then that one is woken again
  // when its POST's group is done, or when it is oldest again).
  if (!queue_.empty()) queue_.front()->wake.notify_one();
}

void GroupCommitter::run_group(std::span<PendingPost* const> group) noexcept {
  try {
    run_group_(group);
  } catch (...) {
    // Every POST must learn an outcome; one left without is a failure.
    for (auto* post : group) {
      if (!post->result && !post->error) post->error = std::current_exception();
    }
  }
}

GroupStats GroupCommitter::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::size_t GroupCommitter::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

}  // namespace skewbench::remote_effect
