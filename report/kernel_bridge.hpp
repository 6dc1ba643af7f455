// report/kernel_bridge.hpp — a kernel's configuration as a results row writes it and reads it back.
//
//   tiles_json(KernelTiles)         ──► {"block_rows": ..., "grid": "static", "dq_schedule": ..., ...}
//   kernel_run_of_row(row)          ──► sim::KernelRun ──► sim::sim_config / sim::run_profile
//
// The bench writes tiles_json beside every measurement and builds the KernelRun from the kernel's own
// TileConfig; `bench --resimulate` reads it back with kernel_run_of_row. Rows recorded before the
// structured fields (grid, dq_schedule, lone_middles, launch_per_kv_block) existed get them from
// sim::legacy_tiles_fields, the one reader of their prose.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/kernel_config.hpp"

namespace report {

nlohmann::json tiles_json(const sim::KernelTiles& t);

// A row's tiles object back as data; `row_variant` names the kernel when the tiles do not (old rows),
// backward whether they are a backward's. Throws sim::Error naming the field that is missing or wrong.
sim::KernelTiles tiles_of_json(const nlohmann::json& tiles, const std::string& row_variant, bool backward);

// A bench row (variant, pass forward|backward|step, seq, head_dim, batch, heads, dtype, causal, tiles,
// and for a step tiles_forward) as a KernelRun. Throws sim::Error naming what the row lacks.
sim::KernelRun kernel_run_of_row(const nlohmann::json& row);

}  // namespace report
