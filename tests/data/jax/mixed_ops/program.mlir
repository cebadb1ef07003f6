module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10xf32>, %arg1: tensor<6xi32>, %arg2: tensor<6xf32>, %arg3: tensor<3x4xf32>, %arg4: tensor<i32>) -> (tensor<6xf32> {jax.result_info = "result[0]"}, tensor<10xf32> {jax.result_info = "result[1]"}, tensor<3x4xf32> {jax.result_info = "result[2]"}, tensor<3x4xf32> {jax.result_info = "result[3]"}, tensor<3x4xf32> {jax.result_info = "result[4]"}, tensor<3x4xi32> {jax.result_info = "result[5]"}, tensor<3x4xf16> {jax.result_info = "result[6]"}, tensor<3x4xui8> {jax.result_info = "result[7]"}, tensor<5xi32> {jax.result_info = "result[8]"}, tensor<10xf32> {jax.result_info = "result[9]"}, tensor<3x4xf32> {jax.result_info = "result[10]"}, tensor<4xf32> {jax.result_info = "result[11]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_0 = stablehlo.constant dense<10> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<6xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<6xi1>, tensor<6xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %6 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<10xf32>, tensor<6x1xi32>) -> tensor<6xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %8 = stablehlo.compare LT, %arg1, %7, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_2 = stablehlo.constant dense<10> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %10 = stablehlo.add %arg1, %9 : tensor<6xi32>
    %11 = stablehlo.select %8, %10, %arg1 : tensor<6xi1>, tensor<6xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %13 = "stablehlo.scatter"(%arg0, %12, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %49 = stablehlo.add %arg5, %arg6 : tensor<f32>
      stablehlo.return %49 : tensor<f32>
    }) : (tensor<10xf32>, tensor<6x1xi32>, tensor<6xf32>) -> tensor<10xf32>
    %14 = call @sort(%arg3) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %16 = stablehlo.compare GT, %arg3, %15, FLOAT : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
    %17 = stablehlo.negate %arg3 : tensor<3x4xf32>
    %cst_3 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %19 = stablehlo.multiply %17, %18 : tensor<3x4xf32>
    %20 = call @_where(%16, %arg3, %19) : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %21 = stablehlo.reduce(%arg3 init: %cst_4) applies stablehlo.maximum across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %22 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %23 = stablehlo.maximum %22, %21 : tensor<3xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0] : (tensor<3xf32>) -> tensor<3x1xf32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [0, 1] : (tensor<3x1xf32>) -> tensor<3x4xf32>
    %26 = stablehlo.subtract %arg3, %25 : tensor<3x4xf32>
    %27 = stablehlo.exponential %26 : tensor<3x4xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %28 = stablehlo.reduce(%27 init: %cst_6) applies stablehlo.add across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [0] : (tensor<3xf32>) -> tensor<3x1xf32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [0, 1] : (tensor<3x1xf32>) -> tensor<3x4xf32>
    %31 = stablehlo.divide %27, %30 : tensor<3x4xf32>
    %cst_7 = stablehlo.constant dense<1.000000e+01> : tensor<f32>
    %32 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %33 = stablehlo.multiply %arg3, %32 : tensor<3x4xf32>
    %34 = stablehlo.convert %33 : (tensor<3x4xf32>) -> tensor<3x4xi32>
    %35 = stablehlo.convert %34 : (tensor<3x4xi32>) -> tensor<3x4xf16>
    %36 = stablehlo.abs %34 : tensor<3x4xi32>
    %37 = stablehlo.convert %36 : (tensor<3x4xi32>) -> tensor<3x4xui8>
    %38 = stablehlo.iota dim = 0 : tensor<5xi32>
    %c_8 = stablehlo.constant dense<2> : tensor<i32>
    %39 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<5xi32>
    %40 = stablehlo.multiply %38, %39 : tensor<5xi32>
    %41 = stablehlo.slice %arg0 [0:4] : (tensor<10xf32>) -> tensor<4xf32>
    %42 = stablehlo.concatenate %41, %arg2, dim = 0 : (tensor<4xf32>, tensor<6xf32>) -> tensor<10xf32>
    %43 = stablehlo.reshape %arg3 : (tensor<3x4xf32>) -> tensor<4x3xf32>
    %44 = stablehlo.transpose %43, dims = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %c_9 = stablehlo.constant dense<0> : tensor<i32>
    %45 = stablehlo.compare LT, %arg4, %c_9, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_10 = stablehlo.constant dense<10> : tensor<i32>
    %46 = stablehlo.add %arg4, %c_10 : tensor<i32>
    %47 = stablehlo.select %45, %46, %arg4 : tensor<i1>, tensor<i32>
    %48 = stablehlo.dynamic_slice %arg0, %47, sizes = [4] : (tensor<10xf32>, tensor<i32>) -> tensor<4xf32>
    return %6, %13, %14, %20, %31, %34, %35, %37, %40, %42, %44, %48 : tensor<6xf32>, tensor<10xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xi32>, tensor<3x4xf16>, tensor<3x4xui8>, tensor<5xi32>, tensor<10xf32>, tensor<3x4xf32>, tensor<4xf32>
  }
  func.func private @sort(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.compare EQ, %arg1, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.select %1, %cst_0, %arg1 : tensor<i1>, tensor<f32>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_1 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %4 = stablehlo.select %3, %cst_1, %2 : tensor<i1>, tensor<f32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.compare EQ, %arg2, %cst_2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %6 = stablehlo.select %5, %cst_3, %arg2 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %8 = stablehlo.select %7, %cst_4, %6 : tensor<i1>, tensor<f32>
      %9 = stablehlo.compare LT, %4, %8, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    }) : (tensor<3x4xf32>) -> tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
  func.func private @_where(%arg0: tensor<3x4xi1>, %arg1: tensor<3x4xf32>, %arg2: tensor<3x4xf32>) -> tensor<3x4xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3x4xi1>, tensor<3x4xf32>
    return %0 : tensor<3x4xf32>
  }
}
