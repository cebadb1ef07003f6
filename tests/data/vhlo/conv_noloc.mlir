module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x2x6x6xf32>, %arg1: tensor<3x2x3x3xf32>, %arg2: tensor<4x1x2x2xf32>) -> (tensor<1x3x6x6xf32> {jax.result_info = "result[0]"}, tensor<1x3x2x10xf32> {jax.result_info = "result[1]"}, tensor<1x4x5x5xf32> {jax.result_info = "result[2]"}, tensor<1x3x12x12xf32> {jax.result_info = "result[3]"}, tensor<1x6x6x3xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
    %1 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], pad = [[1, 0], [0, 1]], lhs_dilate = [1, 2], rhs_dilate = [2, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x10xf32>
    %2 = stablehlo.convolution(%arg0, %arg2) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x2x6x6xf32>, tensor<4x1x2x2xf32>) -> tensor<1x4x5x5xf32>
    %3 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[2, 1], [2, 1]], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x12x12xf32>
    %4 = stablehlo.transpose %arg0, dims = [0, 2, 3, 1] : (tensor<1x2x6x6xf32>) -> tensor<1x6x6x2xf32>
    %5 = stablehlo.transpose %arg1, dims = [2, 3, 1, 0] : (tensor<3x2x3x3xf32>) -> tensor<3x3x2x3xf32>
    %6 = stablehlo.convolution(%4, %5) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x6x6x2xf32>, tensor<3x3x2x3xf32>) -> tensor<1x6x6x3xf32>
    return %0, %1, %2, %3, %6 : tensor<1x3x6x6xf32>, tensor<1x3x2x10xf32>, tensor<1x4x5x5xf32>, tensor<1x3x12x12xf32>, tensor<1x6x6x3xf32>
  }
}
