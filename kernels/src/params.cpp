#include "streamblur/kernels/params.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace streamblur {

int gaussian_radius(double sigma, int radius) {
  if (!(sigma >= kMinSigma && sigma <= kMaxSigma)) {
    std::ostringstream m;
    m << "gblur: sigma " << sigma << " is out of range [" << kMinSigma << ", " << kMaxSigma << "]";
    throw std::invalid_argument(m.str());
  }
  if (radius > kMaxGaussRadius) {
    std::ostringstream m;
    m << "gblur: radius " << radius << " is out of range [0, " << kMaxGaussRadius << "]";
    throw std::invalid_argument(m.str());
  }
  if (radius >= 0) return radius;
  return std::max(1, static_cast<int>(std::ceil(3.0 * sigma)));
}

std::vector<double> gaussian_weights(double sigma, int radius) {
  const int r = gaussian_radius(sigma, radius);
  std::vector<double> w(2 * r + 1);
  double sum = 0.0;
  for (int i = -r; i <= r; ++i) {
    w[i + r] = std::exp(-static_cast<double>(i) * i / (2.0 * sigma * sigma));
    sum += w[i + r];
  }
  for (double& v : w) v /= sum;
  return w;
}

std::vector<float> gaussian_weights_f(double sigma, int radius) {
  const std::vector<double> w = gaussian_weights(sigma, radius);
  return std::vector<float>(w.begin(), w.end());
}

void check_box_radius(int radius) {
  if (radius < 0 || radius > kMaxBoxRadius) {
    std::ostringstream m;
    m << "boxblur: radius " << radius << " is out of range [0, " << kMaxBoxRadius << "]";
    throw std::invalid_argument(m.str());
  }
}

}  // namespace streamblur
