#pragma once
// Filter parameters shared by the reference, CPU and CUDA implementations.
#include <vector>

namespace streamblur {

// The accepted ranges of sigma and of the Gaussian and box radii.
inline constexpr double kMinSigma = 0.1;
inline constexpr double kMaxSigma = 100.0;
inline constexpr int kMaxGaussRadius = 1024;
inline constexpr int kMaxBoxRadius = 4096;

// Gaussian radius: `radius` when >= 0, else ceil(3 sigma) (at least 1).
// Throws std::invalid_argument for sigma or radius out of range.
int gaussian_radius(double sigma, int radius = -1);

// Sampled kernel w(i) = exp(-i^2 / (2 sigma^2)), i in [-r, r], normalised to sum 1.
std::vector<double> gaussian_weights(double sigma, int radius = -1);
std::vector<float> gaussian_weights_f(double sigma, int radius = -1);

// Throws std::invalid_argument for a box radius out of [0, kMaxBoxRadius].
void check_box_radius(int radius);

}  // namespace streamblur
