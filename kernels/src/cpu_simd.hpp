#pragma once
// Inner loops of the CPU blurs in portable SIMD (cpu_simd.cpp, Google
// Highway, chosen at run time for the machine). Private to kernels/.
#include <cstdint>
#include <vector>

namespace streamblur::cpu::simd {

// Horizontal Gaussian of one padded float row (r*C samples of padding each side);
// w[0..r]: the centre weight, then the weights at distance 1..r.
void gauss_row(const float* in, float* out, int S, int C, const float* w, int r);
// Vertical Gaussian: rows[0..2r] are the input rows y-r..y+r; rounded half up, clamped.
void gauss_columns(const float* const* rows, uint8_t* out, int S, const float* w, int r);
void gauss_columns(const float* const* rows, uint16_t* out, int S, const float* w, int r);
void to_float(const uint8_t* in, float* out, int S);
void to_float(const uint16_t* in, float* out, int S);
// Box: samples to uint32; horizontal sums of 2r+1 samples by direct addition
// (padded like gauss_row); sum += add - sub; out = floor((sum + n/2) / n) (sums + n/2 below 2^31).
void to_u32(const uint8_t* in, uint32_t* out, int S);
void to_u32(const uint16_t* in, uint32_t* out, int S);
void box_row_direct(const uint32_t* in, uint32_t* out, int S, int C, int r);
void slide_columns(uint32_t* sum, const uint32_t* add, const uint32_t* sub, int S);
void divide_columns(const uint32_t* sum, uint8_t* out, int S, uint32_t n);
void divide_columns(const uint32_t* sum, uint16_t* out, int S, uint32_t n);

// The instruction set the dispatch chooses now ("AVX2", "AVX3", "SSE4", ...),
// every one this build contains that the machine runs, and, for tests, a way
// to restrict the choice to one (0: back to the best).
const char* target_name();
std::vector<int64_t> targets();
void force_target(int64_t target);

}  // namespace streamblur::cpu::simd
