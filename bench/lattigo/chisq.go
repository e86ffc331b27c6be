// The Lattigo side of `bench/run gwas-chisq`: PNAS Algorithm 2 (Blatt et al. 2020: the allelic
// chi-square test and odds ratio on encrypted genotypes), the algorithm of the OpenFHE reference
// (bench/gwas_chisq_reference.py), written the way Lattigo's examples write CKKS programs.
//
// Config: {"scheme": "chisq", "s": "S.u8", "y": "y.u8", "n": N, "m": M, "out": "stats.f64",
// "workers": T, "repeats": 1}: S is N x M genotypes (uint8, row-major), y the N phenotypes.
//
// The algorithm, as the OpenFHE reference runs it: SNPs in slots, one ciphertext per individual
// and SNP block for S and one per individual for y (replicated in every slot); n11 = sum_i S_i
// y_i, c1 = sum_i S_i, r1 = 2 sum_i y_i; then the revealed numerators and denominators of
// Alg. 2 lines 11-15 with gamma = 1 / d^2 (d = 2N), left at degree 2 for the coordinator.
// Lattigo's products take degree-1 operands, so where a product feeds another product it is
// relinearized, once per SNP block and never per individual: the individuals' products are
// accumulated at degree 2 (MulThenAdd) and the sum relinearized. That needs a relinearization
// key, hence special primes, hence ring dimension 2^14 for 128-bit security (log QP = 60 + 3 x
// 52 + 61 = 277 <= 438), 8192 slots per ciphertext (the reference: 2^13, no key).
// Streaming: each worker (a goroutine with shallow copies of the encoder, encryptor and
// evaluator) takes a contiguous share of the individuals and, per chunk of 250, encrypts them
// (the data owners) and folds them into its sums (the server); the sums of the workers are added
// at the end. Phase times are wall seconds, the slowest worker's for encrypt and compute, as the
// reference reports them.
//
// Prints one JSON line: {"seconds": {phase: s}, "params": {...}}; writes CHISQ then OR (M
// float64 each, little-endian) to "out".
package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/schemes/ckks"
)

const chisqChunk = 250

type chisqConfig struct {
	S       string `json:"s"`
	Y       string `json:"y"`
	N       int    `json:"n"`
	M       int    `json:"m"`
	Out     string `json:"out"`
	Workers int    `json:"workers"`
}

type chisqSums struct {
	n11  []*rlwe.Ciphertext // degree 2: sum of S_i y_i, not relinearized
	c1   []*rlwe.Ciphertext
	ysum *rlwe.Ciphertext
	enc  float64
	comp float64
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func runChisq(cfg chisqConfig) {
	if cfg.Workers < 1 {
		cfg.Workers = 1
	}
	S, err := os.ReadFile(cfg.S)
	must(err)
	y, err := os.ReadFile(cfg.Y)
	must(err)
	if len(S) != cfg.N*cfg.M || len(y) != cfg.N {
		fail(fmt.Errorf("chisq: %s has %d bytes and %s %d, want %d x %d and %d", cfg.S, len(S),
			cfg.Y, len(y), cfg.N, cfg.M, cfg.N))
	}
	seconds := map[string]float64{}

	start := time.Now()
	params, err := ckks.NewParametersFromLiteral(ckks.ParametersLiteral{
		LogN:            14,
		LogQ:            []int{60, 52, 52, 52},
		LogP:            []int{61},
		LogDefaultScale: 52,
	})
	must(err)
	kgen := rlwe.NewKeyGenerator(params)
	sk, pk := kgen.GenKeyPairNew()
	rlk := kgen.GenRelinearizationKeyNew(sk)
	seconds["keygen"] = time.Since(start).Seconds()

	slots := params.MaxSlots()
	blocks := (cfg.M + slots - 1) / slots
	ecd := ckks.NewEncoder(params)
	enc := rlwe.NewEncryptor(params, pk)
	eval := ckks.NewEvaluator(params, rlwe.NewMemEvaluationKeySet(rlk))
	top := params.MaxLevel()

	// The data owners and the server's folding, per worker.
	sums := make([]chisqSums, cfg.Workers)
	var wg sync.WaitGroup
	for w := 0; w < cfg.Workers; w++ {
		lo, hi := w*cfg.N/cfg.Workers, (w+1)*cfg.N/cfg.Workers
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			sums[w] = foldShare(params, ecd.ShallowCopy(), enc.ShallowCopy(), eval.ShallowCopy(),
				S, y, cfg.M, blocks, lo, hi, top)
		}(w, lo, hi)
	}
	wg.Wait()
	for _, s := range sums {
		seconds["encrypt"] = math.Max(seconds["encrypt"], s.enc)
		seconds["compute"] = math.Max(seconds["compute"], s.comp)
	}

	// The server: the workers' sums, then Alg. 2 lines 5-15 per SNP block.
	start = time.Now()
	d := 2.0 * float64(cfg.N)
	gamma := 1.0 / (d * d)
	total := sums[0]
	for _, s := range sums[1:] {
		must(eval.Add(total.ysum, s.ysum, total.ysum))
		for b := 0; b < blocks; b++ {
			must(eval.Add(total.n11[b], s.n11[b], total.n11[b]))
			must(eval.Add(total.c1[b], s.c1[b], total.c1[b]))
		}
	}
	r1, err := eval.AddNew(total.ysum, total.ysum) // line 5
	must(err)
	r1s := scaled(eval, r1, gamma) // line 6
	outs := map[string][]*rlwe.Ciphertext{}
	for b := 0; b < blocks; b++ {
		n11, err := eval.RelinearizeNew(total.n11[b]) // line 8: one relinearization per block
		must(err)
		must(eval.Rescale(n11, n11))
		c1 := total.c1[b] // line 9
		c1s := scaled(eval, c1, gamma)
		// line 11: (n11 d gamma - c1 r1 gamma)^2
		t1 := scaled(eval, n11, d*gamma)
		t2, err := eval.MulRelinNew(c1, r1s)
		must(err)
		must(eval.Rescale(t2, t2))
		chiN1, err := eval.SubNew(t1, t2)
		must(err)
		chiNum, err := eval.MulNew(chiN1, chiN1)
		must(err)
		// line 12: c1 (d gamma - c1 gamma) r1 (d gamma - r1 gamma)
		chiD1 := productRescaled(eval, c1, complement(eval, c1s, d*gamma))
		chiD2 := productRescaled(eval, r1, complement(eval, r1s, d*gamma))
		chiDen, err := eval.MulNew(chiD1, chiD2)
		must(err)
		// lines 14-15: n11 (n11 gamma - r1 gamma - c1 gamma + d gamma) and
		// (c1 - n11)(r1 gamma - n11 gamma)
		n11s := scaled(eval, n11, gamma)
		or1, err := eval.SubNew(n11s, r1s)
		must(err)
		must(eval.Sub(or1, c1s, or1))
		must(eval.Add(or1, d*gamma, or1))
		orNum, err := eval.MulNew(n11, or1)
		must(err)
		diff, err := eval.SubNew(c1, n11)
		must(err)
		or3, err := eval.SubNew(r1s, n11s)
		must(err)
		orDen, err := eval.MulNew(diff, or3)
		must(err)
		outs["chi2_num"] = append(outs["chi2_num"], chiNum)
		outs["chi2_den"] = append(outs["chi2_den"], chiDen)
		outs["or_num"] = append(outs["or_num"], orNum)
		outs["or_den"] = append(outs["or_den"], orDen)
	}
	seconds["compute"] += time.Since(start).Seconds()

	// The coordinator.
	start = time.Now()
	dec := rlwe.NewDecryptor(params, sk)
	revealed := map[string][]float64{}
	for name, cts := range outs {
		values := make([]float64, 0, blocks*slots)
		part := make([]float64, slots)
		for _, ct := range cts {
			must(ecd.Decode(dec.DecryptNew(ct), part))
			values = append(values, part...)
		}
		revealed[name] = values[:cfg.M]
	}
	seconds["decrypt"] = time.Since(start).Seconds()

	out := make([]float64, 2*cfg.M)
	for j := 0; j < cfg.M; j++ {
		out[j] = math.Max(d*revealed["chi2_num"][j]/revealed["chi2_den"][j], 0) // gamma cancels
		out[cfg.M+j] = revealed["or_num"][j] / revealed["or_den"][j]
	}
	f, err := os.Create(cfg.Out)
	must(err)
	must(binary.Write(f, binary.LittleEndian, out))
	must(f.Close())
	emit(map[string]any{
		"seconds": seconds,
		"params": map[string]any{
			"library":  "lattigo",
			"version":  lattigoVersion(),
			"log_n":    params.LogN(),
			"log_qp":   params.LogQP(),
			"moduli":   []int{60, 52, 52, 52},
			"special":  []int{61},
			"slots":    slots,
			"gamma":    gamma,
			"workers":  cfg.Workers,
			"relin":    "once per SNP block (n11, c1 r1, the two denominator factors)",
			"chunk":    chisqChunk,
			"blocks":   blocks,
			"security": "128-bit (HE Standard, log QP <= 438 at 2^14)",
		},
	})
}

// foldShare: individuals lo..hi-1 encrypt their rows (y_i replicated in every slot, S_i per
// SNP block) chunk by chunk, and the server folds each chunk into the worker's sums.
func foldShare(params ckks.Parameters, ecd *ckks.Encoder, enc *rlwe.Encryptor, eval *ckks.Evaluator,
	S, y []byte, m, blocks, lo, hi, level int) chisqSums {
	slots := params.MaxSlots()
	s := chisqSums{
		n11:  make([]*rlwe.Ciphertext, blocks),
		c1:   make([]*rlwe.Ciphertext, blocks),
		ysum: ckks.NewCiphertext(params, 1, level),
	}
	for b := 0; b < blocks; b++ {
		s.n11[b] = ckks.NewCiphertext(params, 2, level)
		s.c1[b] = ckks.NewCiphertext(params, 1, level)
	}
	values := make([]float64, slots)
	pt := ckks.NewPlaintext(params, level)
	first := true
	for a := lo; a < hi; a += chisqChunk {
		end := min(a+chisqChunk, hi)
		t0 := time.Now()
		yCt := make([]*rlwe.Ciphertext, end-a)
		sCt := make([][]*rlwe.Ciphertext, end-a)
		for i := a; i < end; i++ {
			for k := range values {
				values[k] = float64(y[i])
			}
			must(ecd.Encode(values, pt))
			ct, err := enc.EncryptNew(pt)
			must(err)
			yCt[i-a] = ct
			sCt[i-a] = make([]*rlwe.Ciphertext, blocks)
			for b := 0; b < blocks; b++ {
				for k := range values {
					j := b*slots + k
					values[k] = 0
					if j < m {
						values[k] = float64(S[i*m+j])
					}
				}
				must(ecd.Encode(values, pt))
				ct, err := enc.EncryptNew(pt)
				must(err)
				sCt[i-a][b] = ct
			}
		}
		t1 := time.Now()
		for i := range yCt {
			for b := 0; b < blocks; b++ {
				if first {
					must(eval.Mul(sCt[i][b], yCt[i], s.n11[b]))
					s.c1[b].Copy(sCt[i][b])
				} else {
					must(eval.MulThenAdd(sCt[i][b], yCt[i], s.n11[b]))
					must(eval.Add(s.c1[b], sCt[i][b], s.c1[b]))
				}
			}
			if first {
				s.ysum.Copy(yCt[i])
			} else {
				must(eval.Add(s.ysum, yCt[i], s.ysum))
			}
			first = false
		}
		s.enc += t1.Sub(t0).Seconds()
		s.comp += time.Since(t1).Seconds()
	}
	return s
}

// scaled: ct times a real constant, rescaled (one level).
func scaled(eval *ckks.Evaluator, ct *rlwe.Ciphertext, c float64) *rlwe.Ciphertext {
	out, err := eval.MulNew(ct, c)
	must(err)
	must(eval.Rescale(out, out))
	return out
}

// complement: c - ct.
func complement(eval *ckks.Evaluator, ct *rlwe.Ciphertext, c float64) *rlwe.Ciphertext {
	out, err := eval.MulNew(ct, -1)
	must(err)
	must(eval.Add(out, c, out))
	return out
}

// productRescaled: a x b relinearized (it feeds another product) and rescaled.
func productRescaled(eval *ckks.Evaluator, a, b *rlwe.Ciphertext) *rlwe.Ciphertext {
	out, err := eval.MulRelinNew(a, b)
	must(err)
	must(eval.Rescale(out, out))
	return out
}
