// tests/run_cli.hpp — the tests' way to run the flashsim executable: a shell command line in, its
// exit code and its stdout and stderr (together) out; and the check that bad input is refused.
#pragma once
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <initializer_list>
#include <string>

struct CliOut {
    int rc = -1;
    std::string text;  // stdout and stderr together
};

inline CliOut run_cli(const std::string& command) {
    CliOut o;
    FILE* f = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(f != nullptr);
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) o.text.append(buf.data(), n);
    const int status = pclose(f);
    o.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return o;
}

// A bad command line, a piece of the one line it must be answered with, and its exit code (-1: any
// but 0; 1 a refused value, 2 a usage error the option parser answers).
struct Refusal {
    const char* args;
    const char* says;
    int rc = -1;
};

// Each case: a non-zero exit (the one named, if any), the expected words, and no uncaught exception.
template <typename Run>
void expect_refusals(Run&& run, std::initializer_list<Refusal> cases) {
    for (const auto& b : cases) {
        CAPTURE(b.args);
        const CliOut o = run(b.args);
        if (b.rc < 0)
            CHECK(o.rc != 0);
        else
            CHECK(o.rc == b.rc);
        CHECK(o.text.find(b.says) != std::string::npos);
        CHECK(o.text.find("terminate called") == std::string::npos);
    }
}
