// report/ring.hpp — printers for ring attention (sim/ring.hpp): the schedule, bytes per link and
// step, predicted times, scaling efficiency and break-even; pure functions, text and JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/reference.hpp"
#include "sim/ring.hpp"

namespace report {

// checks: the ring's numerics against the one-device reference, by output name ("O", "dQ", "dK",
// "dV"); empty: not checked.
using RingChecks = std::vector<std::pair<std::string, sim::ErrorStats>>;
nlohmann::json ring_json(const sim::RingResult& r, const RingChecks& checks = {});
std::string ring_text(const sim::RingResult& r, const RingChecks& checks = {});

}  // namespace report
