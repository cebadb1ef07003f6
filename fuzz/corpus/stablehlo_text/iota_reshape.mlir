// get_dimension_size, dynamic_iota and dynamic_reshape: out0[i, j] = x[i, j] + i, out1 is out0 flattened.
func.func public @main(%x: tensor<?x3xf32>) -> (tensor<?x3xf32>, tensor<?xf32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %c3 = stablehlo.constant dense<3> : tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %iota = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<2xi32>) -> tensor<?x3xf32>
  %sum = stablehlo.add %x, %iota : tensor<?x3xf32>
  %count = stablehlo.multiply %n1, %c3 : tensor<1xi32>
  %flat = stablehlo.dynamic_reshape %sum, %count : (tensor<?x3xf32>, tensor<1xi32>) -> tensor<?xf32>
  return %sum, %flat : tensor<?x3xf32>, tensor<?xf32>
}
