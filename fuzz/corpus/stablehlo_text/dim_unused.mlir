// A dimension variable no input's shape decides: k = 2 scales x by 2; without --dim k there
// is more than one assignment of the inputs' sizes, and the run asks for it.
func.func public @main(%k: tensor<i32> {jax.global_constant = "k"}, %x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %kf = stablehlo.convert %k : (tensor<i32>) -> tensor<f32>
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %kb = stablehlo.dynamic_broadcast_in_dim %kf, %n1, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
  %r = stablehlo.multiply %x, %kb : tensor<?xf32>
  return %r : tensor<?xf32>
}
