module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<4x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) -> (tensor<8x3xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<8xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<3xf32> {jax.result_info = "result[2]", sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<8x4xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %3 = stablehlo.add %1, %2 : tensor<8x4xf32>
    %4 = stablehlo.tanh %3 : tensor<8x4xf32>
    %5 = stablehlo.dot_general %4, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %6 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<8x3xf32>
    %8 = stablehlo.add %5, %7 : tensor<8x3xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%8 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<8x3xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%8 init: %cst_2) applies stablehlo.add across dimensions = [0] : (tensor<8x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %8, %9, %10 : tensor<8x3xf32>, tensor<8xf32>, tensor<3xf32>
  }
}
