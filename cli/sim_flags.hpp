// cli/sim_flags.hpp — the options that shape a simulation (algorithm, blocks, pass, L2, ceilings),
// shared by `simulate`, `compare` and `sweep`. Defined in cmd_simulate.cpp.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "sim/simulate.hpp"

struct SimFlags {
    std::string algo = "flash2";
    int64_t block_rows = 0, block_cols = 0, bwd_block_rows = 0, bwd_block_cols = 0;
    std::string numerics = "auto", pass = "forward", l2 = "auto", ceilings = "datasheet";
    int64_t record_row = 0;

    // with_algo: add --algo; with_blocks: add the block options (a sweep may vary them itself).
    void add_to(CLI::App* cmd, bool with_algo, bool with_blocks);
    sim::Config config(sim::Algo a) const;  // throws sim::Error naming a bad value
};

sim::Algo algo_or_throw(const std::string& s);
