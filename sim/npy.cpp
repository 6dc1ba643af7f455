#include "sim/npy.hpp"

#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <limits>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

namespace sim {

namespace {
const char kMagic[] = "\x93NUMPY";

std::string header_field(const std::string& h, const std::string& key) {
    const auto pos = h.find("'" + key + "'");
    if (pos == std::string::npos) return {};
    auto colon = h.find(':', pos);
    if (colon == std::string::npos) return {};
    ++colon;
    while (colon < h.size() && h[colon] == ' ') ++colon;
    if (colon >= h.size()) return {};
    if (h[colon] == '\'') {
        const auto end = h.find('\'', colon + 1);
        return end == std::string::npos ? std::string{} : h.substr(colon + 1, end - colon - 1);
    }
    if (h[colon] == '(') {
        const auto end = h.find(')', colon);
        return end == std::string::npos ? std::string{} : h.substr(colon, end - colon + 1);
    }
    const auto end = h.find_first_of(",}", colon);
    return h.substr(colon, end == std::string::npos ? std::string::npos : end - colon);
}
}  // namespace

NpyArray read_npy(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot open '" + path + "': no such file or not readable");
    std::ostringstream all;
    all << f.rdbuf();
    if (f.bad()) throw Error("reading '" + path + "' failed");
    return parse_npy(all.str(), path);
}

NpyArray parse_npy(const std::string& bytes, const std::string& name) {
    // A cursor over the bytes: take(n) hands out the next n bytes or throws "truncated <what>".
    size_t at = 0;
    auto take = [&](size_t n, const char* what) {
        if (bytes.size() - at < n) throw Error("'" + name + "': truncated " + what);
        const char* p = bytes.data() + at;
        at += n;
        return p;
    };
    if (bytes.size() < 6 || std::memcmp(bytes.data(), kMagic, 6) != 0)
        throw Error("'" + name + "' is not a .npy file (bad magic); save it with numpy.save");
    at = 6;
    const auto* ver = reinterpret_cast<const unsigned char*>(take(2, ".npy header"));
    uint32_t hlen = 0;
    if (ver[0] == 1) {
        const auto* b = reinterpret_cast<const unsigned char*>(take(2, ".npy header"));
        hlen = b[0] | (b[1] << 8);
    } else if (ver[0] == 2 || ver[0] == 3) {
        const auto* b = reinterpret_cast<const unsigned char*>(take(4, ".npy header"));
        hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
    } else {
        throw Error("'" + name + "': unsupported .npy format version " + std::to_string(ver[0]));
    }
    if (hlen > (1u << 20)) throw Error("'" + name + "': .npy header too long");
    const std::string h(take(hlen, ".npy header"), hlen);
    NpyArray out;
    out.descr = header_field(h, "descr");
    if (out.descr == "|f2" || out.descr == "=f2") out.descr = "<f2";
    if (out.descr != "<f2" && out.descr != "<f4" && out.descr != "<f8")
        throw Error("'" + name + "': dtype '" + out.descr +
                    "' is not supported; use little-endian float16, float32 or float64");
    const std::string fortran = header_field(h, "fortran_order");
    if (fortran.empty()) throw Error("'" + name + "': .npy header has no 'fortran_order'; save it with numpy.save");
    if (fortran != "False")
        throw Error("'" + name + "': Fortran-ordered arrays are not supported; save with numpy.ascontiguousarray");
    const std::string shape = header_field(h, "shape");
    if (shape.empty()) throw Error("'" + name + "': .npy header has no 'shape'; save it with numpy.save");
    // A shape is a tuple of non-negative integers: anything else (a minus sign, a letter) is refused,
    // not skipped.
    if (shape.find_first_not_of("0123456789, ()") != std::string::npos)
        throw Error("'" + name + "': shape " + shape + " is not a tuple of non-negative integers");
    // Each dimension is a run of digits; more than 12 digits is refused before it can overflow.
    std::vector<int64_t> dims;
    static const std::regex num("[0-9]+");
    for (auto it = std::sregex_iterator(shape.begin(), shape.end(), num); it != std::sregex_iterator(); ++it) {
        if (it->str().size() > 12) throw Error("'" + name + "': shape " + shape + " has a dimension too large");
        dims.push_back(std::stoll(it->str()));
    }
    if (dims.size() != 2 && dims.size() != 4)
        throw Error("'" + name + "': shape " + shape + " must be (N, d) or (B, H, N, d)");
    for (auto d : dims)
        if (d <= 0) throw Error("'" + name + "': shape " + shape + " has an empty dimension");
    out.four_d = dims.size() == 4;
    const int64_t B = out.four_d ? dims[0] : 1, H = out.four_d ? dims[1] : 1;
    const int64_t N = dims[dims.size() - 2], D = dims[dims.size() - 1];
    // The element count in floating point first: each factor is below 1e12, so the product of
    // four of them cannot overflow a double, and the int64 product is formed only when small.
    const double elems =
        static_cast<double>(B) * static_cast<double>(H) * static_cast<double>(N) * static_cast<double>(D);
    if (elems > static_cast<double>(int64_t{1} << 31))
        throw Error("'" + name + "': shape " + shape + " has more than 2^31 elements, more than flashsim reads");
    const size_t count = static_cast<size_t>(B * H * N * D);
    const size_t width = out.descr == "<f2" ? 2 : out.descr == "<f4" ? 4 : 8;
    if (bytes.size() - at < count * width)
        throw Error("'" + name + "': data is shorter than its shape " + shape + " says");
    out.tensor = TensorF(B, H, N, D);
    const char* raw = bytes.data() + at;
    for (size_t i = 0; i < count; ++i) {
        const char* p = raw + i * width;
        float v;
        if (width == 2) {
            uint16_t b;
            std::memcpy(&b, p, 2);
            v = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(b));
        } else if (width == 4) {
            std::memcpy(&v, p, 4);
        } else {
            double d;
            std::memcpy(&d, p, 8);
            // Beyond float's range the value becomes +-inf (as numpy's astype does); converting
            // it with a plain cast would be undefined behaviour.
            v = std::isfinite(d) && std::abs(d) > std::numeric_limits<float>::max()
                    ? std::copysign(std::numeric_limits<float>::infinity(), d)
                    : static_cast<float>(d);
        }
        out.tensor.data[i] = v;
    }
    return out;
}

void write_npy(const std::string& path, const TensorF& t, const std::string& descr, bool four_d) {
    if (descr != "<f2" && descr != "<f4" && descr != "<f8") throw Error("write_npy: unsupported dtype " + descr);
    std::ostringstream shape;
    if (four_d || t.batch * t.heads != 1)
        shape << "(" << t.batch << ", " << t.heads << ", " << t.rows << ", " << t.cols << ")";
    else
        shape << "(" << t.rows << ", " << t.cols << ")";
    std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape.str() + ", }";
    const size_t total = 10 + h.size() + 1;
    h.append((64 - total % 64) % 64, ' ');
    h += '\n';
    std::ofstream f(path, std::ios::binary);
    if (!f) throw Error("cannot write '" + path + "'");
    f.write(kMagic, 6);
    const unsigned char ver[2] = {1, 0};
    f.write(reinterpret_cast<const char*>(ver), 2);
    const unsigned char len[2] = {static_cast<unsigned char>(h.size() & 0xff),
                                  static_cast<unsigned char>(h.size() >> 8)};
    f.write(reinterpret_cast<const char*>(len), 2);
    f.write(h.data(), static_cast<std::streamsize>(h.size()));
    for (float v : t.data) {
        if (descr == "<f2") {
            const uint16_t b = Eigen::numext::bit_cast<uint16_t>(Eigen::half(v));
            f.write(reinterpret_cast<const char*>(&b), 2);
        } else if (descr == "<f4") {
            f.write(reinterpret_cast<const char*>(&v), 4);
        } else {
            const double d = v;
            f.write(reinterpret_cast<const char*>(&d), 8);
        }
    }
    f.close();
    if (!f) throw Error("writing '" + path + "' failed (the disk may be full, or the path not a regular file)");
}

}  // namespace sim
