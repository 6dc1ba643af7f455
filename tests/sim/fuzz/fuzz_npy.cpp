// tests/sim/fuzz/fuzz_npy.cpp — libFuzzer target for the .npy reader (sim::parse_npy, what
// `flashsim attend` reads Q, K, V and dO with). Any bytes must either parse into a tensor whose
// size matches its shape or be refused with a sim::Error; anything else (a crash, another
// exception, a sanitizer report) is a bug. How to build and run: tests/fuzz.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > (1u << 16)) return 0;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const sim::NpyArray a = sim::parse_npy(bytes, "fuzz.npy");
        const auto& t = a.tensor;
        // What was accepted is self-consistent: the element count is the shape's product, the
        // data fitted in the input, and a 2-D file has B = H = 1.
        const size_t width = a.descr == "<f2" ? 2 : a.descr == "<f4" ? 4 : 8;
        if (t.data.size() != static_cast<size_t>(t.batch * t.heads * t.rows * t.cols)) std::abort();
        if (t.data.size() * width > size) std::abort();
        if (!a.four_d && (t.batch != 1 || t.heads != 1)) std::abort();
    } catch (const sim::Error&) {
        // A refusal with a message: the expected answer to bad bytes.
    }
    return 0;
}
