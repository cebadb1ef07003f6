module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<5xf32>) -> (tensor<5xf32> {jax.result_info = "result[0]"}, tensor<5xf32> {jax.result_info = "result[1]"}, tensor<5xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<i1>) -> tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %9 = stablehlo.cosine %arg2 : tensor<5xf32>
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %10 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5xf32>
      %11 = stablehlo.subtract %9, %10 : tensor<5xf32>
      stablehlo.return %11 : tensor<5xf32>
    }, {
      %9 = stablehlo.sine %arg2 : tensor<5xf32>
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %10 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5xf32>
      %11 = stablehlo.multiply %9, %10 : tensor<5xf32>
      stablehlo.return %11 : tensor<5xf32>
    }) : (tensor<i32>) -> tensor<5xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.compare GT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %3 = stablehlo.convert %2 : (tensor<i1>) -> tensor<i32>
    %4 = "stablehlo.case"(%3) ({
      %9 = stablehlo.multiply %arg2, %arg2 : tensor<5xf32>
      stablehlo.return %9 : tensor<5xf32>
    }, {
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5xf32>
      %10 = stablehlo.add %arg2, %9 : tensor<5xf32>
      stablehlo.return %10 : tensor<5xf32>
    }) : (tensor<i32>) -> tensor<5xf32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %5 = stablehlo.add %arg1, %c_0 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i64>
    %c_2 = stablehlo.constant dense<2> : tensor<i64>
    %6 = call @clip(%5, %c_1, %c_2) : (tensor<i32>, tensor<i64>, tensor<i64>) -> tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %c_4 = stablehlo.constant dense<2> : tensor<i32>
    %7 = stablehlo.clamp %c_3, %6, %c_4 : tensor<i32>
    %8 = "stablehlo.case"(%7) ({
      %9 = stablehlo.negate %arg2 : tensor<5xf32>
      stablehlo.return %9 : tensor<5xf32>
    }, {
      %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5xf32>
      %10 = stablehlo.multiply %arg2, %9 : tensor<5xf32>
      stablehlo.return %10 : tensor<5xf32>
    }, {
      %9 = stablehlo.exponential %arg2 : tensor<5xf32>
      stablehlo.return %9 : tensor<5xf32>
    }) : (tensor<i32>) -> tensor<5xf32>
    return %1, %4, %8 : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
  }
  func.func private @clip(%arg0: tensor<i32>, %arg1: tensor<i64>, %arg2: tensor<i64>) -> tensor<i32> {
    %0 = stablehlo.convert %arg1 : (tensor<i64>) -> tensor<i32>
    %1 = stablehlo.maximum %0, %arg0 : tensor<i32>
    %2 = stablehlo.convert %arg2 : (tensor<i64>) -> tensor<i32>
    %3 = stablehlo.minimum %2, %1 : tensor<i32>
    return %3 : tensor<i32>
  }
}
