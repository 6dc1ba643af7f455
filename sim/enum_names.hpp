// sim/enum_names.hpp — one mechanism for the names of the simulator's enums (algorithm, pass,
// dtype, tensor, level, event kind, timeline segment kind): each enum has one table of
// {value, name} pairs, next to the enum, and name_of / parse_enum read it.
//
//   template <> struct EnumNames<Pass> {
//       static constexpr std::array<EnumName<Pass>, 3> table{{{Pass::forward, "forward"}, ...}};
//   };
//
// A value may appear more than once (aliases such as "half" for fp16): the first row is its name,
// and parse_enum accepts every row.
#pragma once
#include <array>
#include <optional>
#include <string_view>

namespace sim {

template <typename E>
struct EnumName {
    E value;
    std::string_view name;
};

// Specialised next to each enum with a `table`.
template <typename E>
struct EnumNames;

// The value's name (its first row in the table), or "?" for a value the table does not list.
template <typename E>
constexpr std::string_view name_of(E value) {
    for (const auto& row : EnumNames<E>::table)
        if (row.value == value) return row.name;
    return "?";
}

// The value a name stands for (exact, case-sensitive match), or nullopt.
template <typename E>
constexpr std::optional<E> parse_enum(std::string_view name) {
    for (const auto& row : EnumNames<E>::table)
        if (row.name == name) return row.value;
    return std::nullopt;
}

}  // namespace sim
