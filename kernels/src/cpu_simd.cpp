// The CPU blurs' row kernels in portable SIMD (Google Highway): compiled for
// every x86/ARM target Highway knows (SSE4, AVX2, AVX-512, NEON, ...) and
// chosen at run time for the machine (HWY_DYNAMIC_DISPATCH). cpu_blur.cpp
// keeps the loops over rows and the padding; these are the inner loops.
//
// Exactness is as before: the Gaussian sums in float with the symmetric
// weights folded (w_k (a + b)), rounds half up and clamps; the box divides
// exact integer window sums by the window size with a float reciprocal
// corrected by one integer step, which gives the exact floor((s + n/2) / n).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu_simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace streamblur::cpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out[s] = w[0] in[s] + sum_{k=1..r} w[k] (in[s + kC] + in[s - kC]), s in [0, S);
// `in` is padded by r*C samples on both sides.
void GaussRow(const float* HWY_RESTRICT in, float* HWY_RESTRICT out, int S, int C, const float* HWY_RESTRICT w,
              int r) {
  const hn::ScalableTag<float> d;
  const int N = static_cast<int>(hn::Lanes(d));
  int s = 0;
  for (; s + N <= S; s += N) {
    auto acc = hn::Mul(hn::Set(d, w[0]), hn::LoadU(d, in + s));
    for (int k = 1; k <= r; ++k)
      acc = hn::MulAdd(hn::Set(d, w[k]), hn::Add(hn::LoadU(d, in + s + k * C), hn::LoadU(d, in + s - k * C)), acc);
    hn::StoreU(acc, d, out + s);
  }
  for (; s < S; ++s) {
    float acc = w[0] * in[s];
    for (int k = 1; k <= r; ++k) acc += w[k] * (in[s + k * C] + in[s - k * C]);
    out[s] = acc;
  }
}

template <class T>
T RoundClamp(float v) {
  return static_cast<T>(std::clamp(std::floor(v + 0.5f), 0.0f, static_cast<float>(static_cast<T>(~T{0}))));
}

// out[s] = round(w[0] rows[r][s] + sum_k w[k] (rows[r+k][s] + rows[r-k][s])).
// Four vectors at a time, so each row's loads feed four accumulators.
template <class T>
void GaussColumns(const float* const* HWY_RESTRICT rows, T* HWY_RESTRICT out, int S, const float* HWY_RESTRICT w,
                  int r) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<int32_t, decltype(d)> di;
  const hn::Rebind<T, decltype(d)> dt;
  const int N = static_cast<int>(hn::Lanes(d));
  const auto half = hn::Set(d, 0.5f);
  const float* mid = rows[r];
  auto finish = [&](decltype(hn::Zero(d)) acc, int at) {
    // Floor(v + 0.5), then a saturating narrowing to T (clamps to [0, max]).
    hn::StoreU(hn::DemoteTo(dt, hn::ConvertTo(di, hn::Floor(hn::Add(acc, half)))), dt, out + at);
  };
  int s = 0;
  for (; s + 4 * N <= S; s += 4 * N) {
    const auto w0 = hn::Set(d, w[0]);
    auto a0 = hn::Mul(w0, hn::LoadU(d, mid + s)), a1 = hn::Mul(w0, hn::LoadU(d, mid + s + N));
    auto a2 = hn::Mul(w0, hn::LoadU(d, mid + s + 2 * N)), a3 = hn::Mul(w0, hn::LoadU(d, mid + s + 3 * N));
    for (int k = 1; k <= r; ++k) {
      const float* lo = rows[r - k] + s;
      const float* hi = rows[r + k] + s;
      const auto wk = hn::Set(d, w[k]);
      a0 = hn::MulAdd(wk, hn::Add(hn::LoadU(d, lo), hn::LoadU(d, hi)), a0);
      a1 = hn::MulAdd(wk, hn::Add(hn::LoadU(d, lo + N), hn::LoadU(d, hi + N)), a1);
      a2 = hn::MulAdd(wk, hn::Add(hn::LoadU(d, lo + 2 * N), hn::LoadU(d, hi + 2 * N)), a2);
      a3 = hn::MulAdd(wk, hn::Add(hn::LoadU(d, lo + 3 * N), hn::LoadU(d, hi + 3 * N)), a3);
    }
    finish(a0, s);
    finish(a1, s + N);
    finish(a2, s + 2 * N);
    finish(a3, s + 3 * N);
  }
  for (; s + N <= S; s += N) {
    auto a = hn::Mul(hn::Set(d, w[0]), hn::LoadU(d, mid + s));
    for (int k = 1; k <= r; ++k)
      a = hn::MulAdd(hn::Set(d, w[k]), hn::Add(hn::LoadU(d, rows[r - k] + s), hn::LoadU(d, rows[r + k] + s)), a);
    finish(a, s);
  }
  for (; s < S; ++s) {
    float a = w[0] * mid[s];
    for (int k = 1; k <= r; ++k) a += w[k] * (rows[r - k][s] + rows[r + k][s]);
    out[s] = RoundClamp<T>(a);
  }
}

void GaussColumns8(const float* const* rows, uint8_t* out, int S, const float* w, int r) {
  GaussColumns<uint8_t>(rows, out, S, w, r);
}
void GaussColumns16(const float* const* rows, uint16_t* out, int S, const float* w, int r) {
  GaussColumns<uint16_t>(rows, out, S, w, r);
}

// A row of samples to floats: out[s] = in[s].
template <class T>
void ToFloat(const T* HWY_RESTRICT in, float* HWY_RESTRICT out, int S) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<int32_t, decltype(d)> di;
  const hn::Rebind<T, decltype(d)> dt;
  const int N = static_cast<int>(hn::Lanes(d));
  int s = 0;
  for (; s + N <= S; s += N) hn::StoreU(hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(dt, in + s))), d, out + s);
  for (; s < S; ++s) out[s] = static_cast<float>(in[s]);
}
void ToFloat8(const uint8_t* in, float* out, int S) { ToFloat<uint8_t>(in, out, S); }
void ToFloat16(const uint16_t* in, float* out, int S) { ToFloat<uint16_t>(in, out, S); }

// A row of samples to uint32: out[s] = in[s].
template <class T>
void ToU32(const T* HWY_RESTRICT in, uint32_t* HWY_RESTRICT out, int S) {
  const hn::ScalableTag<uint32_t> d;
  const hn::Rebind<T, decltype(d)> dt;
  const int N = static_cast<int>(hn::Lanes(d));
  int s = 0;
  for (; s + N <= S; s += N) hn::StoreU(hn::PromoteTo(d, hn::LoadU(dt, in + s)), d, out + s);
  for (; s < S; ++s) out[s] = in[s];
}
void ToU32_8(const uint8_t* in, uint32_t* out, int S) { ToU32<uint8_t>(in, out, S); }
void ToU32_16(const uint16_t* in, uint32_t* out, int S) { ToU32<uint16_t>(in, out, S); }

// Horizontal box sums by direct addition (small radii): out[s] = sum_{k=-r..r} in[s + kC];
// `in` is padded by r*C samples on both sides.
void BoxRowDirect(const uint32_t* HWY_RESTRICT in, uint32_t* HWY_RESTRICT out, int S, int C, int r) {
  const hn::ScalableTag<uint32_t> d;
  const int N = static_cast<int>(hn::Lanes(d));
  int s = 0;
  for (; s + N <= S; s += N) {
    auto acc = hn::LoadU(d, in + s);
    for (int k = 1; k <= r; ++k) acc = hn::Add(acc, hn::Add(hn::LoadU(d, in + s + k * C), hn::LoadU(d, in + s - k * C)));
    hn::StoreU(acc, d, out + s);
  }
  for (; s < S; ++s) {
    uint32_t acc = in[s];
    for (int k = 1; k <= r; ++k) acc += in[s + k * C] + in[s - k * C];
    out[s] = acc;
  }
}

// sum[s] += add[s] - sub[s] (uint32, wrapping: the true sums fit).
void SlideColumns(uint32_t* HWY_RESTRICT sum, const uint32_t* HWY_RESTRICT add, const uint32_t* HWY_RESTRICT sub,
                  int S) {
  const hn::ScalableTag<uint32_t> d;
  const int N = static_cast<int>(hn::Lanes(d));
  int s = 0;
  for (; s + N <= S; s += N)
    hn::StoreU(hn::Sub(hn::Add(hn::LoadU(d, sum + s), hn::LoadU(d, add + s)), hn::LoadU(d, sub + s)), d, sum + s);
  for (; s < S; ++s) sum[s] += add[s] - sub[s];
}

// out[s] = floor((sum[s] + n/2) / n), exactly, for sums and n below 2^31.
// q from a float reciprocal is within one of the truth (float keeps 24 bits,
// q < 2^16); one integer step corrects it.
template <class T>
void DivideColumns(const uint32_t* HWY_RESTRICT sum, T* HWY_RESTRICT out, int S, uint32_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<T, decltype(df)> dt;
  const int N = static_cast<int>(hn::Lanes(df));
  const auto inv = hn::Set(df, 1.0f / static_cast<float>(n));
  const auto vn = hn::Set(di, static_cast<int32_t>(n)), half = hn::Set(di, static_cast<int32_t>(n / 2));
  const auto one = hn::Set(di, 1), zero = hn::Zero(di), last = hn::Set(di, static_cast<int32_t>(n - 1));
  int s = 0;
  for (; s + N <= S; s += N) {
    const auto x = hn::Add(hn::BitCast(di, hn::LoadU(hn::Rebind<uint32_t, decltype(df)>(), sum + s)), half);
    auto q = hn::ConvertTo(di, hn::Floor(hn::Mul(hn::ConvertTo(df, x), inv)));
    const auto rem = hn::Sub(x, hn::Mul(q, vn));
    q = hn::IfThenElse(hn::Lt(rem, zero), hn::Sub(q, one), q);
    q = hn::IfThenElse(hn::Gt(rem, last), hn::Add(q, one), q);  // rem >= n
    hn::StoreU(hn::DemoteTo(dt, q), dt, out + s);
  }
  for (; s < S; ++s) out[s] = static_cast<T>((sum[s] + n / 2) / n);
}
void DivideColumns8(const uint32_t* sum, uint8_t* out, int S, uint32_t n) { DivideColumns<uint8_t>(sum, out, S, n); }
void DivideColumns16(const uint32_t* sum, uint16_t* out, int S, uint32_t n) {
  DivideColumns<uint16_t>(sum, out, S, n);
}

const char* Target() { return hwy::TargetName(HWY_TARGET); }

}  // namespace streamblur::cpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace streamblur::cpu::simd {

HWY_EXPORT(GaussRow);
HWY_EXPORT(GaussColumns8);
HWY_EXPORT(GaussColumns16);
HWY_EXPORT(ToFloat8);
HWY_EXPORT(ToFloat16);
HWY_EXPORT(SlideColumns);
HWY_EXPORT(ToU32_8);
HWY_EXPORT(ToU32_16);
HWY_EXPORT(BoxRowDirect);
HWY_EXPORT(DivideColumns8);
HWY_EXPORT(DivideColumns16);
HWY_EXPORT(Target);

void gauss_row(const float* in, float* out, int S, int C, const float* w, int r) {
  HWY_DYNAMIC_DISPATCH(GaussRow)(in, out, S, C, w, r);
}
void gauss_columns(const float* const* rows, uint8_t* out, int S, const float* w, int r) {
  HWY_DYNAMIC_DISPATCH(GaussColumns8)(rows, out, S, w, r);
}
void gauss_columns(const float* const* rows, uint16_t* out, int S, const float* w, int r) {
  HWY_DYNAMIC_DISPATCH(GaussColumns16)(rows, out, S, w, r);
}
void to_float(const uint8_t* in, float* out, int S) { HWY_DYNAMIC_DISPATCH(ToFloat8)(in, out, S); }
void to_float(const uint16_t* in, float* out, int S) { HWY_DYNAMIC_DISPATCH(ToFloat16)(in, out, S); }
void to_u32(const uint8_t* in, uint32_t* out, int S) { HWY_DYNAMIC_DISPATCH(ToU32_8)(in, out, S); }
void to_u32(const uint16_t* in, uint32_t* out, int S) { HWY_DYNAMIC_DISPATCH(ToU32_16)(in, out, S); }
void box_row_direct(const uint32_t* in, uint32_t* out, int S, int C, int r) {
  HWY_DYNAMIC_DISPATCH(BoxRowDirect)(in, out, S, C, r);
}
void slide_columns(uint32_t* sum, const uint32_t* add, const uint32_t* sub, int S) {
  HWY_DYNAMIC_DISPATCH(SlideColumns)(sum, add, sub, S);
}
void divide_columns(const uint32_t* sum, uint8_t* out, int S, uint32_t n) {
  HWY_DYNAMIC_DISPATCH(DivideColumns8)(sum, out, S, n);
}
void divide_columns(const uint32_t* sum, uint16_t* out, int S, uint32_t n) {
  HWY_DYNAMIC_DISPATCH(DivideColumns16)(sum, out, S, n);
}
const char* target_name() { return HWY_DYNAMIC_DISPATCH(Target)(); }

std::vector<int64_t> targets() { return hwy::SupportedAndGeneratedTargets(); }
void force_target(int64_t target) {
  hwy::SetSupportedTargetsForTest(target);  // 0: back to what the machine supports
}

}  // namespace streamblur::cpu::simd
#endif  // HWY_ONCE
