#pragma once
// A 64-bit mixing function for deterministic pseudo-random choices (ECMP flow hashes, test
// data). splitmix64: Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014; every input bit affects every output bit, so nearby keys spread evenly.

#include <cstdint>

namespace ccsim::support {

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace ccsim::support
