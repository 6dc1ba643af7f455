// tests/cli/flashsim_cli_test.hpp — the CLI tests' two helpers: run the built flashsim with
// arguments (FLASHSIM_BIN, set by tests/CMakeLists.txt), and parse a successful run's JSON.
#pragma once
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/run_cli.hpp"

inline CliOut fs(const std::string& args) { return run_cli(std::string(FLASHSIM_BIN) + " " + args); }

inline nlohmann::json json_of(const CliOut& o) {
    REQUIRE(o.rc == 0);
    return nlohmann::json::parse(o.text);
}
