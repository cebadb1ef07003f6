module @jit__float_ew attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf64>, %arg1: tensor<2x3xf64>) -> (tensor<2x3xf64> {jax.result_info = "result[0]"}, tensor<2x3xf64> {jax.result_info = "result[1]"}, tensor<2x3xf64> {jax.result_info = "result[2]"}, tensor<2x3xf64> {jax.result_info = "result[3]"}, tensor<2x3xf64> {jax.result_info = "result[4]"}, tensor<2x3xf64> {jax.result_info = "result[5]"}, tensor<2x3xf64> {jax.result_info = "result[6]"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xf64>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<2x3xf64>
    %2 = stablehlo.divide %arg0, %arg1 : tensor<2x3xf64>
    %3 = stablehlo.exponential %arg0 : tensor<2x3xf64>
    %4 = stablehlo.tanh %arg0 : tensor<2x3xf64>
    %5 = stablehlo.abs %arg1 : tensor<2x3xf64>
    %6 = stablehlo.sqrt %5 : tensor<2x3xf64>
    %7 = stablehlo.sine %arg0 : tensor<2x3xf64>
    return %0, %1, %2, %3, %4, %6, %7 : tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>, tensor<2x3xf64>
  }
}
