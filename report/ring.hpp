// report/ring.hpp — printers for ring attention (sim/ring.hpp): the schedule, bytes per link and
// step, predicted times, scaling efficiency and break-even; pure functions, text and JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/reference.hpp"
#include "sim/ring.hpp"

namespace report {

// vs: the ring's numerics against attention_reference (count 0: not checked).
nlohmann::json ring_json(const sim::RingResult& r, const sim::ErrorStats& vs);
std::string ring_text(const sim::RingResult& r, const sim::ErrorStats& vs);

}  // namespace report
