module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<f32>, %arg1: tensor<i32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<i32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.multiply %arg0, %cst : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %1 = stablehlo.add %0, %cst_0 : tensor<f32>
    %c = stablehlo.constant dense<3> : tensor<i32>
    %2 = stablehlo.multiply %arg1, %c : tensor<i32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %3 = stablehlo.subtract %2, %c_1 : tensor<i32>
    %4 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %5 = stablehlo.multiply %arg0, %4 : tensor<f32>
    return %1, %3, %5 : tensor<f32>, tensor<i32>, tensor<f32>
  }
}
