#include "explore/generate.hpp"

#include <memory>

#include <rapidcheck/gen/Build.h>
#include <rapidcheck/gen/Container.h>
#include <rapidcheck/gen/Create.h>
#include <rapidcheck/gen/Transform.h>
#include <rapidcheck/seq/Create.h>
#include <rapidcheck/seq/Operations.h>
#include <rapidcheck/seq/Transform.h>
#include <rapidcheck/shrink/Shrink.h>
#include <rapidcheck/shrinkable/Create.h>

namespace skewbench::explore {
namespace {

using nlohmann::json;

// A whole number in [min, max], uniform whatever RapidCheck's size, that
// shrinks toward `target`.
// A whole number in [min, max], uniform, from `random`.
std::int64_t draw(rc::Random random, std::int64_t min, std::int64_t max) {
  const auto span = static_cast<std::uint64_t>(max - min) + 1;
  return min + static_cast<std::int64_t>(random.next() % span);
}

rc::Gen<std::int64_t> between(std::int64_t min, std::int64_t max, std::int64_t target) {
  return [=](const rc::Random& random, int /*size*/) {
    const auto value = draw(random, min, max);
    return rc::shrinkable::shrinkRecur(value,
                                       [=](std::int64_t x) { return rc::shrink::towards<std::int64_t>(x, target); });
  };
}

rc::Gen<std::int64_t> within(const Range& range) { return between(range.min_s, range.max_s, range.shrink_target()); }

// An index below `count` (at least 1), shrinking toward 0.
rc::Gen<std::size_t> index_below(std::size_t count) {
  return rc::gen::map(between(0, static_cast<std::int64_t>(count) - 1, 0),
                      [](std::int64_t i) { return static_cast<std::size_t>(i); });
}

// true or false, shrinking toward false.
rc::Gen<bool> either() {
  return rc::gen::map(between(0, 1, 0), [](std::int64_t i) { return i == 1; });
}

// A vector of 0 to `max` values of `element`: shrinks by removing values, then
// by shrinking each.
template <typename T>
rc::Gen<std::vector<T>> up_to(std::size_t max, rc::Gen<T> element) {
  return rc::gen::resize(static_cast<int>(max), rc::gen::container<std::vector<T>>(std::move(element)));
}

// Each ranged field of every policy drawn from its range; shrinks each value
// toward its target, one at a time.
rc::Gen<std::vector<DrawnValue>> policy_values(const Bounds& bounds) {
  std::vector<Range> ranges;
  for (const auto& policy : bounds.policy_ranges) {
    for (const auto& ranged : policy) ranges.push_back(ranged.range);
  }
  return [ranges](const rc::Random& random, int /*size*/) {
    rc::Random r(random);
    std::vector<DrawnValue> values;
    for (const auto& range : ranges) {
      values.push_back({.value = draw(r.split(), range.min_s, range.max_s), .target = range.shrink_target()});
    }
    return rc::shrinkable::shrinkRecur(values, [](const std::vector<DrawnValue>& drawn) {
      return rc::shrink::eachElement(drawn, [](const DrawnValue& v) {
        return rc::seq::map(rc::shrink::towards<std::int64_t>(v.value, v.target),
                            [target = v.target](std::int64_t x) { return DrawnValue{.value = x, .target = target}; });
      });
    });
  };
}

// What a step's fields may shrink to, one field at a time, each toward its
// target: only the fields its kind uses, so that no shrink is the same
// scenario again.
rc::Seq<StepDraft> field_shrinks(const StepDraft& step, const std::string& kind, const Bounds& bounds) {
  using rc::shrink::towards;
  const auto with = [step](auto field) {
    return [step, field](auto value) {
      auto shrunk = step;
      shrunk.*field = value;
      return shrunk;
    };
  };
  auto out = rc::seq::concat(
      rc::seq::map(towards<std::size_t>(step.kind, 0), with(&StepDraft::kind)),
      rc::seq::map(towards<std::int64_t>(step.gap_s, bounds.step_gap_s.shrink_target()), with(&StepDraft::gap_s)));
  if (performed_by_a_node(kind)) {
    out = rc::seq::concat(std::move(out), rc::seq::map(towards<std::size_t>(step.node, 0), with(&StepDraft::node)));
  }
  if (kind == "post_effect" && step.drop_ack) {
    out = rc::seq::concat(std::move(out), rc::seq::just(with(&StepDraft::drop_ack)(false)));
  }
  if (kind == "set_clock_offset") {
    out = rc::seq::concat(std::move(out),
                          rc::seq::map(towards<std::int64_t>(step.offset_s, bounds.clock_offset_s.shrink_target()),
                                       with(&StepDraft::offset_s)));
  }
  return out;
}

// What a list of steps may shrink to: each step taken out with the next one
// starting when it did (its gap takes the one taken out, where the sum stays
// within the bounds), so that every later step keeps its time; each step
// taken out with the later ones moving up by its gap; then each step's
// fields. RapidCheck's container shrinks take steps out only the second way,
// and a schedule whose times matter then stops short of its smallest.
rc::Seq<std::vector<StepDraft>> step_shrinks(const std::vector<StepDraft>& steps,
                                             const std::shared_ptr<const Bounds>& kept) {
  const auto& bounds = *kept;
  std::vector<std::vector<StepDraft>> removed;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto keeping_times = steps;
    if (i + 1 < steps.size() && steps[i].gap_s > 0) {
      if (steps[i].gap_s + steps[i + 1].gap_s <= bounds.step_gap_s.max_s) {
        keeping_times[i + 1].gap_s += steps[i].gap_s;
        keeping_times.erase(keeping_times.begin() + static_cast<std::ptrdiff_t>(i));
        removed.push_back(std::move(keeping_times));
      }
    }
    auto moving_up = steps;
    moving_up.erase(moving_up.begin() + static_cast<std::ptrdiff_t>(i));
    removed.push_back(std::move(moving_up));
  }
  return rc::seq::concat(rc::seq::fromContainer(std::move(removed)),
                         rc::shrink::eachElement(steps, [kept](const StepDraft& step) {
                           return field_shrinks(step, kept->step_kinds[step.kind % kept->step_kinds.size()], *kept);
                         }));
}

// Up to the bounds' number of steps, drawn as RapidCheck's container draws
// them, shrunk by step_shrinks.
rc::Gen<std::vector<StepDraft>> steps_within(const Bounds& bounds, rc::Gen<StepDraft> step) {
  auto drawn = up_to(bounds.max_steps, std::move(step));
  // The shrink tree is walked after the generator returns: it keeps its own copy.
  auto kept = std::make_shared<const Bounds>(bounds);
  return [drawn, kept](const rc::Random& random, int size) {
    return rc::shrinkable::shrinkRecur(
        drawn(random, size).value(), [kept](const std::vector<StepDraft>& steps) { return step_shrinks(steps, kept); });
  };
}

}  // namespace

rc::Gen<Draft> draft_generator(const Bounds& bounds) {
  const auto max_nodes = bounds.max_nodes;
  auto step = rc::gen::build<StepDraft>(
      rc::gen::set(&StepDraft::kind, index_below(std::max<std::size_t>(1, bounds.step_kinds.size()))),
      rc::gen::set(&StepDraft::node, index_below(max_nodes)),
      rc::gen::set(&StepDraft::gap_s, within(bounds.step_gap_s)), rc::gen::set(&StepDraft::drop_ack, either()),
      rc::gen::set(&StepDraft::offset_s, within(bounds.clock_offset_s)));
  return rc::gen::build<Draft>(
      rc::gen::set(&Draft::policy, index_below(bounds.policies.size())),
      rc::gen::set(&Draft::policy_values, policy_values(bounds)), rc::gen::set(&Draft::ttl_s, within(bounds.ttl_s)),
      rc::gen::set(&Draft::first_node_offset_s, within(bounds.clock_offset_s)),
      rc::gen::set(&Draft::other_node_offsets_s, up_to(max_nodes - 1, within(bounds.clock_offset_s))),
      rc::gen::set(&Draft::post_node, index_below(max_nodes)),
      rc::gen::set(&Draft::post_at_s, within(bounds.step_gap_s)), rc::gen::set(&Draft::post_drop_ack, either()),
      rc::gen::set(&Draft::steps, bounds.step_kinds.empty() ? rc::gen::just(std::vector<StepDraft>{})
                                                            : steps_within(bounds, std::move(step))));
}

json policy_document(const Bounds& bounds, const Draft& draft) {
  const auto p = draft.policy % bounds.policies.size();
  std::size_t first = 0;  // the policy's first value in policy_values
  for (std::size_t i = 0; i < p; ++i) first += bounds.policy_ranges[i].size();
  json policy = bounds.policies[p];
  const auto& ranges = bounds.policy_ranges[p];
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    policy[ranges[i].field] =
        first + i < draft.policy_values.size() ? draft.policy_values[first + i].value : ranges[i].range.shrink_target();
  }
  return policy;
}

json scenario_document(const Bounds& bounds, const Draft& draft, const std::string& id,
                       const std::string& description) {
  const auto node_id = [&draft](std::size_t index) { return "node-" + std::to_string(index % draft.node_count() + 1); };
  json nodes = json::array({{{"id", node_id(0)}, {"clock_offset_s", draft.first_node_offset_s}}});
  for (std::size_t i = 0; i < draft.other_node_offsets_s.size(); ++i) {
    nodes.push_back({{"id", node_id(i + 1)}, {"clock_offset_s", draft.other_node_offsets_s[i]}});
  }
  json steps = json::array({{{"kind", "commit_operation"}, {"node", node_id(0)}, {"at_s", 0}},
                            {{"kind", "post_effect"},
                             {"node", node_id(draft.post_node)},
                             {"at_s", draft.post_at_s},
                             {"drop_ack", draft.post_drop_ack}}});
  auto at_s = draft.post_at_s;
  for (const auto& s : draft.steps) {
    at_s += s.gap_s;
    const auto& kind = bounds.step_kinds[s.kind % bounds.step_kinds.size()];
    json step = {{"kind", kind}, {"at_s", at_s}};
    if (performed_by_a_node(kind)) step["node"] = node_id(s.node);
    if (kind == "post_effect") step["drop_ack"] = s.drop_ack;
    if (kind == "set_clock_offset") step["offset_s"] = s.offset_s;
    steps.push_back(std::move(step));
  }
  json document = {{"id", id},
                   {"description", description},
                   {"t0_s", bounds.t0_s},
                   {"ttl_s", draft.ttl_s},
                   {"nodes", std::move(nodes)},
                   {"policy", policy_document(bounds, draft)},
                   {"steps", std::move(steps)},
                   {"expect", json::object()}};
  if (!bounds.remote.is_null()) document["remote"] = bounds.remote;
  return document;
}

}  // namespace skewbench::explore
