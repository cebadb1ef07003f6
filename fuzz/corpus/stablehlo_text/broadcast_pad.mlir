// dynamic_broadcast_in_dim and dynamic_pad: out0 is x as both rows of a 2 x n array; out1 is
// x with one zero before it and two after.
func.func public @main(%x: tensor<?xf32>) -> (tensor<2x?xf32>, tensor<?xf32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %two = stablehlo.constant dense<2> : tensor<1xi32>
  %shape = stablehlo.concatenate %two, %n1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %rows = stablehlo.dynamic_broadcast_in_dim %x, %shape, dims = [1] : (tensor<?xf32>, tensor<2xi32>) -> tensor<2x?xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %low = stablehlo.constant dense<1> : tensor<1xi32>
  %high = stablehlo.constant dense<2> : tensor<1xi32>
  %interior = stablehlo.constant dense<0> : tensor<1xi32>
  %padded = stablehlo.dynamic_pad %x, %zero, %low, %high, %interior : (tensor<?xf32>, tensor<f32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<?xf32>
  return %rows, %padded : tensor<2x?xf32>, tensor<?xf32>
}
