module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xf32>) -> (tensor<6xf32> {jax.result_info = "result[0]"}, tensor<6xf32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %c_0 = stablehlo.constant dense<0> : tensor<i64>
    %1:4 = stablehlo.while(%iterArg = %c_0, %iterArg_1 = %c, %iterArg_2 = %0, %iterArg_3 = %arg0) : tensor<i64>, tensor<i64>, tensor<6xf32>, tensor<6xf32>
    cond {
      %c_4 = stablehlo.constant dense<10> : tensor<i64>
      %2 = stablehlo.compare LT, %iterArg, %c_4, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2:3 = func.call @closed_call(%iterArg_1, %iterArg_2, %iterArg_3) : (tensor<i64>, tensor<6xf32>, tensor<6xf32>) -> (tensor<i64>, tensor<6xf32>, tensor<6xf32>)
      %c_4 = stablehlo.constant dense<1> : tensor<i64>
      %3 = stablehlo.add %iterArg, %c_4 : tensor<i64>
      stablehlo.return %3, %2#0, %2#1, %2#2 : tensor<i64>, tensor<i64>, tensor<6xf32>, tensor<6xf32>
    }
    return %1#2, %1#3 : tensor<6xf32>, tensor<6xf32>
  }
  func.func private @closed_call(%arg0: tensor<i64>, %arg1: tensor<6xf32>, %arg2: tensor<6xf32>) -> (tensor<i64>, tensor<6xf32>, tensor<6xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %0 = stablehlo.add %arg0, %c : tensor<i64>
    %1 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %3 = stablehlo.multiply %arg2, %2 : tensor<6xf32>
    %4 = stablehlo.add %arg1, %3 : tensor<6xf32>
    %cst = stablehlo.constant dense<0.899999976> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %6 = stablehlo.multiply %arg2, %5 : tensor<6xf32>
    %cst_0 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %8 = stablehlo.add %6, %7 : tensor<6xf32>
    return %0, %4, %8 : tensor<i64>, tensor<6xf32>, tensor<6xf32>
  }
}
