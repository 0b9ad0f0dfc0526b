#pragma once
// NCCL's protocols, the way data moves over each hop of an algorithm. They change the wire
// bytes per data byte, the per-step latency and the pipeline chunk size (figures in the cost
// table, planner/tuning/cost_model.hpp), not the Schedule's structure.

#include <cstdint>
#include <optional>
#include <string_view>

namespace ccsim::planner {

/// NCCL's protocols: LL (8-byte stores, half of them flags), LL128 (128-byte lines with 8
/// flag bytes), Simple (bulk copies with fences).
enum class Protocol : std::uint8_t { LL, LL128, Simple };

/// "LL", "LL128", "Simple".
std::string_view to_string(Protocol p);
/// The protocol named `s`, case-insensitive as NCCL_PROTO is; nullopt for other text.
std::optional<Protocol> parse_protocol(std::string_view s);

}  // namespace ccsim::planner
