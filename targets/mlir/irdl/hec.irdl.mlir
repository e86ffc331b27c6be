// IRDL definitions of hec's dialects, GENERATED from compiler/dialects by
// `python -m targets.mlir.irdl --write`; do not edit (docs/mlir.md).
// Use: mlir-opt-19 --irdl-file=targets/mlir/irdl/hec.irdl.mlir --verify-each FILE

irdl.dialect @stat {
  // stat.tensor<shape, secrecy>
  irdl.type @tensor {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base "#builtin.string"
    irdl.parameters(%0, %1)
  }
  // stat.interval<lo, hi>
  irdl.attribute @interval {
    %0 = irdl.base "#builtin.float"
    %1 = irdl.base "#builtin.float"
    irdl.parameters(%0, %1)
  }
  // stat.set<values>
  irdl.attribute @set {
    %0 = irdl.base "#builtin.array"
    irdl.parameters(%0)
  }
  // stat.program: carried by an upstream container (targets/mlir/form.py)
  // stat.param
  irdl.operation @param {
    %0 = irdl.base "#builtin.integer"
    %1 = irdl.base "#builtin.string"
    irdl.attributes {"bound" = %0, "sym" = %1}
  }
  // stat.size
  irdl.operation @size {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base "#builtin.string"
    irdl.results(%0)
    irdl.attributes {"sym" = %1}
  }
  // stat.input
  //   optional, not checked by IRDL 19: domain
  irdl.operation @input {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base "#builtin.string"
    irdl.results(%0)
    irdl.attributes {"sym" = %1}
  }
  // stat.owner_compute
  irdl.operation @owner_compute {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.string"
    %3 = irdl.base "#builtin.string"
    %4 = irdl.base @stat::@interval
    %5 = irdl.base @stat::@set
    %6 = irdl.any_of(%4, %5)
    irdl.operands(variadic %0)
    irdl.results(%1)
    irdl.attributes {"sym" = %2, "expr" = %3, "domain" = %6}
  }
  // stat.packed_sum
  irdl.operation @packed_sum {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.dense_array"
    irdl.operands(variadic %0)
    irdl.results(variadic %1)
    irdl.attributes {"radices" = %2}
  }
  // stat.constant
  irdl.operation @constant {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base "#builtin.float"
    irdl.results(%0)
    irdl.attributes {"value" = %1}
  }
  // stat.add
  irdl.operation @add {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base @stat::@tensor
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // stat.sub
  irdl.operation @sub {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base @stat::@tensor
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // stat.mul
  irdl.operation @mul {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base @stat::@tensor
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // stat.div
  irdl.operation @div {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base @stat::@tensor
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // stat.neg
  irdl.operation @neg {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.pow
  irdl.operation @pow {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.integer"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"exponent" = %2}
  }
  // stat.poly
  irdl.operation @poly {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.dense_array"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"coefficients" = %2}
  }
  // stat.broadcast
  irdl.operation @broadcast {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.dense_array"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"dims" = %2}
  }
  // stat.matmul
  irdl.operation @matmul {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base @stat::@tensor
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // stat.sum
  irdl.operation @sum {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.dense_array"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"axes" = %2}
  }
  // stat.mean
  irdl.operation @mean {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.dense_array"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"axes" = %2}
  }
  // stat.transpose
  irdl.operation @transpose {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.det
  irdl.operation @det {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.adj
  irdl.operation @adj {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.eye
  irdl.operation @eye {
    %0 = irdl.base @stat::@tensor
    irdl.results(%0)
  }
  // stat.index
  irdl.operation @index {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.dense_array"
    %3 = irdl.base "#builtin.dense_array"
    %4 = irdl.base "#builtin.dense_array"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"starts" = %2, "stops" = %3, "drops" = %4}
  }
  // stat.reveal
  irdl.operation @reveal {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.string"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"sym" = %2}
  }
  // stat.sqrt
  irdl.operation @sqrt {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.abs
  irdl.operation @abs {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.exp
  irdl.operation @exp {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.log
  irdl.operation @log {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.norm_sf
  irdl.operation @norm_sf {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.norm_cdf
  irdl.operation @norm_cdf {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    irdl.operands(%0)
    irdl.results(%1)
  }
  // stat.chi2_sf
  irdl.operation @chi2_sf {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base @stat::@tensor
    %2 = irdl.base "#builtin.integer"
    irdl.operands(%0)
    irdl.results(%1)
    irdl.attributes {"df" = %2}
  }
  // stat.client: carried by an upstream container (targets/mlir/form.py)
  // stat.output
  irdl.operation @output {
    %0 = irdl.base @stat::@tensor
    %1 = irdl.base "#builtin.string"
    irdl.operands(%0)
    irdl.attributes {"sym" = %1}
  }
}

irdl.dialect @bfv {
  // bfv.parameters<log_n, plain_moduli, moduli, special_moduli, dnum, security_bits, insecure>
  irdl.attribute @parameters {
    %0 = irdl.base "#builtin.integer"
    %1 = irdl.base "#builtin.array"
    %2 = irdl.base "#builtin.array"
    %3 = irdl.base "#builtin.array"
    %4 = irdl.base "#builtin.integer"
    %5 = irdl.base "#builtin.integer"
    %6 = irdl.base "#builtin.integer"
    irdl.parameters(%0, %1, %2, %3, %4, %5, %6)
  }
  // bfv.program: carried by an upstream container (targets/mlir/form.py)
  // bfv.param
  irdl.operation @param {
    %0 = irdl.base "#builtin.integer"
    %1 = irdl.base "#builtin.string"
    irdl.attributes {"bound" = %0, "sym" = %1}
  }
  // bfv.source
  irdl.operation @source {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base @stat::@interval
    %2 = irdl.base @stat::@set
    %3 = irdl.any_of(%1, %2)
    %4 = irdl.base "#builtin.string"
    irdl.attributes {"shape" = %0, "domain" = %3, "sym" = %4}
  }
  // bfv.size
  irdl.operation @size {
    %0 = irdl.base @he::@public
    %1 = irdl.base "#builtin.string"
    irdl.results(%0)
    irdl.attributes {"sym" = %1}
  }
  // bfv.constant
  irdl.operation @constant {
    %0 = irdl.base @he::@public
    %1 = irdl.base "#builtin.float"
    irdl.results(%0)
    irdl.attributes {"value" = %1}
  }
  // bfv.public_arith
  irdl.operation @public_arith {
    %0 = irdl.base @he::@public
    %1 = irdl.base @he::@public
    %2 = irdl.base @he::@public
    %3 = irdl.base "#builtin.string"
    irdl.operands(%0, %1)
    irdl.results(%2)
    irdl.attributes {"kind" = %3}
  }
  // bfv.encode
  //   optional, not checked by IRDL 19: domain, expr, digits, scalar_digits, radices, group
  irdl.operation @encode {
    %0 = irdl.base @ckks::@ptensor
    %1 = irdl.base @he::@ptensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base "#builtin.string"
    irdl.results(%2)
    irdl.attributes {"sym" = %3}
  }
  // bfv.encrypt
  irdl.operation @encrypt {
    %0 = irdl.base @ckks::@ptensor
    %1 = irdl.base @he::@ptensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"party" = %6}
  }
  // bfv.decrypt
  //   optional, not checked by IRDL 19: digit, scalar_digit
  irdl.operation @decrypt {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base "#builtin.string"
    %5 = irdl.base "#builtin.string"
    irdl.operands(%2, optional %3)
    irdl.attributes {"party" = %4, "sym" = %5}
  }
  // bfv.add
  irdl.operation @add {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // bfv.sub
  irdl.operation @sub {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // bfv.negate
  irdl.operation @negate {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // bfv.mul
  irdl.operation @mul {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // bfv.mul_const
  //   optional, not checked by IRDL 19: integer, masked
  irdl.operation @mul_const {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base @ckks::@tensor
    %5 = irdl.base @he::@tensor
    %6 = irdl.any_of(%4, %5)
    irdl.operands(%2, %3)
    irdl.results(%6)
  }
  // bfv.add_const
  //   optional, not checked by IRDL 19: integer
  irdl.operation @add_const {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base @ckks::@tensor
    %5 = irdl.base @he::@tensor
    %6 = irdl.any_of(%4, %5)
    irdl.operands(%2, %3)
    irdl.results(%6)
  }
  // bfv.relinearize
  irdl.operation @relinearize {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // bfv.mod_switch
  irdl.operation @mod_switch {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // bfv.rotate
  irdl.operation @rotate {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.integer"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"offset" = %6}
  }
  // bfv.sum_slots
  //   optional, not checked by IRDL 19: axis
  irdl.operation @sum_slots {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // bfv.reduce
  irdl.operation @reduce {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.integer"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"axis" = %6}
  }
  // bfv.dot
  irdl.operation @dot {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    %9 = irdl.base "#builtin.integer"
    irdl.operands(%2, %5)
    irdl.results(%8)
    irdl.attributes {"axis" = %9}
  }
  // bfv.broadcast
  irdl.operation @broadcast {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.dense_array"
    %7 = irdl.base "#builtin.array"
    %8 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"dims" = %6, "shape" = %7, "out_layout" = %8}
  }
  // bfv.transpose
  irdl.operation @transpose {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // bfv.gather
  irdl.operation @gather {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.dense_array"
    %7 = irdl.base "#builtin.dense_array"
    %8 = irdl.base "#builtin.array"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"indices" = %6, "negate" = %7, "shape" = %8}
  }
}

irdl.dialect @bool {
  // bool.circuit: carried by an upstream container (targets/mlir/form.py)
  // bool.input
  irdl.operation @input {
    %0 = irdl.is i1
    %1 = irdl.base "#builtin.string"
    %2 = irdl.base "#builtin.string"
    irdl.results(variadic %0)
    irdl.attributes {"sym" = %1, "int_type" = %2}
  }
  // bool.output
  irdl.operation @output {
    %0 = irdl.is i1
    %1 = irdl.base "#builtin.string"
    %2 = irdl.base "#builtin.string"
    irdl.operands(variadic %0)
    irdl.attributes {"sym" = %1, "int_type" = %2}
  }
  // bool.constant
  irdl.operation @constant {
    %0 = irdl.is i1
    %1 = irdl.base "#builtin.integer"
    irdl.results(%0)
    irdl.attributes {"value" = %1}
  }
  // bool.not
  irdl.operation @not {
    %0 = irdl.is i1
    %1 = irdl.is i1
    irdl.operands(%0)
    irdl.results(%1)
  }
  // bool.and
  irdl.operation @and {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // bool.or
  irdl.operation @or {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // bool.xor
  irdl.operation @xor {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // bool.nand
  irdl.operation @nand {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // bool.nor
  irdl.operation @nor {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // bool.xnor
  irdl.operation @xnor {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // bool.mux
  irdl.operation @mux {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    %3 = irdl.is i1
    irdl.operands(%0, %1, %2)
    irdl.results(%3)
  }
  // bool.maj
  irdl.operation @maj {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.is i1
    %3 = irdl.is i1
    irdl.operands(%0, %1, %2)
    irdl.results(%3)
  }
  // bool.threshold
  irdl.operation @threshold {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.base "#builtin.integer"
    irdl.operands(variadic %0)
    irdl.results(%1)
    irdl.attributes {"k" = %2}
  }
  // bool.linear
  irdl.operation @linear {
    %0 = irdl.is i1
    %1 = irdl.is i1
    %2 = irdl.base "#builtin.dense_array"
    %3 = irdl.base "#builtin.integer"
    irdl.operands(variadic %0)
    irdl.results(%1)
    irdl.attributes {"multipliers" = %2, "constant" = %3}
  }
}

irdl.dialect @ckks {
  // ckks.tensor<shape, layout, level, scale, degree>
  irdl.type @tensor {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base "#builtin.string"
    %2 = irdl.base "#builtin.integer"
    %3 = irdl.base @ckks::@scale
    %4 = irdl.base "#builtin.integer"
    irdl.parameters(%0, %1, %2, %3, %4)
  }
  // ckks.ptensor<shape, layout, level, scale>
  irdl.type @ptensor {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base "#builtin.string"
    %2 = irdl.base "#builtin.integer"
    %3 = irdl.base @ckks::@scale
    irdl.parameters(%0, %1, %2, %3)
  }
  // ckks.scale<bases, exponents>
  irdl.attribute @scale {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base "#builtin.array"
    irdl.parameters(%0, %1)
  }
  // ckks.plan<log_n, input_scale, rescale_bits, output_bits, special_bits, precision>
  irdl.attribute @plan {
    %0 = irdl.base "#builtin.integer"
    %1 = irdl.base "#builtin.float"
    %2 = irdl.base "#builtin.float"
    %3 = irdl.base "#builtin.integer"
    %4 = irdl.base "#builtin.integer"
    %5 = irdl.base "#builtin.float"
    irdl.parameters(%0, %1, %2, %3, %4, %5)
  }
  // ckks.parameters<log_n, output_moduli, moduli, special_moduli, dnum, security_bits, insecure>
  irdl.attribute @parameters {
    %0 = irdl.base "#builtin.integer"
    %1 = irdl.base "#builtin.array"
    %2 = irdl.base "#builtin.array"
    %3 = irdl.base "#builtin.array"
    %4 = irdl.base "#builtin.integer"
    %5 = irdl.base "#builtin.integer"
    %6 = irdl.base "#builtin.integer"
    irdl.parameters(%0, %1, %2, %3, %4, %5, %6)
  }
  // ckks.program: carried by an upstream container (targets/mlir/form.py)
  // ckks.param
  irdl.operation @param {
    %0 = irdl.base "#builtin.integer"
    %1 = irdl.base "#builtin.string"
    irdl.attributes {"bound" = %0, "sym" = %1}
  }
  // ckks.source
  irdl.operation @source {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base @stat::@interval
    %2 = irdl.base @stat::@set
    %3 = irdl.any_of(%1, %2)
    %4 = irdl.base "#builtin.string"
    irdl.attributes {"shape" = %0, "domain" = %3, "sym" = %4}
  }
  // ckks.size
  irdl.operation @size {
    %0 = irdl.base @he::@public
    %1 = irdl.base "#builtin.string"
    irdl.results(%0)
    irdl.attributes {"sym" = %1}
  }
  // ckks.constant
  irdl.operation @constant {
    %0 = irdl.base @he::@public
    %1 = irdl.base "#builtin.float"
    irdl.results(%0)
    irdl.attributes {"value" = %1}
  }
  // ckks.public_arith
  irdl.operation @public_arith {
    %0 = irdl.base @he::@public
    %1 = irdl.base @he::@public
    %2 = irdl.base @he::@public
    %3 = irdl.base "#builtin.string"
    irdl.operands(%0, %1)
    irdl.results(%2)
    irdl.attributes {"kind" = %3}
  }
  // ckks.encode
  //   optional, not checked by IRDL 19: domain, expr, digits, scalar_digits, radices, group
  irdl.operation @encode {
    %0 = irdl.base @ckks::@ptensor
    %1 = irdl.base @he::@ptensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base "#builtin.string"
    irdl.results(%2)
    irdl.attributes {"sym" = %3}
  }
  // ckks.encrypt
  irdl.operation @encrypt {
    %0 = irdl.base @ckks::@ptensor
    %1 = irdl.base @he::@ptensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"party" = %6}
  }
  // ckks.decrypt
  //   optional, not checked by IRDL 19: digit, scalar_digit
  irdl.operation @decrypt {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base "#builtin.string"
    %5 = irdl.base "#builtin.string"
    irdl.operands(%2, optional %3)
    irdl.attributes {"party" = %4, "sym" = %5}
  }
  // ckks.add
  irdl.operation @add {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // ckks.sub
  irdl.operation @sub {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // ckks.negate
  irdl.operation @negate {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // ckks.mul
  irdl.operation @mul {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // ckks.mul_plain
  irdl.operation @mul_plain {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @ckks::@ptensor
    %2 = irdl.base @ckks::@tensor
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // ckks.add_plain
  irdl.operation @add_plain {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @ckks::@ptensor
    %2 = irdl.base @ckks::@tensor
    irdl.operands(%0, %1)
    irdl.results(%2)
  }
  // ckks.mul_const
  //   optional, not checked by IRDL 19: masked
  irdl.operation @mul_const {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base @ckks::@tensor
    %5 = irdl.base @he::@tensor
    %6 = irdl.any_of(%4, %5)
    %7 = irdl.base @ckks::@scale
    irdl.operands(%2, %3)
    irdl.results(%6)
    irdl.attributes {"const_scale" = %7}
  }
  // ckks.add_const
  irdl.operation @add_const {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base @ckks::@tensor
    %5 = irdl.base @he::@tensor
    %6 = irdl.any_of(%4, %5)
    irdl.operands(%2, %3)
    irdl.results(%6)
  }
  // ckks.relinearize
  irdl.operation @relinearize {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // ckks.rescale
  irdl.operation @rescale {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@scale
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"divisor" = %6}
  }
  // ckks.level_down
  irdl.operation @level_down {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.integer"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"to" = %6}
  }
  // ckks.rotate
  //   optional, not checked by IRDL 19: group
  irdl.operation @rotate {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.integer"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"offset" = %6}
  }
  // ckks.sum_slots
  //   optional, not checked by IRDL 19: radices, axis
  irdl.operation @sum_slots {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // ckks.reduce
  irdl.operation @reduce {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.integer"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"axis" = %6}
  }
  // ckks.dot
  irdl.operation @dot {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    %9 = irdl.base "#builtin.integer"
    irdl.operands(%2, %5)
    irdl.results(%8)
    irdl.attributes {"axis" = %9}
  }
  // ckks.diag_matvec
  irdl.operation @diag_matvec {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // ckks.convert
  irdl.operation @convert {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"to" = %6}
  }
  // ckks.broadcast
  //   optional, not checked by IRDL 19: real_factor
  irdl.operation @broadcast {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.dense_array"
    %7 = irdl.base "#builtin.array"
    %8 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"dims" = %6, "shape" = %7, "out_layout" = %8}
  }
  // ckks.unpack_complex
  irdl.operation @unpack_complex {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // ckks.transpose
  irdl.operation @transpose {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // ckks.gather
  irdl.operation @gather {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.dense_array"
    %7 = irdl.base "#builtin.dense_array"
    %8 = irdl.base "#builtin.array"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"indices" = %6, "negate" = %7, "shape" = %8}
  }
}

irdl.dialect @he {
  // he.tensor<shape, layout, level, degree>
  irdl.type @tensor {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base "#builtin.string"
    %2 = irdl.base "#builtin.integer"
    %3 = irdl.base "#builtin.integer"
    irdl.parameters(%0, %1, %2, %3)
  }
  // he.ptensor<shape, layout, level>
  irdl.type @ptensor {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base "#builtin.string"
    %2 = irdl.base "#builtin.integer"
    irdl.parameters(%0, %1, %2)
  }
  // he.public
  irdl.type @public {
  }
  // he.program: carried by an upstream container (targets/mlir/form.py)
  // he.param
  irdl.operation @param {
    %0 = irdl.base "#builtin.integer"
    %1 = irdl.base "#builtin.string"
    irdl.attributes {"bound" = %0, "sym" = %1}
  }
  // he.source
  irdl.operation @source {
    %0 = irdl.base "#builtin.array"
    %1 = irdl.base @stat::@interval
    %2 = irdl.base @stat::@set
    %3 = irdl.any_of(%1, %2)
    %4 = irdl.base "#builtin.string"
    irdl.attributes {"shape" = %0, "domain" = %3, "sym" = %4}
  }
  // he.size
  irdl.operation @size {
    %0 = irdl.base @he::@public
    %1 = irdl.base "#builtin.string"
    irdl.results(%0)
    irdl.attributes {"sym" = %1}
  }
  // he.constant
  irdl.operation @constant {
    %0 = irdl.base @he::@public
    %1 = irdl.base "#builtin.float"
    irdl.results(%0)
    irdl.attributes {"value" = %1}
  }
  // he.public_arith
  irdl.operation @public_arith {
    %0 = irdl.base @he::@public
    %1 = irdl.base @he::@public
    %2 = irdl.base @he::@public
    %3 = irdl.base "#builtin.string"
    irdl.operands(%0, %1)
    irdl.results(%2)
    irdl.attributes {"kind" = %3}
  }
  // he.encode
  //   optional, not checked by IRDL 19: domain, expr, digits, scalar_digits, radices, group
  irdl.operation @encode {
    %0 = irdl.base @ckks::@ptensor
    %1 = irdl.base @he::@ptensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base "#builtin.string"
    irdl.results(%2)
    irdl.attributes {"sym" = %3}
  }
  // he.encrypt
  irdl.operation @encrypt {
    %0 = irdl.base @ckks::@ptensor
    %1 = irdl.base @he::@ptensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"party" = %6}
  }
  // he.decrypt
  //   optional, not checked by IRDL 19: digit, scalar_digit
  irdl.operation @decrypt {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base "#builtin.string"
    %5 = irdl.base "#builtin.string"
    irdl.operands(%2, optional %3)
    irdl.attributes {"party" = %4, "sym" = %5}
  }
  // he.add
  irdl.operation @add {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // he.sub
  irdl.operation @sub {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // he.negate
  irdl.operation @negate {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // he.mul
  irdl.operation @mul {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // he.mul_const
  //   optional, not checked by IRDL 19: integer, masked
  irdl.operation @mul_const {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base @ckks::@tensor
    %5 = irdl.base @he::@tensor
    %6 = irdl.any_of(%4, %5)
    irdl.operands(%2, %3)
    irdl.results(%6)
  }
  // he.add_const
  //   optional, not checked by IRDL 19: integer
  irdl.operation @add_const {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @he::@public
    %4 = irdl.base @ckks::@tensor
    %5 = irdl.base @he::@tensor
    %6 = irdl.any_of(%4, %5)
    irdl.operands(%2, %3)
    irdl.results(%6)
  }
  // he.relinearize
  irdl.operation @relinearize {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // he.rotate
  irdl.operation @rotate {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.integer"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"offset" = %6}
  }
  // he.sum_slots
  //   optional, not checked by IRDL 19: axis
  irdl.operation @sum_slots {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // he.reduce
  irdl.operation @reduce {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.integer"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"axis" = %6}
  }
  // he.dot
  irdl.operation @dot {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    %9 = irdl.base "#builtin.integer"
    irdl.operands(%2, %5)
    irdl.results(%8)
    irdl.attributes {"axis" = %9}
  }
  // he.diag_matvec
  irdl.operation @diag_matvec {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base @ckks::@tensor
    %7 = irdl.base @he::@tensor
    %8 = irdl.any_of(%6, %7)
    irdl.operands(%2, %5)
    irdl.results(%8)
  }
  // he.convert
  irdl.operation @convert {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"to" = %6}
  }
  // he.broadcast
  irdl.operation @broadcast {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.dense_array"
    %7 = irdl.base "#builtin.array"
    %8 = irdl.base "#builtin.string"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"dims" = %6, "shape" = %7, "out_layout" = %8}
  }
  // he.transpose
  irdl.operation @transpose {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    irdl.operands(%2)
    irdl.results(%5)
  }
  // he.gather
  irdl.operation @gather {
    %0 = irdl.base @ckks::@tensor
    %1 = irdl.base @he::@tensor
    %2 = irdl.any_of(%0, %1)
    %3 = irdl.base @ckks::@tensor
    %4 = irdl.base @he::@tensor
    %5 = irdl.any_of(%3, %4)
    %6 = irdl.base "#builtin.dense_array"
    %7 = irdl.base "#builtin.dense_array"
    %8 = irdl.base "#builtin.array"
    irdl.operands(%2)
    irdl.results(%5)
    irdl.attributes {"indices" = %6, "negate" = %7, "shape" = %8}
  }
}
