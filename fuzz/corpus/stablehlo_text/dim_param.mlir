// A dimension variable as an argument, as JAX's inner functions take them: out0 = x + iota(b),
// for x of b elements (b from --dim b=..., or inferred from x).
func.func public @main(%b: tensor<i64> {jax.global_constant = "b"}, %x: tensor<?xf32>) -> tensor<?xf32> {
  %b1 = stablehlo.reshape %b : (tensor<i64>) -> tensor<1xi64>
  %iota = stablehlo.dynamic_iota %b1, dim = 0 : (tensor<1xi64>) -> tensor<?xf32>
  %sum = stablehlo.add %x, %iota : tensor<?xf32>
  return %sum : tensor<?xf32>
}
