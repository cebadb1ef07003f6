module @jit__lambda attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<3xi32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<4x3xf32> {jax.result_info = "result[1]"}, tensor<3xf32> {jax.result_info = "result[2]"}, tensor<4x4xf32> {jax.result_info = "result[3]"}, tensor<4x4xf32> {jax.result_info = "result[4]"}, tensor<4x4xf32> {jax.result_info = "result[5]"}, tensor<4x4xf32> {jax.result_info = "result[6]"}, tensor<3x1xf32> {jax.result_info = "result[7]"}, tensor<2x2xf32> {jax.result_info = "result[8]"}, tensor<4x4xf32> {jax.result_info = "result[9]"}) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i64>
    %c_1 = stablehlo.constant dense<4> : tensor<i64>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %cst_2 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %c_3 = stablehlo.constant dense<0> : tensor<i64>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %c_6 = stablehlo.constant dense<4> : tensor<i32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %2 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<3xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<3xi1>, tensor<3xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %6 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}> : (tensor<4x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
    %7 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %8 = stablehlo.compare LT, %arg1, %7, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %9 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %10 = stablehlo.add %arg1, %9 : tensor<3xi32>
    %11 = stablehlo.select %8, %10, %arg1 : tensor<3xi1>, tensor<3xi32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %13 = "stablehlo.gather"(%arg0, %12) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 4, 1>}> : (tensor<4x4xf32>, tensor<3x1xi32>) -> tensor<4x3xf32>
    %14 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %15 = stablehlo.compare LT, %arg1, %14, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %16 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %17 = stablehlo.add %arg1, %16 : tensor<3xi32>
    %18 = stablehlo.select %15, %17, %arg1 : tensor<3xi1>, tensor<3xi32>
    %19 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %20 = stablehlo.compare LT, %arg1, %19, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %21 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %22 = stablehlo.add %arg1, %21 : tensor<3xi32>
    %23 = stablehlo.select %20, %22, %arg1 : tensor<3xi1>, tensor<3xi32>
    %24 = stablehlo.broadcast_in_dim %18, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %25 = stablehlo.broadcast_in_dim %23, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %26 = stablehlo.concatenate %24, %25, dim = 1 : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x2xi32>
    %27 = "stablehlo.gather"(%arg0, %26) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>}> : (tensor<4x4xf32>, tensor<3x2xi32>) -> tensor<3xf32>
    %28 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %29 = stablehlo.compare LT, %arg1, %28, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %30 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %31 = stablehlo.add %arg1, %30 : tensor<3xi32>
    %32 = stablehlo.select %29, %31, %arg1 : tensor<3xi1>, tensor<3xi32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %34 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %35 = "stablehlo.scatter"(%arg0, %33, %34) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %90 = stablehlo.add %arg2, %arg3 : tensor<f32>
      stablehlo.return %90 : tensor<f32>
    }) : (tensor<4x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %36 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %37 = stablehlo.compare LT, %arg1, %36, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %38 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %39 = stablehlo.add %arg1, %38 : tensor<3xi32>
    %40 = stablehlo.select %37, %39, %arg1 : tensor<3xi1>, tensor<3xi32>
    %41 = stablehlo.broadcast_in_dim %40, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %42 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %43 = "stablehlo.scatter"(%arg0, %41, %42) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      stablehlo.return %arg3 : tensor<f32>
    }) : (tensor<4x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %44 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %45 = stablehlo.compare LT, %arg1, %44, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %46 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %47 = stablehlo.add %arg1, %46 : tensor<3xi32>
    %48 = stablehlo.select %45, %47, %arg1 : tensor<3xi1>, tensor<3xi32>
    %49 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %50 = stablehlo.convert %49 : (tensor<3xi64>) -> tensor<3xi32>
    %51 = stablehlo.broadcast_in_dim %48, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %52 = stablehlo.broadcast_in_dim %50, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %53 = stablehlo.concatenate %51, %52, dim = 1 : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x2xi32>
    %54 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %55 = "stablehlo.scatter"(%arg0, %53, %54) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %90 = stablehlo.maximum %arg2, %arg3 : tensor<f32>
      stablehlo.return %90 : tensor<f32>
    }) : (tensor<4x4xf32>, tensor<3x2xi32>, tensor<3xf32>) -> tensor<4x4xf32>
    %56 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %57 = stablehlo.compare LT, %arg1, %56, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %58 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %59 = stablehlo.add %arg1, %58 : tensor<3xi32>
    %60 = stablehlo.select %57, %59, %arg1 : tensor<3xi1>, tensor<3xi32>
    %61 = stablehlo.broadcast_in_dim %60, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %62 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %63 = "stablehlo.scatter"(%arg0, %61, %62) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %90 = stablehlo.multiply %arg2, %arg3 : tensor<f32>
      stablehlo.return %90 : tensor<f32>
    }) : (tensor<4x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<4x4xf32>
    %64 = stablehlo.slice %arg0 [0:3, 0:4] : (tensor<4x4xf32>) -> tensor<3x4xf32>
    %65 = stablehlo.abs %arg1 : tensor<3xi32>
    %66 = stablehlo.broadcast_in_dim %65, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %67 = call @remainder(%66, %c_1) : (tensor<3x1xi32>, tensor<i64>) -> tensor<3x1xi32>
    %68 = call @take_along_axis(%64, %67) : (tensor<3x4xf32>, tensor<3x1xi32>) -> tensor<3x1xf32>
    %69 = stablehlo.slice %arg1 [0:1] : (tensor<3xi32>) -> tensor<1xi32>
    %70 = stablehlo.reshape %69 : (tensor<1xi32>) -> tensor<i32>
    %71 = call @remainder_0(%70, %c_0) : (tensor<i32>, tensor<i64>) -> tensor<i32>
    %72 = stablehlo.compare LT, %71, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %73 = stablehlo.add %71, %c_6 : tensor<i32>
    %74 = stablehlo.select %72, %73, %71 : tensor<i1>, tensor<i32>
    %75 = stablehlo.compare LT, %c, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %76 = stablehlo.add %c, %c_6 : tensor<i32>
    %77 = stablehlo.select %75, %76, %c : tensor<i1>, tensor<i32>
    %78 = stablehlo.dynamic_slice %arg0, %74, %77, sizes = [2, 2] : (tensor<4x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x2xf32>
    %79 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    %80 = stablehlo.slice %arg1 [1:2] : (tensor<3xi32>) -> tensor<1xi32>
    %81 = stablehlo.reshape %80 : (tensor<1xi32>) -> tensor<i32>
    %82 = call @remainder_0(%81, %c_0) : (tensor<i32>, tensor<i64>) -> tensor<i32>
    %83 = stablehlo.compare LT, %82, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %84 = stablehlo.add %82, %c_6 : tensor<i32>
    %85 = stablehlo.select %83, %84, %82 : tensor<i1>, tensor<i32>
    %86 = stablehlo.compare LT, %c_7, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %87 = stablehlo.add %c_7, %c_6 : tensor<i32>
    %88 = stablehlo.select %86, %87, %c_7 : tensor<i1>, tensor<i32>
    %89 = stablehlo.dynamic_update_slice %arg0, %79, %85, %88 : (tensor<4x4xf32>, tensor<2x2xf32>, tensor<i32>, tensor<i32>) -> tensor<4x4xf32>
    return %6, %13, %27, %35, %43, %55, %63, %68, %78, %89 : tensor<3x4xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<3x1xf32>, tensor<2x2xf32>, tensor<4x4xf32>
  }
  func.func private @remainder(%arg0: tensor<3x1xi32>, %arg1: tensor<i64>) -> tensor<3x1xi32> {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.convert %arg1 : (tensor<i64>) -> tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = call @_where(%1, %c, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<3x1xi32>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x1xi1>
    %7 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x1xi1>
    %9 = stablehlo.compare LT, %2, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<3x1xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<3x1xi1>, tensor<3x1xi1>) -> tensor<3x1xi1>
    %12 = stablehlo.and %11, %6 : tensor<3x1xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %14 = stablehlo.add %4, %13 : tensor<3x1xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<3x1xi1>, tensor<3x1xi32>
    return %15 : tensor<3x1xi32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @take_along_axis(%arg0: tensor<3x4xf32>, %arg1: tensor<3x1xi32>) -> tensor<3x1xf32> {
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %c_0 = stablehlo.constant dense<3> : tensor<1xi32>
    %c_1 = stablehlo.constant dense<4> : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x1xi1>
    %2 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<3x1xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<3x1xi1>, tensor<3x1xi32>
    %5 = stablehlo.reshape %4 : (tensor<3x1xi32>) -> tensor<3x1x1xi32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<3x1x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<3x1x1xi32>, tensor<3x1x1xi32>) -> tensor<3x1x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [2] : (tensor<1xi32>) -> tensor<1x1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2] : (tensor<1x1x1xi32>) -> tensor<3x1x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<3x1x1xi32>, tensor<3x1x1xi32>) -> tensor<3x1x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<3x1x1xi1>
    %12 = stablehlo.reduce(%11 init: %c) applies stablehlo.and across dimensions = [2] : (tensor<3x1x1xi1>, tensor<i1>) -> tensor<3x1xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>}> : (tensor<3x4xf32>, tensor<3x1x1xi32>) -> tensor<3x1xf32>
    %14 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x1xf32>
    %15 = stablehlo.select %12, %13, %14 : tensor<3x1xi1>, tensor<3x1xf32>
    return %15 : tensor<3x1xf32>
  }
  func.func private @remainder_0(%arg0: tensor<i32>, %arg1: tensor<i64>) -> tensor<i32> {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.convert %arg1 : (tensor<i64>) -> tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = call @_where(%1, %c, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.remainder %arg0, %2 : tensor<i32>
    %4 = stablehlo.compare NE, %3, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %5 = stablehlo.compare LT, %3, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %6 = stablehlo.compare LT, %2, %c_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.compare NE, %5, %6, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %8 = stablehlo.and %7, %4 : tensor<i1>
    %9 = stablehlo.add %3, %2 : tensor<i32>
    %10 = stablehlo.select %8, %9, %3 : tensor<i1>, tensor<i32>
    return %10 : tensor<i32>
  }
}
