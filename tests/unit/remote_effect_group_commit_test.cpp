// Group commit in the remote-effect service: Store::post_group on a temporary
// file (one transaction, a savepoint per POST), and the GroupCommitter that
// forms the groups, driven by threads with a fake group runner.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>
#include <catch2/catch_test_macros.hpp>

#include "common/digest.hpp"
#include "common/files.hpp"
#include "remote_effect/group_commit.hpp"
#include "remote_effect/store.hpp"

namespace re = skewbench::remote_effect;

namespace {

re::PostRequest request(std::string operation_id, std::string key, std::int64_t now_s, std::string body = "") {
  re::PostRequest request;
  request.operation_id = std::move(operation_id);
  request.idempotency_key = std::move(key);
  request.logical_time_s = now_s;
  request.ttl_s = 60;
  request.expires_at_s = now_s + 60;
  request.body_sha256 = skewbench::sha256_hex(body);
  return request;
}

// The requests as pending POSTs (pointing into `requests`, which must outlive them).
std::vector<re::PendingPost> pending(const std::vector<re::PostRequest>& requests) {
  std::vector<re::PendingPost> posts;
  for (const auto& r : requests) {
    posts.push_back(re::PendingPost{.request = &r, .before_commit = {}, .result = std::nullopt, .error = nullptr});
  }
  return posts;
}

void run_group(re::Store& store, std::vector<re::PendingPost>& posts) {
  std::vector<re::PendingPost*> group;
  for (auto& p : posts) group.push_back(&p);
  store.post_group(group);
}

std::string error_text(const re::PendingPost& post) {
  try {
    if (post.error) std::rethrow_exception(post.error);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// A trigger, created through a second connection as any SQLite client could,
// that makes the INSERT of an effect fail for operation ids starting with
// "poison". RAISE(ABORT) fails the statement; RAISE(ROLLBACK) also rolls the
// whole transaction back.
void install_poison(const std::filesystem::path& path, const std::string& resolution) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  const std::string sql =
      "CREATE TRIGGER poison BEFORE INSERT ON effects WHEN NEW.operation_id LIKE 'poison%' BEGIN SELECT RAISE(" +
      resolution + ", 'poisoned effect'); END";
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  INFO((message ? message : ""));
  sqlite3_free(message);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

void check_applied(const re::PendingPost& post) {
  INFO(post.request->operation_id << ": " << error_text(post));
  REQUIRE(post.result);
  CHECK_FALSE(post.error);
  CHECK(post.result->delivery == re::Delivery::applied);
}

}  // namespace

TEST_CASE("a group of POSTs on distinct keys is committed by one transaction, each answered with its own effect") {
  skewbench::TempDir dir("re-group");
  const auto path = dir.path() / "state.db";
  std::vector<re::PostRequest> requests;
  for (int i = 0; i < 8; ++i) requests.push_back(request("op-" + std::to_string(i), "key-" + std::to_string(i), 100));
  {
    re::Store store(path, re::SyncMode::full);
    auto posts = pending(requests);
    run_group(store, posts);
    CHECK(store.totals().post_commits == 1);
    for (std::size_t i = 0; i < posts.size(); ++i) {
      check_applied(posts[i]);
      REQUIRE(posts[i].result->state.effects.size() == 1);
      CHECK(posts[i].result->state.effects[0].operation_id == requests[i].operation_id);
      CHECK(posts[i].result->state.effects[0].effect_id == static_cast<std::int64_t>(i) + 1);
      CHECK(posts[i].result->state.post_requests == 1);
    }
  }
  re::Store reopened(path, re::SyncMode::full);
  for (const auto& r : requests) CHECK(reopened.read(r.operation_id).effects.size() == 1);
}

TEST_CASE("in a group, each POST sees the writes of the POSTs before it, as if posted one after the other") {
  skewbench::TempDir dir("re-group");
  re::Store store(dir.path() / "state.db", re::SyncMode::full);
  const std::vector<re::PostRequest> requests = {request("op-1", "key", 100, "a"), request("op-1", "key", 101, "a"),
                                                 request("op-2", "key", 102, "a"), request("op-1", "key", 103, "b")};
  auto posts = pending(requests);
  run_group(store, posts);
  REQUIRE(std::all_of(posts.begin(), posts.end(), [](const auto& p) { return p.result.has_value(); }));
  CHECK(posts[0].result->delivery == re::Delivery::applied);
  CHECK(posts[1].result->delivery == re::Delivery::deduplicated);
  CHECK(posts[1].result->state.post_requests == 2);
  CHECK(posts[2].result->delivery == re::Delivery::refused_other_operation);
  CHECK(posts[3].result->delivery == re::Delivery::refused_different_payload);
  const auto state = store.read("op-1");
  CHECK(state.effects.size() == 1);
  CHECK(state.post_requests == 2);
  CHECK(store.read("op-2").post_requests == 0);
  CHECK(store.totals().post_commits == 1);
}

TEST_CASE("refusals in the middle of a group write nothing and leave the others of the group committed") {
  skewbench::TempDir dir("re-group");
  re::Store store(dir.path() / "state.db", re::SyncMode::full);
  store.post(request("op-held", "key-held", 100, "first"));
  store.post(request("op-gc", "key-gc", 0));
  REQUIRE(store.gc(re::GcRequest{"op-gc", 100}).temporal_epoch_after == 2);

  auto fenced = request("op-fenced", "key-fenced", 100);
  fenced.fence_epoch = 1;
  const std::vector<re::PostRequest> requests = {request("op-a", "key-a", 100),
                                                 request("op-held", "key-held", 101, "other payload"), fenced,
                                                 request("op-b", "key-b", 100)};
  auto posts = pending(requests);
  run_group(store, posts);
  check_applied(posts[0]);
  REQUIRE(posts[1].result);
  CHECK(posts[1].result->delivery == re::Delivery::refused_different_payload);
  REQUIRE(posts[2].result);
  CHECK(posts[2].result->delivery == re::Delivery::fenced_out);
  CHECK(posts[2].result->state.temporal_epoch == 2);
  check_applied(posts[3]);
  CHECK(store.read("op-held").post_requests == 1);
  CHECK(store.read("op-fenced").post_requests == 0);
  CHECK(store.read("op-fenced").effects.empty());
  CHECK(store.read("op-a").effects.size() == 1);
  CHECK(store.read("op-b").effects.size() == 1);
}

TEST_CASE("a POST whose response cannot be built fails alone; the rest of its group commits") {
  skewbench::TempDir dir("re-group");
  for (const auto mode : {re::DedupeMode::durable, re::DedupeMode::volatile_}) {
    INFO(re::dedupe_mode_name(mode));
    re::Store store(dir.path() / (std::string(re::dedupe_mode_name(mode)) + ".db"), re::SyncMode::full, mode);
    const std::vector<re::PostRequest> requests = {request("op-a", "key-a", 100), request("op-bad", "key-bad", 100),
                                                   request("op-b", "key-b", 100)};
    auto posts = pending(requests);
    posts[1].before_commit = [](const re::PostResult&) { throw std::runtime_error("cannot build the response"); };
    run_group(store, posts);
    check_applied(posts[0]);
    CHECK_FALSE(posts[1].result);
    CHECK(error_text(posts[1]) == "cannot build the response");
    check_applied(posts[2]);
    CHECK(store.totals().post_commits == 1);

    const auto bad = store.read("op-bad");
    CHECK(bad.effects.empty());
    CHECK(bad.records.empty());  // the volatile record is undone with the savepoint
    CHECK(bad.post_requests == 0);
    CHECK(store.read("op-a").records.size() == 1);
    CHECK(store.read("op-b").records.size() == 1);
    CHECK(store.post(request("op-bad", "key-bad", 101)).delivery == re::Delivery::applied);
  }
}

TEST_CASE("a statement that fails in the middle of a group fails only its own POST") {
  skewbench::TempDir dir("re-group");
  const auto path = dir.path() / "state.db";
  re::Store store(path, re::SyncMode::full);
  install_poison(path, "ABORT");
  const std::vector<re::PostRequest> requests = {request("op-a", "key-a", 100), request("poison-1", "key-p", 100),
                                                 request("op-b", "key-b", 100)};
  auto posts = pending(requests);
  run_group(store, posts);
  check_applied(posts[0]);
  CHECK_FALSE(posts[1].result);
  CHECK(error_text(posts[1]).find("poisoned effect") != std::string::npos);
  check_applied(posts[2]);
  CHECK(store.totals().post_commits == 1);
  CHECK(store.read("poison-1").post_requests == 0);
  CHECK(store.read("poison-1").records.empty());
  CHECK(store.read("op-a").effects.size() == 1);
  CHECK(store.read("op-b").effects.size() == 1);
}

TEST_CASE("when a failure rolls back the group's whole transaction, each POST is run again alone") {
  skewbench::TempDir dir("re-group");
  for (const auto mode : {re::DedupeMode::durable, re::DedupeMode::volatile_}) {
    INFO(re::dedupe_mode_name(mode));
    const auto path = dir.path() / (std::string(re::dedupe_mode_name(mode)) + ".db");
    re::Store store(path, re::SyncMode::full, mode);
    install_poison(path, "ROLLBACK");
    const std::vector<re::PostRequest> requests = {request("op-a", "key-a", 100), request("op-a", "key-a", 101),
                                                   request("poison-1", "key-p", 100), request("op-b", "key-b", 100)};
    auto posts = pending(requests);
    run_group(store, posts);
    // Had the lost group's volatile records not been undone, op-a would be
    // judged deduplicated on its second run.
    check_applied(posts[0]);
    REQUIRE(posts[1].result);
    CHECK(posts[1].result->delivery == re::Delivery::deduplicated);
    CHECK_FALSE(posts[2].result);
    CHECK(error_text(posts[2]).find("poisoned effect") != std::string::npos);
    check_applied(posts[3]);
    CHECK(store.totals().post_commits == 3);  // op-a twice and op-b, one by one

    const auto a = store.read("op-a");
    CHECK(a.effects.size() == 1);
    CHECK(a.post_requests == 2);
    CHECK(a.records.size() == 1);
    CHECK(store.read("poison-1").post_requests == 0);
    CHECK(store.read("poison-1").records.empty());
    CHECK(store.read("op-b").effects.size() == 1);
  }
}

TEST_CASE("a lone POST runs at once on the caller's own thread, as a group of one") {
  std::vector<std::size_t> sizes;
  std::thread::id runner;
  re::GroupCommitter committer(
      [&](std::span<re::PendingPost* const> group) {
        sizes.push_back(group.size());
        runner = std::this_thread::get_id();
        for (auto* post : group) post->result = re::PostResult{};
      },
      64);
  const auto r = request("op-1", "key-1", 100);
  for (int i = 0; i < 3; ++i) {
    re::PendingPost post{.request = &r, .before_commit = {}, .result = std::nullopt, .error = nullptr};
    committer.submit(post);
    CHECK(post.result);
  }
  CHECK(sizes == std::vector<std::size_t>{1, 1, 1});
  CHECK(runner == std::this_thread::get_id());
  CHECK(committer.stats().groups == 3);
  CHECK(committer.stats().largest_group == 1);
}

TEST_CASE("POSTs queued while a group runs form the next groups, oldest first, never more than the maximum") {
  constexpr std::size_t kMaxGroup = 4;
  constexpr int kFollowers = 10;
  std::mutex mutex;
  std::vector<std::vector<std::int64_t>> groups;  // the logical times of each group's POSTs, in order
  std::latch followers_queued(1);
  re::GroupCommitter committer(
      [&](std::span<re::PendingPost* const> group) {
        bool first = false;
        {
          std::lock_guard lock(mutex);
          groups.emplace_back();
          for (auto* post : group) groups.back().push_back(post->request->logical_time_s);
          first = groups.size() == 1;
        }
        if (first) followers_queued.wait();  // the first group runs while the others queue
        for (auto* post : group) {
          post->result = re::PostResult{};
          post->result->state.post_requests = post->request->logical_time_s;  // which POST this answers
        }
      },
      kMaxGroup);

  std::vector<re::PostRequest> requests;
  for (int i = 0; i <= kFollowers; ++i) requests.push_back(request("op", "key-" + std::to_string(i), i));
  std::vector<re::PendingPost> posts = pending(requests);
  std::vector<std::thread> threads;
  threads.emplace_back([&] { committer.submit(posts[0]); });
  const auto first_group_running = [&] {
    std::lock_guard lock(mutex);
    return groups.size() == 1;
  };
  while (!first_group_running()) std::this_thread::yield();
  for (int i = 1; i <= kFollowers; ++i) {
    threads.emplace_back([&, i] { committer.submit(posts[static_cast<std::size_t>(i)]); });
    // One at a time, so that the queue's order is known.
    while (committer.queued() < static_cast<std::size_t>(i)) std::this_thread::yield();
  }
  followers_queued.count_down();
  for (auto& thread : threads) thread.join();

  for (std::size_t i = 0; i < posts.size(); ++i) {
    REQUIRE(posts[i].result);
    CHECK(posts[i].result->state.post_requests == static_cast<std::int64_t>(i));
  }
  const std::vector<std::vector<std::int64_t>> expected = {{0}, {1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10}};
  CHECK(groups == expected);
  CHECK(committer.stats().largest_group == kMaxGroup);
  CHECK(committer.stats().posts == kFollowers + 1);
}

TEST_CASE("many threads submitting at once each get their own POST's outcome, and none is left waiting") {
  constexpr int kThreads = 32;
  constexpr int kPostsPerThread = 200;
  constexpr std::size_t kMaxGroup = 8;
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  re::GroupCommitter committer(
      [&](std::span<re::PendingPost* const> group) {
        if (running++ != 0) overlapped = true;
        for (auto* post : group) {
          post->result = re::PostResult{};
          post->result->state.post_requests = post->request->logical_time_s;
        }
        --running;
      },
      kMaxGroup);
  std::vector<int> wrong(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPostsPerThread; ++i) {
        const auto r = request("op", "key", t * kPostsPerThread + i);
        re::PendingPost post{.request = &r, .before_commit = {}, .result = std::nullopt, .error = nullptr};
        committer.submit(post);
        if (!post.result || post.result->state.post_requests != r.logical_time_s) ++wrong[static_cast<std::size_t>(t)];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(std::count(wrong.begin(), wrong.end(), 0) == kThreads);
  CHECK_FALSE(overlapped);  // one group at a time
  const auto stats = committer.stats();
  CHECK(stats.posts == kThreads * kPostsPerThread);
  CHECK(stats.largest_group <= kMaxGroup);
  CHECK(committer.queued() == 0);
}

TEST_CASE("a group runner that throws gives each POST of its group the error; the next group runs") {
  std::atomic<int> calls{0};
  re::GroupCommitter committer(
      [&](std::span<re::PendingPost* const> group) {
        if (calls++ == 0) throw std::runtime_error("the group failed");
        for (auto* post : group) post->result = re::PostResult{};
      },
      8);
  const auto r = request("op-1", "key-1", 100);
  re::PendingPost first{.request = &r, .before_commit = {}, .result = std::nullopt, .error = nullptr};
  committer.submit(first);
  CHECK_FALSE(first.result);
  CHECK(error_text(first) == "the group failed");
  re::PendingPost second{.request = &r, .before_commit = {}, .result = std::nullopt, .error = nullptr};
  committer.submit(second);
  CHECK(second.result);
  CHECK_FALSE(second.error);
}
