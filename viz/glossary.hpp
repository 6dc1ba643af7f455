// viz/glossary.hpp — every term the app explains in a "(?)" tooltip, in one table (glossary.cpp).
#pragma once
#include <string_view>

namespace viz {

// The explanation of a term ("HBM", "B_r", "online softmax", ...); a visible placeholder naming the
// missing entry when the table has none (tests check every term the UI uses is present).
std::string_view glossary(std::string_view term);
bool glossary_has(std::string_view term);

}  // namespace viz
