module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<3xf32>, %arg2: tensor<4x8xf32>, %arg3: tensor<8x3xf32>, %arg4: tensor<5x4xf32>, %arg5: tensor<5x3xf32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]['b1']"}, tensor<3xf32> {jax.result_info = "result[1]['b2']"}, tensor<4x8xf32> {jax.result_info = "result[1]['w1']"}, tensor<8x3xf32> {jax.result_info = "result[1]['w2']"}) {
    %0 = stablehlo.dot_general %arg4, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x4xf32>, tensor<4x8xf32>) -> tensor<5x8xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<8xf32>) -> tensor<1x8xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x8xf32>) -> tensor<5x8xf32>
    %3 = stablehlo.add %0, %2 : tensor<5x8xf32>
    %4 = stablehlo.tanh %3 : tensor<5x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x8xf32>
    %6 = stablehlo.subtract %5, %4 : tensor<5x8xf32>
    %7 = stablehlo.dot_general %4, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x8xf32>, tensor<8x3xf32>) -> tensor<5x3xf32>
    %8 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<3xf32>) -> tensor<1x3xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x3xf32>) -> tensor<5x3xf32>
    %10 = stablehlo.add %7, %9 : tensor<5x3xf32>
    %11 = stablehlo.negate %10 : tensor<5x3xf32>
    %12 = stablehlo.exponential %11 : tensor<5x3xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<5x3xf32>
    %14 = stablehlo.add %13, %12 : tensor<5x3xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<5x3xf32>
    %16 = stablehlo.divide %15, %14 : tensor<5x3xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<5x3xf32>
    %18 = stablehlo.subtract %17, %16 : tensor<5x3xf32>
    %19 = stablehlo.multiply %16, %18 : tensor<5x3xf32>
    %20 = stablehlo.subtract %16, %arg5 : tensor<5x3xf32>
    %21 = stablehlo.multiply %20, %20 : tensor<5x3xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<5x3xf32>
    %23 = stablehlo.multiply %22, %20 : tensor<5x3xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %24 = stablehlo.reduce(%21 init: %cst_4) applies stablehlo.add across dimensions = [0, 1] : (tensor<5x3xf32>, tensor<f32>) -> tensor<f32>
    %cst_5 = stablehlo.constant dense<1.500000e+01> : tensor<f32>
    %25 = stablehlo.divide %24, %cst_5 : tensor<f32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_7 = stablehlo.constant dense<1.500000e+01> : tensor<f32>
    %26 = stablehlo.divide %cst_6, %cst_7 : tensor<f32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<f32>) -> tensor<5x3xf32>
    %28 = stablehlo.multiply %27, %23 : tensor<5x3xf32>
    %29 = stablehlo.multiply %28, %19 : tensor<5x3xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %30 = stablehlo.reduce(%29 init: %cst_8) applies stablehlo.add across dimensions = [0] : (tensor<5x3xf32>, tensor<f32>) -> tensor<3xf32>
    %31 = stablehlo.reshape %30 : (tensor<3xf32>) -> tensor<1x3xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %32 = stablehlo.reduce(%31 init: %cst_9) applies stablehlo.add across dimensions = [0] : (tensor<1x3xf32>, tensor<f32>) -> tensor<3xf32>
    %33 = stablehlo.dot_general %29, %4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x3xf32>, tensor<5x8xf32>) -> tensor<3x8xf32>
    %34 = stablehlo.transpose %33, dims = [1, 0] : (tensor<3x8xf32>) -> tensor<8x3xf32>
    %35 = stablehlo.dot_general %29, %arg3, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<5x3xf32>, tensor<8x3xf32>) -> tensor<5x8xf32>
    %36 = stablehlo.multiply %35, %6 : tensor<5x8xf32>
    %37 = stablehlo.multiply %36, %4 : tensor<5x8xf32>
    %38 = stablehlo.add %36, %37 : tensor<5x8xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %39 = stablehlo.reduce(%38 init: %cst_10) applies stablehlo.add across dimensions = [0] : (tensor<5x8xf32>, tensor<f32>) -> tensor<8xf32>
    %40 = stablehlo.reshape %39 : (tensor<8xf32>) -> tensor<1x8xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %41 = stablehlo.reduce(%40 init: %cst_11) applies stablehlo.add across dimensions = [0] : (tensor<1x8xf32>, tensor<f32>) -> tensor<8xf32>
    %42 = stablehlo.dot_general %38, %arg4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x8xf32>, tensor<5x4xf32>) -> tensor<8x4xf32>
    %43 = stablehlo.transpose %42, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
    return %25, %41, %32, %43, %34 : tensor<f32>, tensor<8xf32>, tensor<3xf32>, tensor<4x8xf32>, tensor<8x3xf32>
  }
}
