// The enums' names (sim/enum_names.hpp): each value's name parses back to it, aliases parse, and
// anything else is refused; the names are the ones the CLI, the JSON and the lessons spell.
#include <doctest/doctest.h>

#include "sim/simulate.hpp"

using namespace sim;

namespace {
// Every value of E in its table: name_of gives its first row, and that name parses back to it.
template <typename E>
void check_round_trip() {
    for (const auto& row : EnumNames<E>::table) {
        CAPTURE(row.name);
        CHECK(parse_enum<E>(row.name) == row.value);
        CHECK(parse_enum<E>(name_of(row.value)) == row.value);
    }
}
}  // namespace

// The tables are constexpr: the names are known at compile time.
static_assert(name_of(Algo::flash2) == "flash2");
static_assert(parse_enum<Pass>("both") == Pass::both);
static_assert(name_of(Tensor::LSE) == "LSE");
static_assert(name_of(Tensor::count) == "?");

TEST_CASE("enum names: every value round-trips through its name") {
    check_round_trip<Algo>();
    check_round_trip<Pass>();
    check_round_trip<DType>();
    check_round_trip<Tensor>();
    check_round_trip<Level>();
    check_round_trip<EventKind>();
    check_round_trip<TimelineSegment::Kind>();
    CHECK(EnumNames<Tensor>::table.size() == static_cast<size_t>(kTensorCount));
}

TEST_CASE("enum names: the spellings users and files rely on") {
    CHECK(algo_name(Algo::standard) == "standard");
    CHECK(algo_name(Algo::flash1) == "flash1");
    CHECK(parse_algo("flash2") == Algo::flash2);
    CHECK(pass_name(Pass::backward) == "backward");
    CHECK(dtype_name(DType::bf16) == "bf16");
    // numpy's and PyTorch's spellings are accepted; the name printed is the short one
    CHECK(parse_dtype("float32") == DType::fp32);
    CHECK(parse_dtype("float16") == DType::fp16);
    CHECK(parse_dtype("half") == DType::fp16);
    CHECK(parse_dtype("bfloat16") == DType::bf16);
    CHECK(dtype_name(*parse_dtype("half")) == "fp16");
    const char* tensors[] = {"Q", "K", "V", "O", "S", "P", "m", "l", "LSE", "dO", "dQ", "dK", "dV", "dS", "dP", "D"};
    for (int i = 0; i < kTensorCount; ++i) CHECK(tensor_name(static_cast<Tensor>(i)) == tensors[i]);
    CHECK(level_name(Level::L2) == "L2");
    CHECK(event_kind_name(EventKind::rescale) == "rescale");
    CHECK(segment_kind_name(TimelineSegment::Kind::matmul) == "matmul");
}

TEST_CASE("enum names: anything else is refused") {
    CHECK_FALSE(parse_algo("Flash2").has_value());  // exact: the CLI lists the names
    CHECK_FALSE(parse_algo("").has_value());
    CHECK_FALSE(parse_pass("fwd").has_value());
    CHECK_FALSE(parse_dtype("fp4").has_value());
    CHECK_FALSE(parse_dtype("FP8").has_value());  // exact, like the others: fp8 (or e4m3) parses
    CHECK_FALSE(parse_enum<Tensor>("q").has_value());
    CHECK(tensor_name(Tensor::count) == "?");
}
