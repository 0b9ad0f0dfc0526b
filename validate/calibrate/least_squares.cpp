#include "validate/calibrate/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ccsim::validate {

LeastSquaresResult fit_bounded_least_squares(const std::vector<BoundedParameter>& parameters, const ResidualFunction& residuals,
                                             int max_iterations) {
  const auto n = static_cast<Eigen::Index>(parameters.size());
  Eigen::VectorXd x(n), lo(n), hi(n), scale(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const BoundedParameter& p = parameters[static_cast<std::size_t>(i)];
    if (!(p.scale > 0) || p.value < p.lower || p.value > p.upper) {
      throw std::invalid_argument("fit_bounded_least_squares: " + p.name + " starts outside its bounds or has no scale");
    }
    scale(i) = p.scale;
    x(i) = p.value / p.scale;
    lo(i) = p.lower / p.scale;
    hi(i) = p.upper / p.scale;
  }
  const auto values = [&](const Eigen::VectorXd& v) {
    std::vector<double> out(static_cast<std::size_t>(n));
    for (Eigen::Index i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = v(i) * scale(i);
    return out;
  };
  const auto eval = [&](const Eigen::VectorXd& v) {
    Eigen::VectorXd r = residuals(values(v));
    if (!r.allFinite()) throw std::invalid_argument("fit_bounded_least_squares: a residual is not finite");
    return r;
  };
  Eigen::VectorXd r = eval(x);
  double cost = 0.5 * r.squaredNorm();
  double lambda = 1e-3;
  LeastSquaresResult out;
  while (out.iterations < max_iterations) {
    // Forward differences, stepping away from the nearer bound.
    Eigen::MatrixXd J(r.size(), n);
    for (Eigen::Index i = 0; i < n; ++i) {
      double h = 1e-6 * std::max(1.0, std::abs(x(i)));
      if (x(i) + h > hi(i)) h = -h;
      Eigen::VectorXd xh = x;
      xh(i) += h;
      J.col(i) = (eval(xh) - r) / h;
    }
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * r;
    // Converged: the projected gradient vanishes (no descent direction inside the box).
    Eigen::VectorXd projected = (x - g).cwiseMax(lo).cwiseMin(hi) - x;
    if (projected.norm() < 1e-12 * (1.0 + x.norm()) || cost < 1e-30) {
      out.converged = true;
      break;
    }
    bool accepted = false;
    while (!accepted && out.iterations < max_iterations && lambda < 1e12) {
      ++out.iterations;
      // Unknowns held at a bound by the gradient are left out of the step (active set), so
      // that projecting the others does not zig-zag along the bound.
      Eigen::MatrixXd damped = A;
      Eigen::VectorXd rhs = -g;
      for (Eigen::Index i = 0; i < n; ++i) {
        damped(i, i) += lambda * std::max(A(i, i), 1e-12);
        if ((x(i) <= lo(i) && g(i) > 0) || (x(i) >= hi(i) && g(i) < 0)) {
          damped.row(i).setZero();
          damped.col(i).setZero();
          damped(i, i) = 1.0;
          rhs(i) = 0.0;
        }
      }
      const Eigen::VectorXd step = damped.ldlt().solve(rhs);
      const Eigen::VectorXd trial = (x + step).cwiseMax(lo).cwiseMin(hi);
      const Eigen::VectorXd rt = eval(trial);
      const double trial_cost = 0.5 * rt.squaredNorm();
      if (trial_cost < cost) {
        const double gain = (cost - trial_cost) / std::max(cost, 1e-300);
        const double moved = (trial - x).norm();
        x = trial;
        r = rt;
        cost = trial_cost;
        lambda = std::max(lambda / 3.0, 1e-9);
        accepted = true;
        if (gain < 1e-10 || moved < 1e-9 * (1.0 + x.norm())) out.converged = true;
      } else {
        lambda *= 4.0;
      }
    }
    if (!accepted) out.converged = true;  // no step reduces the cost: a (local) minimum of the box
    if (out.converged) break;
  }
  out.values = values(x);
  out.cost = cost;
  return out;
}

}  // namespace ccsim::validate
