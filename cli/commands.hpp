// cli/commands.hpp — each CLI command registers itself on the app; one file a command.
// A command's callback stores its exit status in `rc` (0 ok, 1 refused input, 2 unavailable).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/reference.hpp"
#include "sim/simulate.hpp"

void register_simulate(CLI::App& app, int& rc);
void register_compare(CLI::App& app, int& rc);
void register_softmax(CLI::App& app, int& rc);
void register_numerics(CLI::App& app, int& rc);
void register_attend(CLI::App& app, int& rc);
void register_bench(CLI::App& app, int& rc);
void register_sweep(CLI::App& app, int& rc);
void register_scenario(CLI::App& app, int& rc);
void register_fit(CLI::App& app, int& rc);
void register_decode(CLI::App& app, int& rc);
void register_ring(CLI::App& app, int& rc);
void register_lesson(CLI::App& app, int& rc);
void register_lab(CLI::App& app, int& rc);
// All of the above, as `flashsim` has them (main.cpp and the CLI fuzz target).
void register_commands(CLI::App& app, int& rc);

// The options every simulating command shares.
struct ProblemArgs {
    int64_t seq = 0, head_dim = 0, batch = 1, heads = 1, window = 0, pad_left = 0;
    std::string dtype = "fp16", gpu = "H200";
    int64_t sram = 0;
    uint64_t seed = 42;
    bool causal = false;
    double scale = 0;

    void add_to(CLI::App* cmd, bool shape_required);
    sim::Problem problem() const;         // throws sim::Error on a bad dtype or shape
    const sim::Machine& machine() const;  // throws sim::Error on an unknown GPU
};

// Parse the command line and run the chosen command; returns the exit status (2 on a usage error).
int parse_and_run(CLI::App& app, int argc, char** argv, const int& rc);

// A comma-separated flag value as its items, each trimmed of spaces and tabs; "" gives none (the
// caller's default or its own "needs at least one"). An empty item (a leading, doubled or trailing
// comma) throws sim::Error naming `flag`, so every list flag refuses "1024,,2048" and "1024," alike.
std::vector<std::string> split_items(const std::string& list, const std::string& flag);

// Print "flashsim <cmd>: error: <what>" on stderr.
void print_error(const std::string& cmd, const std::string& what);
// A checked result with NaN or inf is not shown: throws sim::Error naming `what`, how many values and
// the likely cause (float32 overflow of the scores: too large a --scale), so the command exits 1.
void require_finite(const std::string& what, const sim::ErrorStats& st);
// A causal problem is walked tile by tile below the diagonal, (N / 128)^2 / 2 tiles a
// head, where an unmasked one takes a shortcut: before a walk this machine would take more than
// ~10 s over, say so on stderr with the estimate (`work` scales it: 1 a forward walk).
void note_long_walk(const std::string& cmd, const sim::Problem& p, double work);
