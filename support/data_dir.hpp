#pragma once
// Where ccsim's data files (hardware catalog, model configs, calibration tables) live.

#include <filesystem>

namespace ccsim::support {

/// $CCSIM_DATA_DIR when set and non-empty, else the `scenarios/` directory this build was
/// configured with (CMake cache variable CCSIM_DATA_DIR).
std::filesystem::path data_dir();

}  // namespace ccsim::support
