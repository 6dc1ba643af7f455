// The .npy reader and writer: round trips in each dtype, files written byte by byte here (not by
// write_npy) read back, and bad files refused with a message that says what is wrong.
#include <doctest/doctest.h>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <iterator>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/npy.hpp"

using namespace sim;

namespace {
// A path in the temporary directory, removed when the test ends.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string& name)
        : path((std::filesystem::temp_directory_path() / ("flashsim_test_npy_" + name)).string()) {}
    ~TempFile() { std::filesystem::remove(path); }
};

// A .npy file, version 1.0 or 2.0, from a header dictionary and raw little-endian data, padded the
// way the format asks (magic, version, header length, header ending in '\n', total a multiple of 64).
void write_raw(const std::string& path, std::string header, const std::string& data, int version = 1) {
    const size_t prefix = version == 1 ? 10 : 12;
    header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += static_cast<char>(version);
    bytes += '\0';
    const size_t len = header.size();
    for (size_t k = 0; k < (version == 1 ? 2u : 4u); ++k) bytes += static_cast<char>((len >> (8 * k)) & 0xff);
    bytes += header + data;
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
std::string raw_bytes(const std::vector<T>& v) {
    std::string s(v.size() * sizeof(T), '\0');
    std::memcpy(s.data(), v.data(), s.size());
    return s;
}

TensorF sample(int64_t b, int64_t h, int64_t n, int64_t d) {
    TensorF t(b, h, n, d);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 0.1f * static_cast<float>(i) - 1.7f;
    return t;
}

std::string refusal(const std::string& path) {
    try {
        read_npy(path);
    } catch (const Error& e) { return e.what(); }
    return "(no error)";
}
}  // namespace

TEST_CASE("npy: round trip in each dtype, 4-D and 2-D") {
    const TensorF t = sample(2, 3, 4, 5);
    for (const char* descr : {"<f4", "<f8", "<f2"}) {
        CAPTURE(descr);
        TempFile f(std::string("rt") + descr[2]);
        write_npy(f.path, t, descr, true);
        const NpyArray a = read_npy(f.path);
        CHECK(a.descr == descr);
        CHECK(a.four_d);
        CHECK(a.tensor.batch == 2);
        CHECK(a.tensor.heads == 3);
        CHECK(a.tensor.rows == 4);
        CHECK(a.tensor.cols == 5);
        REQUIRE(a.tensor.data.size() == t.data.size());
        // float32 and float64 hold every float exactly; float16 holds each value rounded to fp16
        const bool half = std::string(descr) == "<f2";
        for (size_t i = 0; i < t.data.size(); ++i)
            CHECK(a.tensor.data[i] == (half ? round_to(DType::fp16, t.data[i]) : t.data[i]));
    }
    TempFile f("rt2d");
    write_npy(f.path, sample(1, 1, 3, 2), "<f4", false);
    const NpyArray a = read_npy(f.path);
    CHECK_FALSE(a.four_d);
    CHECK(a.tensor.batch == 1);
    CHECK(a.tensor.heads == 1);
    CHECK(a.tensor.rows == 3);
    CHECK(a.tensor.cols == 2);
    CHECK(a.tensor.data == sample(1, 1, 3, 2).data);
}

TEST_CASE("npy: files written byte by byte are read in each accepted dtype and header version") {
    TempFile f("dtypes");
    const std::vector<float> f32 = {1.5f, -2.25f, 0.0f, 3.0f, 1e-3f, -7.0f};
    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", raw_bytes(f32));
    NpyArray a = read_npy(f.path);
    CHECK(a.descr == "<f4");
    CHECK(a.tensor.rows == 2);
    CHECK(a.tensor.cols == 3);
    CHECK(a.tensor.data == f32);

    const std::vector<double> f64 = {0.5, -1.0, 2.0, 0.125};
    write_raw(f.path, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 2, 2), }", raw_bytes(f64), 2);
    a = read_npy(f.path);
    CHECK(a.descr == "<f8");
    CHECK(a.four_d);
    CHECK(a.tensor.data == std::vector<float>{0.5f, -1.0f, 2.0f, 0.125f});

    // IEEE half bit patterns: 0x3c00 = 1, 0xc000 = -2, 0x3800 = 0.5, 0x7bff = 65504 (the largest)
    const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x3800, 0x7bff};
    for (const char* descr : {"<f2", "|f2", "=f2"}) {
        CAPTURE(descr);
        write_raw(f.path, std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (4, 1), }",
                  raw_bytes(f16));
        a = read_npy(f.path);
        CHECK(a.descr == "<f2");
        CHECK(a.tensor.data == std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f});
    }
}

TEST_CASE("npy: bad files are refused with a message that says what is wrong") {
    TempFile f("bad");
    const std::string six = raw_bytes(std::vector<float>(6, 1.0f));
    write_raw(f.path, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", six);
    CHECK(refusal(f.path).find("Fortran-ordered arrays are not supported") != std::string::npos);

    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six.substr(0, 20));
    CHECK(refusal(f.path).find("data is shorter than its shape (2, 3) says") != std::string::npos);

    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 3), }", six);
    CHECK(refusal(f.path).find("must be (N, d) or (B, H, N, d)") != std::string::npos);

    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", "");
    CHECK(refusal(f.path).find("has an empty dimension") != std::string::npos);

    for (const char* descr : {">f4", "<i4", "<f16"}) {
        CAPTURE(descr);
        write_raw(f.path, std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2, 3), }", six);
        CHECK(refusal(f.path).find(std::string("dtype '") + descr + "' is not supported") != std::string::npos);
    }

    std::ofstream(f.path, std::ios::binary) << "PK\x03\x04 not a numpy file at all";
    CHECK(refusal(f.path).find("is not a .npy file (bad magic)") != std::string::npos);

    std::ofstream(f.path, std::ios::binary) << "\x93NUMPY\x01";
    CHECK(refusal(f.path).find("truncated .npy header") != std::string::npos);

    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", six, 7);
    CHECK(refusal(f.path).find("unsupported .npy format version 7") != std::string::npos);

    // Dimensions that would overflow a 64-bit count, or an element count past 2^31, are refused
    // (the first once escaped as std::out_of_range from the number parser instead of a refusal).
    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 3), }", six);
    CHECK(refusal(f.path).find("has a dimension too large") != std::string::npos);
    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536), }", six);
    CHECK(refusal(f.path).find("more than 2^31 elements") != std::string::npos);
    write_raw(f.path, "{'descr': '<f4', 'fortran_order': False, 'shape': (46341, 46341), }", six);
    CHECK(refusal(f.path).find("more than 2^31 elements") != std::string::npos);

    CHECK(refusal(f.path + ".missing").find("cannot open") != std::string::npos);
    // every message names the file
    CHECK(refusal(f.path).find(f.path) != std::string::npos);
}

TEST_CASE("npy: float64 beyond float's range reads as +-inf; parse_npy reads the bytes read_npy reads") {
    TempFile f("f8range");
    const std::vector<double> v{1e300, -1e300, 3.5, -0.25};
    write_raw(f.path, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", raw_bytes(v));
    const NpyArray a = read_npy(f.path);
    CHECK(std::isinf(a.tensor.data[0]));
    CHECK(a.tensor.data[0] > 0);
    CHECK(std::isinf(a.tensor.data[1]));
    CHECK(a.tensor.data[1] < 0);
    CHECK(a.tensor.data[2] == 3.5f);
    CHECK(a.tensor.data[3] == -0.25f);
    std::ifstream in(f.path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const NpyArray b = parse_npy(bytes, "memory");
    CHECK(b.tensor.data.size() == 4);
    CHECK(b.tensor.data[2] == 3.5f);
    try {
        parse_npy(bytes.substr(0, 5), "memory");
        CHECK_MESSAGE(false, "five bytes were accepted");
    } catch (const Error& e) { CHECK(std::string(e.what()).find("'memory'") != std::string::npos); }
}

// A .npy header with a signed dimension or without its keys is refused with what is wrong.
TEST_CASE("npy: a shape with a sign, and headers without their keys, are refused by name") {
    auto file = [](const std::string& dict) {
        std::string h = dict;
        while ((10 + h.size() + 1) % 64) h += ' ';
        h += '\n';
        std::string b = "\x93NUMPY";
        b += '\x01';
        b += '\x00';
        b += char(h.size() & 0xff);
        b += char(h.size() >> 8);
        return b + h + std::string(64 * 32 * 4, '\0');
    };
    const std::pair<std::string, std::string> cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-64, 32), }", "not a tuple of non-negative integers"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (64, -32), }", "not a tuple of non-negative integers"},
        {"{'descr': '<f4', 'fortran_order': False, }", "has no 'shape'"},
        {"{'descr': '<f4', 'shape': (64, 32), }", "has no 'fortran_order'"},
    };
    for (const auto& c : cases) {
        // named, not a structured binding: CAPTURE's lambda cannot capture one in C++20 (clang refuses)
        const std::string& dict = c.first;
        const std::string& says = c.second;
        CAPTURE(dict);
        std::string what;
        try {
            parse_npy(file(dict), "x.npy");
        } catch (const Error& e) { what = e.what(); }
        CHECK(what.find(says) != std::string::npos);
    }
    const NpyArray ok = parse_npy(file("{'descr': '<f4', 'fortran_order': False, 'shape': (64, 32), }"), "x.npy");
    CHECK(ok.tensor.rows == 64);
    CHECK(ok.tensor.cols == 32);
}
