module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf32>) -> (tensor<4xf32> {jax.result_info = "result[0]"}, tensor<6xf32> {jax.result_info = "result[1]"}, tensor<4xi64> {jax.result_info = "result[2]"}, tensor<f32> {jax.result_info = "result[3]"}, tensor<4x6xf32> {jax.result_info = "result[4]"}, tensor<f32> {jax.result_info = "result[5]"}, tensor<6xf32> {jax.result_info = "result[6]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %cst_0) applies stablehlo.maximum across dimensions = [0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
    %2 = call @argmax(%arg0) : (tensor<4x6xf32>) -> tensor<4xi64>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<f32>
    %cst_2 = stablehlo.constant dense<2.400000e+01> : tensor<f32>
    %4 = stablehlo.divide %3, %cst_2 : tensor<f32>
    %5 = call @cumsum(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %cst_3 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %6 = stablehlo.reduce(%arg0 init: %cst_3) applies stablehlo.minimum across dimensions = [0, 1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<f32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%arg0 init: %cst_4) applies stablehlo.multiply across dimensions = [0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
    return %0, %1, %2, %4, %5, %6, %7 : tensor<4xf32>, tensor<6xf32>, tensor<4xi64>, tensor<f32>, tensor<4x6xf32>, tensor<f32>, tensor<6xf32>
  }
  func.func private @argmax(%arg0: tensor<4x6xf32>) -> tensor<4xi64> {
    %0 = stablehlo.iota dim = 1 : tensor<4x6xi64>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<4x6xf32>, tensor<4x6xi64>, tensor<f32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi64>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i64>, %arg4: tensor<i64>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i64>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i64>
    }
    return %1#1 : tensor<4xi64>
  }
  func.func private @cumsum(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = call @cumsum_0(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  func.func private @cumsum_0(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [5, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 6>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %1 : tensor<4x6xf32>
  }
}
