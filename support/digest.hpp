#pragma once
// Content digests for provenance (the inputs a calibration was fitted from).

#include <string>
#include <string_view>

namespace ccsim::support {

/// SHA-256 of `data` as 64 lowercase hex digits (FIPS 180-4, computed by OpenSSL's EVP API).
/// Throws std::runtime_error if OpenSSL fails.
std::string sha256_hex(std::string_view data);

}  // namespace ccsim::support
