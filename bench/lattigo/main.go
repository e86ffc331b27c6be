// Command lattigo-reference is the Lattigo side of `bench/run ckks`, `bench/run bfv`,
// `bench/run gwas-chisq` (scheme "chisq": chisq.go) and `bench/run ntt` (scheme "ntt": ntt.go).
//
// Usage: lattigo-reference '{"scheme": "ckks", "log_n": 14, "log_q": [50, 40, ...],
// "log_p": [60, 60], "log_scale": 40, "repeats": 9, "clock": "cpu"}'
// (scheme "bfv": "t" instead of "log_scale"). The driver gives the prime sizes; Lattigo picks
// the NTT-friendly primes of those sizes. Key switching is Lattigo's hybrid RNS decomposition:
// the number of digits is ceil(len(log_q) / len(log_p)), so the driver sizes log_p to give
// the same number of digits as the other libraries.
//
// Written the way Lattigo's tutorials and scheme READMEs use the library: parameters from a
// ParametersLiteral, rlwe.KeyGenerator keys in a MemEvaluationKeySet, the scheme's Evaluator
// with preallocated outputs (the in-place forms, no allocation in the timed call), BFV as the
// bgv package's scale-invariant evaluator. The caller sets GOMAXPROCS (1 for one thread).
//
// Prints {"params": {...}} (Lattigo's own view: ring degree, log QP, digits, version) and
// one {"op": ..., "seconds": median} per operation. The clock is the process CPU time
// (getrusage, which counts the Go runtime's garbage collection too) or wall time.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"sort"
	"syscall"
	"time"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/schemes/bgv"
	"github.com/tuneinsight/lattigo/v6/schemes/ckks"
)

type config struct {
	Scheme   string `json:"scheme"`
	LogN     int    `json:"log_n"`
	LogQ     []int  `json:"log_q"`
	LogP     []int  `json:"log_p"`
	LogScale int    `json:"log_scale"`
	T        uint64 `json:"t"`
	Repeats  int    `json:"repeats"`
	Clock    string `json:"clock"`
	Ops      string `json:"ops"`
	Dot      int    `json:"dot"`
}

var clock func() float64

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) * 1e-9
}

func wallSeconds() float64 { return float64(time.Now().UnixNano()) * 1e-9 }

// The repeat rule of every timing loop of the bench (runtime/bench/repeats.h, bench/common.py
// median_of_repeats): at least repeats runs, and more while they add up to less than
// minMeasuredSeconds (at most maxRepeats).
const (
	minMeasuredSeconds = 0.25
	maxRepeats         = 1000
)

// median runs fn once unmeasured, then under the repeat rule, and returns the median duration.
func median(repeats int, fn func() error) float64 {
	if err := fn(); err != nil {
		fail(err)
	}
	times := []float64{}
	total := 0.0
	for len(times) < repeats || (total < minMeasuredSeconds && len(times) < maxRepeats) {
		start := clock()
		if err := fn(); err != nil {
			fail(err)
		}
		times = append(times, clock()-start)
		total += times[len(times)-1]
	}
	sort.Float64s(times)
	n := len(times)
	if n%2 == 1 {
		return times[n/2]
	}
	return (times[n/2-1] + times[n/2]) / 2
}

func emit(v any) {
	line, err := json.Marshal(v)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(line))
}

func emitOp(op string, seconds float64) {
	emit(map[string]any{"op": op, "seconds": seconds})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "lattigo-reference:", err)
	os.Exit(1)
}

// lattigoVersion is the version of the Lattigo module this binary was built with.
func lattigoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/tuneinsight/lattigo/v6" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

func digits(p rlwe.Parameters) int {
	return p.BaseRNSDecompositionVectorSize(p.MaxLevelQ(), p.MaxLevelP())
}

func describe(p rlwe.Parameters, extra map[string]any) {
	params := map[string]any{
		"library": "lattigo",
		"version": lattigoVersion(),
		"log_n":   p.LogN(),
		"limbs":   p.QCount(),
		"special": p.PCount(),
		"dnum":    digits(p),
		"log_qp":  p.LogQP(),
	}
	for k, v := range extra {
		params[k] = v
	}
	emit(map[string]any{"params": params})
}

func runCKKS(cfg config) {
	params, err := ckks.NewParametersFromLiteral(ckks.ParametersLiteral{
		LogN:            cfg.LogN,
		LogQ:            cfg.LogQ,
		LogP:            cfg.LogP,
		LogDefaultScale: cfg.LogScale,
	})
	if err != nil {
		fail(err)
	}
	describe(params.Parameters, map[string]any{"scheme": "ckks", "log_scale": cfg.LogScale})

	kgen := rlwe.NewKeyGenerator(params)
	sk, pk := kgen.GenKeyPairNew()
	rlk := kgen.GenRelinearizationKeyNew(sk)
	steps := make([]int, 16)
	galEls := make([]uint64, 16)
	for i := range steps {
		steps[i] = i + 1
		galEls[i] = params.GaloisElement(i + 1)
	}
	evk := rlwe.NewMemEvaluationKeySet(rlk, kgen.GenGaloisKeysNew(galEls, sk)...)
	switchKey := kgen.GenEvaluationKeyNew(sk, kgen.GenSecretKeyNew())

	ecd := ckks.NewEncoder(params)
	enc := rlwe.NewEncryptor(params, pk)
	dec := rlwe.NewDecryptor(params, sk)
	eval := ckks.NewEvaluator(params, evk)

	slots := params.MaxSlots()
	values := make([]float64, slots)
	for i := range values {
		values[i] = 0.5 + 0.001*float64(i%100)
	}
	pt := ckks.NewPlaintext(params, params.MaxLevel())
	if err := ecd.Encode(values, pt); err != nil {
		fail(err)
	}
	level := params.MaxLevel()
	if cfg.Dot > 0 {
		runDot(cfg, params, enc, eval, pt)
		return
	}
	x, err := enc.EncryptNew(pt)
	if err != nil {
		fail(err)
	}
	y, err := enc.EncryptNew(pt)
	if err != nil {
		fail(err)
	}
	out1 := ckks.NewCiphertext(params, 1, level)
	out2 := ckks.NewCiphertext(params, 2, level)
	prod := ckks.NewCiphertext(params, 1, level)
	if err := eval.MulRelin(x, y, prod); err != nil {
		fail(err)
	}
	checkCKKS(ecd, dec, prod, values, params.LogDefaultScale())
	rescaled := ckks.NewCiphertext(params, 1, level-1)
	rotated := make(map[int]*rlwe.Ciphertext, len(steps))
	for _, s := range steps {
		rotated[s] = ckks.NewCiphertext(params, 1, level)
	}
	r := cfg.Repeats
	emitOp("encrypt", median(r, func() error { return enc.Encrypt(pt, out1) }))
	emitOp("mul_relin", median(r, func() error { return eval.MulRelin(x, y, out1) }))
	emitOp("mul_norelin", median(r, func() error { return eval.Mul(x, y, out2) }))
	emitOp("rescale", median(r, func() error { return eval.Rescale(prod, rescaled) }))
	emitOp("rotate", median(r, func() error { return eval.Rotate(x, 1, out1) }))
	emitOp("hoisted16", median(r, func() error { return eval.RotateHoisted(x, steps, rotated) }))
	emitOp("keyswitch", median(r, func() error { return eval.ApplyEvaluationKey(x, switchKey, out1) }))
	emitOp("add", median(r, func() error { return eval.Add(x, y, out1) }))
}

// runDot times the sum of cfg.Dot products of ciphertext pairs without relinearization:
// MulThenAdd into a degree-2 accumulator, Lattigo's fused multiply-accumulate.
func runDot(cfg config, params ckks.Parameters, enc *rlwe.Encryptor, eval *ckks.Evaluator, pt *rlwe.Plaintext) {
	a := make([]*rlwe.Ciphertext, cfg.Dot)
	b := make([]*rlwe.Ciphertext, cfg.Dot)
	for i := range a {
		var err error
		if a[i], err = enc.EncryptNew(pt); err != nil {
			fail(err)
		}
		if b[i], err = enc.EncryptNew(pt); err != nil {
			fail(err)
		}
	}
	acc := ckks.NewCiphertext(params, 2, params.MaxLevel())
	emitOp("dot", median(cfg.Repeats, func() error {
		if err := eval.Mul(a[0], b[0], acc); err != nil {
			return err
		}
		for i := 1; i < cfg.Dot; i++ {
			if err := eval.MulThenAdd(a[i], b[i], acc); err != nil {
				return err
			}
		}
		return nil
	}))
}

// checkCKKS decrypts x*y and checks a few slots, so the timed calls are known to compute.
func checkCKKS(ecd *ckks.Encoder, dec *rlwe.Decryptor, ct *rlwe.Ciphertext, values []float64, logScale int) {
	got := make([]float64, len(values))
	if err := ecd.Decode(dec.DecryptNew(ct), got); err != nil {
		fail(err)
	}
	tolerance := math.Max(1e-3, math.Ldexp(1, 24-logScale))
	for i := 0; i < len(values); i += len(values)/7 + 1 {
		if want := values[i] * values[i]; math.Abs(got[i]-want) > tolerance {
			fail(fmt.Errorf("CKKS check: slot %d is %g, want %g", i, got[i], want))
		}
	}
}

func runBFV(cfg config) {
	params, err := bgv.NewParametersFromLiteral(bgv.ParametersLiteral{
		LogN:             cfg.LogN,
		LogQ:             cfg.LogQ,
		LogP:             cfg.LogP,
		PlaintextModulus: cfg.T,
	})
	if err != nil {
		fail(err)
	}
	describe(params.Parameters, map[string]any{"scheme": "bfv (bgv package, scale-invariant)", "t": cfg.T})

	kgen := rlwe.NewKeyGenerator(params)
	sk, pk := kgen.GenKeyPairNew()
	rlk := kgen.GenRelinearizationKeyNew(sk)
	gk := kgen.GenGaloisKeyNew(params.GaloisElementForColRotation(1), sk)
	evk := rlwe.NewMemEvaluationKeySet(rlk, gk)
	switchKey := kgen.GenEvaluationKeyNew(sk, kgen.GenSecretKeyNew())

	ecd := bgv.NewEncoder(params)
	enc := rlwe.NewEncryptor(params, pk)
	dec := rlwe.NewDecryptor(params, sk)
	eval := bgv.NewEvaluator(params, evk, true)

	t := params.PlaintextModulus()
	values := make([]uint64, params.MaxSlots())
	for i := range values {
		values[i] = (uint64(i)*31 + 7) % t
	}
	pt := bgv.NewPlaintext(params, params.MaxLevel())
	if err := ecd.Encode(values, pt); err != nil {
		fail(err)
	}
	level := params.MaxLevel()
	a, err := enc.EncryptNew(pt)
	if err != nil {
		fail(err)
	}
	b, err := enc.EncryptNew(pt)
	if err != nil {
		fail(err)
	}
	out1 := bgv.NewCiphertext(params, 1, level)
	out2 := bgv.NewCiphertext(params, 2, level)
	if err := eval.MulRelin(a, b, out1); err != nil {
		fail(err)
	}
	got := make([]uint64, len(values))
	if err := ecd.Decode(dec.DecryptNew(out1), got); err != nil {
		fail(err)
	}
	for i := 0; i < len(values); i += len(values)/7 + 1 {
		if want := values[i] * values[i] % t; got[i] != want {
			fail(fmt.Errorf("BFV check: slot %d is %d, want %d", i, got[i], want))
		}
	}
	r := cfg.Repeats
	emitOp("multiply_relin", median(r, func() error { return eval.MulRelin(a, b, out1) }))
	emitOp("multiply", median(r, func() error { return eval.Mul(a, b, out2) }))
	if cfg.Ops == "mult" {
		return
	}
	emitOp("multiply_plain", median(r, func() error { return eval.Mul(a, pt, out1) }))
	emitOp("rotate", median(r, func() error { return eval.RotateColumns(a, 1, out1) }))
	emitOp("encrypt", median(r, func() error { return enc.Encrypt(pt, out1) }))
	emitOp("keyswitch", median(r, func() error { return eval.ApplyEvaluationKey(a, switchKey, out1) }))
	emitOp("add", median(r, func() error { return eval.Add(a, b, out1) }))
}

func main() {
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: lattigo-reference 'JSON config' (see the package comment)"))
	}
	var cfg config
	if err := json.Unmarshal([]byte(os.Args[1]), &cfg); err != nil {
		fail(fmt.Errorf("bad config: %w", err))
	}
	if cfg.Repeats < 1 {
		fail(fmt.Errorf("repeats must be at least 1, got %d", cfg.Repeats))
	}
	clock = cpuSeconds
	if cfg.Clock == "wall" {
		clock = wallSeconds
	}
	switch cfg.Scheme {
	case "ckks":
		runCKKS(cfg)
	case "bfv":
		runBFV(cfg)
	case "chisq": // bench/lattigo/chisq.go
		var c chisqConfig
		if err := json.Unmarshal([]byte(os.Args[1]), &c); err != nil {
			fail(fmt.Errorf("bad chisq config: %w", err))
		}
		runChisq(c)
	case "ntt": // bench/lattigo/ntt.go
		var c nttConfig
		if err := json.Unmarshal([]byte(os.Args[1]), &c); err != nil {
			fail(fmt.Errorf("bad ntt config: %w", err))
		}
		runNTT(c)
	default:
		fail(fmt.Errorf("unknown scheme %q (ckks, bfv, chisq or ntt)", cfg.Scheme))
	}
}
