// The HPS ciphertext multiply, its scale-and-round kernels (hps.h) and relinearization.
// The numbered steps match runtime/bfv/README.md §Multiply:
//   (1) inverse NTT of the four input polynomials over Q (copies; the evaluation forms are
//       kept for the Q limbs of the tensor);
//   (2) exact extension of each from Q to P_mult (centred representative, HPS Lemma 2) and
//       forward NTT over P_mult;
//   (3) tensor product over Q u P_mult in evaluation form:
//       t0 = a0 b0, t1 = a0 b1 + a1 b0, t2 = a1 b1;
//   (4) inverse NTT of t0, t1, t2 over Q u P_mult;
//   (5) scale and round: y_j = round(t / Q * t_j) computed in P_mult (HPS §4.3);
//   (6) exact conversion of y_j from P_mult to Q (centred, HPS Lemma 2);
//   (7) forward NTT of y0, y1 over Q (y2 too, unless relinearization follows at once; with
//       relinearization the NTT of y0, y1 is the key switch's ModDown's: Output::coef_add).
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bfv/hps.h"
#include "bfv/hps_kernels.h"
#include "bfv/keyswitch.h"
#include "bfv/scheme.h"
#include "math/cpu_features.h"
#include "math/parallel.h"
#include "math/poly_kernels.h"

namespace hec::bfv {

using math::PolyForm;
using math::RnsPoly;
using math::u128;

namespace {

// Block of coefficients processed together by the scaling kernels (per thread).
constexpr std::size_t kBlock = 512;

struct MultiplyScratch {
  std::array<math::AlignedU64Vector, 4> ext;
  std::array<math::AlignedU64Vector, 3> prod;
  math::AlignedU64Vector coeff;
  void reserve(std::size_t ext_words, std::size_t coeff_words) {
    for (auto& v : ext) v.resize(ext_words);
    for (auto& v : prod) v.resize(ext_words);
    coeff.resize(coeff_words);
  }
};

}  // namespace

void hps_scale_round_to_plain(const BfvContext& ctx, const u64* x_q, u64* out) {
  hps_scale_round_to_plain(ctx, ctx.q_size(), x_q, out);
}

void hps_scale_round_to_plain(const BfvContext& ctx, std::size_t limbs, const u64* x_q, u64* out) {
  const BfvLevel& lv = ctx.level(limbs);
  const std::size_t k = limbs, n = ctx.ring_dim();
  const math::Modulus& t = ctx.plain();
  const auto& a_plain = lv.a_plain;
  for (std::size_t c = 0; c < n; ++c) {
    u128 acc = 0;
    double frac = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const u64 q = lv.q_base[i].value();
      const u64 x = x_q[i * n + c];
      u64 quo = static_cast<u64>((static_cast<u128>(x) * lv.scale_r_shoup[i]) >> 64);
      u64 rem = x * lv.scale_r[i] - quo * q;
      if (rem >= q) {
        rem -= q;
        ++quo;
      }
      acc += static_cast<u128>(x) * a_plain[i] + quo;
      frac += static_cast<double>(rem) * lv.inv_q_double[i];
    }
    acc += static_cast<u64>(frac + 0.5);  // frac >= 0: rounding half up
    out[c] = math::barrett_reduce_128(acc, t);
  }
}

void hps_scale_round_to_p_mult(const BfvContext& ctx, const u64* x_q, const u64* x_p, u64* out_p) {
  const std::size_t k = ctx.q_size(), l = ctx.p_mult_size(), n = ctx.ring_dim();
  const auto& a_mult = ctx.a_mult();
  const auto& beta = ctx.beta_mult();
  constexpr std::size_t kScaleBlock = 128;
  const std::size_t blocks = (n + kScaleBlock - 1) / kScaleBlock;
  // The AVX-512 kernel (bit-identical; the scalar loop was about a tenth of the multiply's
  // time): for P_mult primes below 2^50 (always, from BfvParams::generate) and k <= 15.
  bool vector = math::active_kernel_path() == math::KernelPath::kAvx512Ifma && k <= 15;
  for (std::size_t j = 0; j < l; ++j) {
    vector = vector && ctx.p_mult_base()[j].value() < (u64{1} << math::kIfmaMaxModulusBits);
  }
  if (vector) {
    std::vector<u64> q(k), r(k), rs(k), p(l), a52(l * k);
    std::vector<double> inv(k);
    for (std::size_t i = 0; i < k; ++i) {
      q[i] = ctx.q_base()[i].value();
      r[i] = ctx.scale_r(i);
      rs[i] = ctx.scale_r_shoup(i);
      inv[i] = ctx.inv_q_double(i);
    }
    // 2^52 a_ji mod p_j: k l divisions a call, negligible next to the kernel.
    for (std::size_t j = 0; j < l; ++j) {
      p[j] = ctx.p_mult_base()[j].value();
      for (std::size_t i = 0; i < k; ++i) {
        a52[j * k + i] = static_cast<u64>((static_cast<u128>(a_mult[j * k + i]) << 52) % p[j]);
      }
    }
    detail::ScaleToPMultTables tables;
    tables.k = k;
    tables.l = l;
    tables.q = q.data();
    tables.r = r.data();
    tables.r_shoup = rs.data();
    tables.inv_q = inv.data();
    tables.p = p.data();
    tables.a = a_mult.data();
    tables.a52 = a52.data();
    tables.beta = beta.data();
    math::parallel_for(blocks, [&](std::size_t blk) {
      const std::size_t c0 = blk * kScaleBlock, len = std::min(n, c0 + kScaleBlock) - c0;
      detail::scale_round_to_p_mult_avx512(tables, x_q, x_p, out_p, n, c0, len);
    });
    return;
  }
  math::parallel_for(blocks, [&](std::size_t blk) {
    const std::size_t c0 = blk * kScaleBlock, len = std::min(n, c0 + kScaleBlock) - c0;
    // The block's Q residues, copied contiguously: limbs N words apart map to the same
    // cache sets, and more than 8 of them would evict each other in the loop over j.
    thread_local std::vector<u64> xb;
    xb.resize(k * kScaleBlock);
    // Integer part sum_i quo_i + round(sum_i rem_i / q_i), shared by every target prime.
    u64 base_lo[kScaleBlock], base_hi[kScaleBlock];
    double frac[kScaleBlock];
    for (std::size_t c = 0; c < len; ++c) {
      base_lo[c] = 0;
      base_hi[c] = 0;
      frac[c] = 0;
    }
    for (std::size_t i = 0; i < k; ++i) {
      const u64 q = ctx.q_base()[i].value(), r = ctx.scale_r(i), rs = ctx.scale_r_shoup(i);
      const double inv = ctx.inv_q_double(i);
      const u64* xi = x_q + i * n + c0;
      u64* xbi = xb.data() + i * kScaleBlock;
      for (std::size_t c = 0; c < len; ++c) {
        const u64 x = xi[c];
        xbi[c] = x;
        u64 quo = static_cast<u64>((static_cast<u128>(x) * rs) >> 64);
        u64 rem = x * r - quo * q;
        const u64 fix = rem >= q;
        rem -= fix * q;
        quo += fix;
        const u64 lo = base_lo[c] + quo;
        base_hi[c] += lo < quo;
        base_lo[c] = lo;
        frac[c] += static_cast<double>(rem) * inv;
      }
    }
    for (std::size_t c = 0; c < len; ++c) {
      const u64 rnd = static_cast<u64>(frac[c] + 0.5);  // frac >= 0
      const u64 lo = base_lo[c] + rnd;
      base_hi[c] += lo < rnd;
      base_lo[c] = lo;
    }
    for (std::size_t j = 0; j < l; ++j) {
      const math::Modulus& pj = ctx.p_mult_base()[j];
      const u64* aj = &a_mult[j * k];
      const u64 bj = beta[j];
      const u64* xp = x_p + j * n + c0;
      u64* op = out_p + j * n + c0;
      for (std::size_t c = 0; c < len; ++c) {
        u128 acc = (static_cast<u128>(base_hi[c]) << 64) | base_lo[c];
        acc += static_cast<u128>(xp[c]) * bj;
        const u64* xc = xb.data() + c;
        for (std::size_t i = 0; i < k; ++i) acc += static_cast<u128>(xc[i * kScaleBlock]) * aj[i];
        op[c] = math::barrett_reduce_128(acc, pj);
      }
    }
  });
}

void hps_extend_q_to_p_mult(const BfvContext& ctx, const u64* x_q, u64* out_p) {
  ctx.q_to_p_mult().convert(x_q, out_p, ctx.ring_dim());
}

void hps_convert_p_mult_to_q(const BfvContext& ctx, const u64* x_p, u64* out_q) {
  ctx.p_mult_to_q().convert(x_p, out_q, ctx.ring_dim());
}

BlockedBaseConverter::BlockedBaseConverter(const math::RnsBase& from, const math::RnsBase& to)
    : k_(from.size()), l_(to.size()), from_(from.moduli()), to_(to.moduli()), vector_(from, to) {
  for (std::size_t i = 0; i < k_; ++i) {
    q_hat_inv_.push_back(from.q_hat_inv_mod_q(i));
    q_hat_inv_shoup_.push_back(from.q_hat_inv_mod_q_shoup(i));
    inv_q_.push_back(1.0 / static_cast<double>(from[i].value()));
  }
  for (std::size_t j = 0; j < l_; ++j) {
    const math::Modulus& pj = to_[j];
    for (std::size_t i = 0; i < k_; ++i) {
      u64 r = 0;  // (Q / q_i) mod p_j from its words
      const auto& words = from.q_hat(i);
      const u64 two64 = static_cast<u64>((static_cast<u128>(1) << 64) % pj.value());
      for (std::size_t w = words.size(); w-- > 0;) {
        r = math::add_mod(math::mul_mod(r, two64, pj), words[w] % pj.value(), pj.value());
      }
      q_hat_mod_p_.push_back(r);
    }
    u64 q_mod = 0;
    const auto& words = from.product();
    const u64 two64 = static_cast<u64>((static_cast<u128>(1) << 64) % pj.value());
    for (std::size_t w = words.size(); w-- > 0;) {
      q_mod = math::add_mod(math::mul_mod(q_mod, two64, pj), words[w] % pj.value(), pj.value());
    }
    for (std::size_t v = 0; v <= k_; ++v) {
      neg_vq_.push_back(math::negate_mod(math::mul_mod(v % pj.value(), q_mod, pj), pj.value()));
    }
  }
}

void BlockedBaseConverter::run(const u64* in, u64* out, std::size_t n, bool exact) const {
  // The scalar loop below does k * l 128-bit multiply-adds per coefficient; the vector kernels
  // do the same sums eight coefficients at a time (measured: the conversions were a quarter
  // of the multiply's time at N = 2^14, 4 limbs).
  if (math::active_kernel_path() == math::KernelPath::kAvx512Ifma) {
    exact ? vector_.convert_exact(in, out, n) : vector_.convert_approx(in, out, n);
    return;
  }
  constexpr std::size_t kConvBlock = 64;
  const std::size_t blocks = (n + kConvBlock - 1) / kConvBlock;
  math::parallel_for(blocks, [&](std::size_t blk) {
    const std::size_t c0 = blk * kConvBlock, len = std::min(n, c0 + kConvBlock) - c0;
    thread_local std::vector<u64> y;
    y.resize(k_ * kConvBlock);
    double s[kConvBlock];
    std::uint32_t v[kConvBlock];
    for (std::size_t c = 0; c < len; ++c) s[c] = 0;
    // Step (1): y_i = [x_i (Q/q_i)^{-1}]_{q_i}; s = sum_i y_i / q_i.
    for (std::size_t i = 0; i < k_; ++i) {
      const u64 q = from_[i].value(), w = q_hat_inv_[i], ws = q_hat_inv_shoup_[i];
      const double inv = inv_q_[i];
      const u64* xi = in + i * n + c0;
      u64* yi = y.data() + i * kConvBlock;
      for (std::size_t c = 0; c < len; ++c) {
        yi[c] = math::mul_shoup(xi[c], w, ws, q);
        s[c] += static_cast<double>(yi[c]) * inv;
      }
    }
    // Step (2): v = round(s) in [0, k], the multiple of Q of the centred representative.
    for (std::size_t c = 0; c < len; ++c) v[c] = exact ? static_cast<std::uint32_t>(s[c] + 0.5) : 0;
    // Step (3): out_j = [sum_i y_i (Q/q_i) - v Q]_{p_j}.
    for (std::size_t j = 0; j < l_; ++j) {
      const math::Modulus& pj = to_[j];
      const u64* hat = &q_hat_mod_p_[j * k_];
      const u64* corr = &neg_vq_[j * (k_ + 1)];
      u64* oj = out + j * n + c0;
      std::size_t c = 0;
      // Two coefficients per pass: independent carry chains, shared loads of hat[i].
      for (; c + 1 < len; c += 2) {
        u128 acc0 = corr[v[c]], acc1 = corr[v[c + 1]];
        const u64* yc = y.data() + c;
        for (std::size_t i = 0; i < k_; ++i) {
          const u64 h = hat[i];
          acc0 += static_cast<u128>(yc[i * kConvBlock]) * h;
          acc1 += static_cast<u128>(yc[i * kConvBlock + 1]) * h;
        }
        oj[c] = math::barrett_reduce_128(acc0, pj);
        oj[c + 1] = math::barrett_reduce_128(acc1, pj);
      }
      for (; c < len; ++c) {
        u128 acc = corr[v[c]];
        for (std::size_t i = 0; i < k_; ++i) {
          acc += static_cast<u128>(y[i * kConvBlock + c]) * hat[i];
        }
        oj[c] = math::barrett_reduce_128(acc, pj);
      }
    }
  });
}

void Evaluator::multiply_core(const Ciphertext& a, const Ciphertext& b, RnsPoly& c0, RnsPoly& c1,
                              RnsPoly& c2_coeff, bool ntt_c01) const {
  check_ct("multiply", a);
  check_ct("multiply", b);
  if (a.size() != 2 || b.size() != 2) {
    throw std::invalid_argument("multiply: operands have " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " polynomials; relinearize first");
  }
  if (a.key_id != b.key_id)
    throw std::invalid_argument("multiply: operands have different key ids");
  if (a.limbs() != ctx_->q_size() || b.limbs() != ctx_->q_size()) {
    throw std::invalid_argument(
        "multiply: operands at " + std::to_string(a.limbs()) + " and " + std::to_string(b.limbs()) +
        " primes; the HPS multiply runs at the top level (" + std::to_string(ctx_->q_size()) +
        " primes): multiply before mod switching");
  }
  const auto& kc = ctx_->key_context();
  const std::size_t k = ctx_->q_size(), l = ctx_->p_mult_size(), n = ctx_->ring_dim();
  const std::size_t total = k + l;
  const bool square = &a == &b;
  const std::size_t inputs = square ? 2 : 4;
  const RnsPoly* in[4] = {&a.polys[0], &a.polys[1], &b.polys[0], &b.polys[1]};
  // Scratch reused across calls on this thread (no page faults or zeroing per multiply):
  // ext[p]: P_mult limbs at rows k.. (rows 0..k-1 unused: the tensor reads the
  // operands' own Q limbs); prod: the tensor.
  thread_local MultiplyScratch scratch;
  scratch.reserve(total * n, k * n);
  auto& ext = scratch.ext;
  auto limb_modulus = [&](std::size_t i) -> const math::Modulus& {
    return i < k ? kc->modulus(i) : ctx_->p_mult_base()[i - k];
  };
  auto limb_ntt = [&](std::size_t i) -> const math::NttTables& {
    return i < k ? kc->ntt(i) : ctx_->p_mult_ntt(i - k);
  };
  auto& coeff = scratch.coeff;
  for (std::size_t p = 0; p < inputs; ++p) {
    // Step (1): coefficient form over Q, transformed out of place (no copy of the operand).
    math::parallel_for(k, [&](std::size_t i) {
      math::ntt_inverse(in[p]->data() + i * n, coeff.data() + i * n, kc->ntt(i));
    });
    // Step (2): exact extension to P_mult, forward NTT there.
    hps_extend_q_to_p_mult(*ctx_, coeff.data(), ext[p].data() + k * n);
    math::parallel_for(l, [&](std::size_t j) {
      math::ntt_forward_inplace(ext[p].data() + (k + j) * n, ctx_->p_mult_ntt(j));
    });
  }
  // Step (3): tensor product in evaluation form over Q u P_mult. The Q limbs are read from the
  // operands themselves (evaluation form already; copying them into ext cost 4k limb copies),
  // the P_mult limbs from ext.
  const auto operand = [&](std::size_t p) {
    if (square) p %= 2;
    return [&, p](std::size_t i) -> const u64* {
      return i < k ? in[p]->data() + i * n : ext[p].data() + i * n;
    };
  };
  const auto a0_at = operand(0), a1_at = operand(1), b0_at = operand(2), b1_at = operand(3);
  auto& prod = scratch.prod;
  const bool vector = math::active_kernel_path() == math::KernelPath::kAvx512Ifma;
  math::parallel_for(total, [&](std::size_t i) {
    const math::Modulus& m = limb_modulus(i);
    const u64 q = m.value();
    const std::size_t off = i * n;
    u64* t0 = prod[0].data() + off;
    u64* t1 = prod[1].data() + off;
    u64* t2 = prod[2].data() + off;
    const u64* x0 = a0_at(i);
    const u64* x1 = a1_at(i);
    const u64* y0 = b0_at(i);
    const u64* y1 = b1_at(i);
    if (vector) {
      // The same fully reduced products eight coefficients at a time (IFMA below 2^50, 52-bit
      // columns for the 60-bit Q primes): bit-identical to the scalar loop, which was a tenth
      // of the multiply's time.
      const u64* cross_x[2] = {x0, x1};
      const u64* cross_y[2] = {y1, y0};
      const auto products = q < (u64{1} << math::kIfmaMaxModulusBits)
                                ? &math::detail::multiply_accumulate_ifma
                                : &math::detail::multiply_accumulate_wide;
      products(t0, &x0, &y0, 1, n, q);
      products(t1, cross_x, cross_y, 2, n, q);
      products(t2, &x1, &y1, 1, n, q);
    } else {
      for (std::size_t c = 0; c < n; ++c) {
        t0[c] = math::mul_mod(x0[c], y0[c], m);
        t2[c] = math::mul_mod(x1[c], y1[c], m);
        const u128 cross = static_cast<u128>(x0[c]) * y1[c] + static_cast<u128>(x1[c]) * y0[c];
        t1[c] = math::barrett_reduce_128(cross, m);
      }
    }
    // Step (4): back to coefficient form.
    math::ntt_inverse_inplace(t0, limb_ntt(i));
    math::ntt_inverse_inplace(t1, limb_ntt(i));
    math::ntt_inverse_inplace(t2, limb_ntt(i));
  });
  // Steps (5) and (6): scale by t/Q into P_mult, then exactly back to Q.
  RnsPoly* outs[3] = {&c0, &c1, &c2_coeff};
  for (std::size_t j = 0; j < 3; ++j) {
    u64* pj = prod[j].data() + k * n;
    hps_scale_round_to_p_mult(*ctx_, prod[j].data(), pj, pj);
    // Reallocated (and zero-filled) only when the output has another shape: multiply_relin's
    // c2 is per-thread scratch.
    if (outs[j]->context() != kc || outs[j]->num_limbs() != k) {
      *outs[j] = RnsPoly(kc, k, PolyForm::kCoefficient);
    }
    outs[j]->set_form(PolyForm::kCoefficient);
    hps_convert_p_mult_to_q(*ctx_, pj, outs[j]->data());
  }
  // Step (7): y0, y1 to evaluation form (multiply_relin leaves it to the ModDown's NTT).
  if (ntt_c01) {
    math::to_ntt_inplace(c0);
    math::to_ntt_inplace(c1);
  }
}

Ciphertext Evaluator::multiply(const Ciphertext& a, const Ciphertext& b) const {
  Ciphertext out;
  out.polys.resize(3);
  multiply_core(a, b, out.polys[0], out.polys[1], out.polys[2]);
  math::to_ntt_inplace(out.polys[2]);
  out.key_id = a.key_id;
  return out;
}

Ciphertext Evaluator::multiply_relin(const Ciphertext& a, const Ciphertext& b,
                                     const RelinKey& rk) const {
  if (rk.key_id != a.key_id) {
    throw std::invalid_argument("multiply_relin: relinearization key was made for another key id");
  }
  Ciphertext out;
  out.polys.resize(2);
  thread_local RnsPoly c2;  // scratch reused across calls (no allocation, zero-fill, faults)
  // c0 and c1 stay in coefficient form: their forward NTT is folded into the relinearization's
  // ModDown, which transforms a correction limb by limb anyway (2k NTTs of 60-bit limbs fewer;
  // the same residues as step (7) followed by adding the key switch).
  multiply_core(a, b, out.polys[0], out.polys[1], c2, false);
  key_switch_add_coefficients(*ctx_, c2, rk.key, out.polys[0], out.polys[1]);
  out.key_id = a.key_id;
  return out;
}

void Evaluator::relinearize_inplace(Ciphertext& a, const RelinKey& rk) const {
  check_ct("relinearize", a);
  if (a.size() != 3) {
    throw std::invalid_argument("relinearize: ciphertext has " + std::to_string(a.size()) +
                                " polynomials, expected 3");
  }
  if (rk.key_id != a.key_id) {
    throw std::invalid_argument("relinearize: relinearization key was made for another key id");
  }
  RnsPoly c2_coeff(a.polys[2].context(), a.polys[2].num_limbs(), PolyForm::kCoefficient);
  math::parallel_for(c2_coeff.num_limbs(), [&](std::size_t i) {
    math::ntt_inverse(a.polys[2].limb(i), c2_coeff.limb(i), a.polys[2].context()->ntt(i));
  });
  key_switch(*ctx_, c2_coeff, &a.polys[2], rk.key, a.polys[0], a.polys[1], true);
  a.polys.pop_back();
}

}  // namespace hec::bfv
