// The contact sheet of a lesson's steps (viz/contact_sheet.hpp): shrinking averages each block of
// pixels, and the frames land in step order, three a row, with the gap around them.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "viz/contact_sheet.hpp"

using namespace viz;

namespace {
RgbImage flat(int w, int h, uint8_t v) {
    return RgbImage{w, h, std::vector<uint8_t>(static_cast<std::size_t>(w) * h * 3, v)};
}
uint8_t at(const RgbImage& im, int x, int y, int c = 0) {
    return im.px[(static_cast<std::size_t>(y) * im.w + x) * 3 + c];
}
}  // namespace

TEST_CASE("shrink: each k x k block becomes its mean, a partial block at the edge is dropped") {
    // 5 x 2 pixels, red channel 0..9 row by row; k = 2 keeps the blocks at x 0-1 and 2-3
    RgbImage im = flat(5, 2, 0);
    for (int i = 0; i < 10; ++i) im.px[static_cast<std::size_t>(i) * 3] = static_cast<uint8_t>(i * 10);
    const RgbImage s = shrink(im, 2);
    CHECK(s.w == 2);
    CHECK(s.h == 1);
    CHECK(at(s, 0, 0) == (0 + 10 + 50 + 60) / 4);   // 30
    CHECK(at(s, 1, 0) == (20 + 30 + 70 + 80) / 4);  // 50
    CHECK(at(s, 0, 0, 1) == 0);
    CHECK(shrink(im, 1).px == im.px);  // k = 1: the frame as it is
}

TEST_CASE("contact sheet: four frames in rows of three, in order, the gap around each") {
    std::vector<RgbImage> frames;
    for (int i = 0; i < 4; ++i) frames.push_back(flat(4, 3, static_cast<uint8_t>(100 + i)));
    const RgbImage sheet = contact_sheet(frames, 3, 2);
    CHECK(sheet.w == 3 * 4 + 4 * 2);            // 20
    CHECK(sheet.h == 2 * 3 + 3 * 2);            // 12
    CHECK(at(sheet, 2, 2) == 100);              // frame 1, top left
    CHECK(at(sheet, 2 + 6 * 2, 2) == 102);      // frame 3 at x = 2 + 2 (4 + 2)
    CHECK(at(sheet, 2, 2 + 3 + 2) == 103);      // frame 4 starts the second row
    CHECK(at(sheet, 8, 7) == at(sheet, 0, 0));  // the second row has one frame: ground beside it
    CHECK(at(sheet, 0, 0) == at(sheet, 1, 1));  // the ground
    CHECK(contact_sheet({}, 3, 2).px.empty());
}
