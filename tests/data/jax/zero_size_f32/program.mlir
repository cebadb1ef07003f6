module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<0x3xf32>) -> (tensor<0x3xf32> {jax.result_info = "result[0]"}, tensor<f32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<0x3xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<0x3xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<0x3xf32>
    %3 = stablehlo.add %1, %2 : tensor<0x3xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.add across dimensions = [0, 1] : (tensor<0x3xf32>, tensor<f32>) -> tensor<f32>
    %cst_2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %5 = stablehlo.reduce(%arg0 init: %cst_2) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<0x3xf32>, tensor<f32>) -> tensor<f32>
    %cst_3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %6 = stablehlo.maximum %cst_3, %5 : tensor<f32>
    return %3, %4, %6 : tensor<0x3xf32>, tensor<f32>, tensor<f32>
  }
}
