// The Lattigo side of `bench/run ntt` (scheme "ntt"): the negacyclic NTT of Lattigo's ring
// package, forward and inverse, on one prime of `bits` bits (the largest below 2^bits that is
// 1 mod 2N, as ours picks it), at each ring degree 2^log_n of `log_ns`.
//
// Written as Lattigo's own ring benchmarks time it (ring/ntt_benchmark_test.go): a Ring from
// NewRing, a uniform polynomial from its sampler, r.NTT(p, p) and r.INTT(p, p) in place. Timed
// like the Google Benchmark harness of our side and OpenFHE's (bench/ntt.py): 5 repetitions,
// each running the transform until its CPU time reaches 0.2 s, the median of the repetitions'
// time per transform. Before timing, the transform is checked: INTT(NTT(a)) = a, and
// INTT(NTT(a) * NTT(X)) = a X mod X^N + 1 (a negacyclic shift), so a wrong call cannot produce
// a figure.
package main

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/tuneinsight/lattigo/v6/ring"
	"github.com/tuneinsight/lattigo/v6/utils/sampling"
)

type nttConfig struct {
	LogNs []int `json:"log_ns"`
	Bits  int   `json:"bits"`
}

const (
	nttRepetitions = 5
	nttMinSeconds  = 0.2
)

// nttPrime is the largest prime below 2^bits that is 1 mod 2N (ntt_primes in math/primes.cpp).
func nttPrime(bits, n int) uint64 {
	step := uint64(2 * n)
	for q := uint64(1)<<bits - step + 1; q > uint64(1)<<(bits-1); q -= step {
		if new(big.Int).SetUint64(q).ProbablyPrime(0) { // Baillie-PSW: exact below 2^64
			return q
		}
	}
	fail(fmt.Errorf("no %d-bit prime is 1 mod %d", bits, step))
	return 0
}

// checkNTT fails unless r's NTT is the negacyclic transform (round trip, and the product by X).
func checkNTT(r *ring.Ring, a ring.Poly) {
	n := r.N()
	q := r.SubRings[0].Modulus
	x, fa, fx, prod := r.NewPoly(), r.NewPoly(), r.NewPoly(), r.NewPoly()
	x.Coeffs[0][1] = 1
	r.NTT(a, fa)
	r.NTT(x, fx)
	back := r.NewPoly()
	r.INTT(fa, back)
	for i := 0; i < n; i++ {
		if back.Coeffs[0][i] != a.Coeffs[0][i] {
			fail(fmt.Errorf("NTT check: INTT(NTT(a)) differs from a at %d", i))
		}
	}
	r.MulCoeffsBarrett(fa, fx, prod)
	r.INTT(prod, prod)
	for i := 0; i < n; i++ {
		want := (q - a.Coeffs[0][n-1]) % q // a X: the top coefficient wraps round with a sign
		if i > 0 {
			want = a.Coeffs[0][i-1]
		}
		if prod.Coeffs[0][i] != want {
			fail(fmt.Errorf("NTT check: INTT(NTT(a) NTT(X)) is not a X at %d", i))
		}
	}
}

// perTransform returns the median over nttRepetitions of the CPU seconds per call of fn, each
// repetition calling it until nttMinSeconds have passed.
func perTransform(fn func()) float64 {
	fn()
	times := make([]float64, 0, nttRepetitions)
	for rep := 0; rep < nttRepetitions; rep++ {
		start := clock()
		calls := 0
		for {
			for k := 0; k < 16; k++ {
				fn()
			}
			calls += 16
			if clock()-start >= nttMinSeconds {
				break
			}
		}
		times = append(times, (clock()-start)/float64(calls))
	}
	sort.Float64s(times)
	return times[len(times)/2]
}

func runNTT(cfg nttConfig) {
	if cfg.Bits < 30 || cfg.Bits > 61 || len(cfg.LogNs) == 0 {
		fail(fmt.Errorf("ntt: bits must be in [30, 61] and log_ns non-empty, got %d, %v",
			cfg.Bits, cfg.LogNs))
	}
	clock = cpuSeconds
	prng, err := sampling.NewPRNG()
	if err != nil {
		fail(err)
	}
	for _, logN := range cfg.LogNs {
		n := 1 << logN
		q := nttPrime(cfg.Bits, n)
		r, err := ring.NewRing(n, []uint64{q})
		if err != nil {
			fail(err)
		}
		a := ring.NewUniformSampler(prng, r).ReadNew()
		checkNTT(r, a)
		p := *a.CopyNew()
		emit(map[string]any{"params": map[string]any{
			"library": "lattigo", "version": lattigoVersion(), "log_n": logN, "q": q}})
		emitOp(fmt.Sprintf("forward/%d", logN), perTransform(func() { r.NTT(p, p) }))
		emitOp(fmt.Sprintf("inverse/%d", logN), perTransform(func() { r.INTT(p, p) }))
	}
}
