#include "sim/npy.hpp"

#include <Eigen/Core>
#include <cstring>
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
    char magic[6];
    unsigned char ver[2];
    if (!f.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0)
        throw Error("'" + path + "' is not a .npy file (bad magic); save it with numpy.save");
    if (!f.read(reinterpret_cast<char*>(ver), 2)) throw Error("'" + path + "': truncated .npy header");
    uint32_t hlen = 0;
    if (ver[0] == 1) {
        unsigned char b[2];
        if (!f.read(reinterpret_cast<char*>(b), 2)) throw Error("'" + path + "': truncated .npy header");
        hlen = b[0] | (b[1] << 8);
    } else if (ver[0] == 2 || ver[0] == 3) {
        unsigned char b[4];
        if (!f.read(reinterpret_cast<char*>(b), 4)) throw Error("'" + path + "': truncated .npy header");
        hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
    } else {
        throw Error("'" + path + "': unsupported .npy format version " + std::to_string(ver[0]));
    }
    if (hlen > (1u << 20)) throw Error("'" + path + "': .npy header too long");
    std::string h(hlen, '\0');
    if (!f.read(h.data(), hlen)) throw Error("'" + path + "': truncated .npy header");
    NpyArray out;
    out.descr = header_field(h, "descr");
    if (out.descr == "|f2" || out.descr == "=f2") out.descr = "<f2";
    if (out.descr != "<f2" && out.descr != "<f4" && out.descr != "<f8")
        throw Error("'" + path + "': dtype '" + out.descr +
                    "' is not supported; use little-endian float16, float32 or float64");
    if (header_field(h, "fortran_order") != "False")
        throw Error("'" + path + "': Fortran-ordered arrays are not supported; save with numpy.ascontiguousarray");
    const std::string shape = header_field(h, "shape");
    if (shape.empty()) throw Error("'" + path + "': .npy header has no shape");
    std::vector<int64_t> dims;
    static const std::regex num("[0-9]+");
    for (auto it = std::sregex_iterator(shape.begin(), shape.end(), num); it != std::sregex_iterator(); ++it)
        dims.push_back(std::stoll(it->str()));
    if (dims.size() != 2 && dims.size() != 4)
        throw Error("'" + path + "': shape " + shape + " must be (N, d) or (B, H, N, d)");
    for (auto d : dims)
        if (d <= 0) throw Error("'" + path + "': shape " + shape + " has an empty dimension");
    out.four_d = dims.size() == 4;
    const int64_t B = out.four_d ? dims[0] : 1, H = out.four_d ? dims[1] : 1;
    const int64_t N = dims[dims.size() - 2], D = dims[dims.size() - 1];
    if (B * H * N * D > (int64_t{1} << 31)) throw Error("'" + path + "': array too large");
    out.tensor = TensorF(B, H, N, D);
    const size_t count = static_cast<size_t>(B * H * N * D);
    const size_t width = out.descr == "<f2" ? 2 : out.descr == "<f4" ? 4 : 8;
    std::vector<char> raw(count * width);
    if (!f.read(raw.data(), static_cast<std::streamsize>(raw.size())))
        throw Error("'" + path + "': data is shorter than its shape " + shape + " says");
    for (size_t i = 0; i < count; ++i) {
        const char* p = raw.data() + i * width;
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
            v = static_cast<float>(d);
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
    if (!f) throw Error("writing '" + path + "' failed (disk full?)");
}

}  // namespace sim
