#pragma once
// Bound-constrained nonlinear least squares: a projected Levenberg-Marquardt iteration with a
// forward-difference Jacobian (K. Levenberg 1944; D. Marquardt 1963, with Marquardt's scaling of
// the damping by diag(JᵀJ); bounds enforced by projecting every trial point onto the box, as in
// Kanzow, Yamashita, Fukushima, "Levenberg-Marquardt methods with strong local convergence
// properties for solving nonlinear equations with convex constraints", 2004). Used by the
// compute calibration, whose residuals come from running the simulator: the model is the
// simulation, so derivatives are finite differences.

#include <functional>
#include <string>
#include <vector>

#include <Eigen/Dense>

namespace ccsim::validate {

/// One unknown: its starting value, bounds (lower ≤ value ≤ upper) and a typical magnitude
/// `scale` (> 0) so that the iteration works on value / scale, of order 1 for every unknown.
struct BoundedParameter {
  std::string name;
  double value = 0;
  double lower = 0;
  double upper = 0;
  double scale = 1;
};

/// residuals(values) → one residual per observation (dimensionless, e.g. relative errors).
using ResidualFunction = std::function<Eigen::VectorXd(const std::vector<double>&)>;

struct LeastSquaresResult {
  std::vector<double> values;  ///< the fitted values, inside their bounds
  double cost = 0;             ///< ½·Σ residual² at `values`
  int iterations = 0;          ///< accepted and rejected steps
  bool converged = false;      ///< false: stopped at the iteration cap
};

/// Minimizes ½·‖residuals(values)‖² over the box. Throws std::invalid_argument when a start
/// value lies outside its bounds or a scale is not positive, or when a residual is not finite.
LeastSquaresResult fit_bounded_least_squares(const std::vector<BoundedParameter>& parameters, const ResidualFunction& residuals,
                                             int max_iterations = 200);

}  // namespace ccsim::validate
