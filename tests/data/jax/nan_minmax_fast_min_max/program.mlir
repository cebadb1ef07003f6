module @jit__fmm_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> (tensor<8xf32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.maximum %arg0, %arg1 : tensor<8xf32>
    %1 = stablehlo.minimum %arg0, %arg1 : tensor<8xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    return %0, %1, %2 : tensor<8xf32>, tensor<8xf32>, tensor<f32>
  }
}
