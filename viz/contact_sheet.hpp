// viz/contact_sheet.hpp — a lesson's steps on one picture, GL-free (unit-tested): each step's frame
// shrunk by a whole factor (the mean of each k x k block of pixels), placed in step order, `cols` a
// row, on a dark ground with a gap between them. `flashsim-app --tour --contact-sheet DIR` writes one
// a lesson.
#pragma once
#include <cstdint>
#include <vector>

namespace viz {

struct RgbImage {
    int w = 0, h = 0;
    std::vector<uint8_t> px;  // RGB, row by row from the top
};

// `im` shrunk k times each way (k >= 1; the last partial row and column of blocks dropped).
RgbImage shrink(const RgbImage& im, int k);

// The frames (all the same size) in rows of `cols`, `gap` pixels apart and around.
RgbImage contact_sheet(const std::vector<RgbImage>& frames, int cols, int gap);

}  // namespace viz
