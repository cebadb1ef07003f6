#loc2 = loc("-":2:24)
#loc3 = loc("-":2:45)
#loc6 = loc("-":5:8)
#loc7 = loc("-":5:25)
#loc12 = loc("-":11:8)
#loc13 = loc("-":11:25)
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x2xf32>, tensor<8xf32>) -> (tensor<8x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32>, tensor<4x2xf32>, tensor<4x2xf32>), sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4x2xf32> loc("-":2:24), %arg1: tensor<8xf32> loc("-":2:45)):
    %0 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}> : (tensor<4x2xf32>) -> tensor<8x2xf32> loc(#loc4)
    %1 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
    ^bb0(%arg4: tensor<f32> loc("-":5:8), %arg5: tensor<f32> loc("-":5:25)):
      %7 = "stablehlo.add"(%arg4, %arg5) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(#loc8)
      "stablehlo.return"(%7) : (tensor<f32>) -> () loc(#loc9)
    }) : (tensor<4x2xf32>) -> tensor<4x2xf32> loc(#loc5)
    %2 = "stablehlo.all_to_all"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 0>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, split_count = 2 : i64, split_dimension = 0 : i64}> : (tensor<4x2xf32>) -> tensor<4x2xf32> loc(#loc10)
    %3 = "stablehlo.reduce_scatter"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 4, type = 0>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, scatter_dimension = 0 : i64}> ({
    ^bb0(%arg2: tensor<f32> loc("-":11:8), %arg3: tensor<f32> loc("-":11:25)):
      %6 = "stablehlo.add"(%arg2, %arg3) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(#loc14)
      "stablehlo.return"(%6) : (tensor<f32>) -> () loc(#loc15)
    }) : (tensor<8xf32>) -> tensor<4xf32> loc(#loc11)
    %4 = "stablehlo.collective_permute"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 5, type = 0>, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<4x2xf32>) -> tensor<4x2xf32> loc(#loc16)
    %5 = "stablehlo.cross-replica-sum"(%arg0) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> : (tensor<4x2xf32>) -> tensor<4x2xf32> loc(#loc17)
    "func.return"(%0, %1, %2, %3, %4, %5) : (tensor<8x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>, tensor<4xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> () loc(#loc18)
  }) : () -> () loc(#loc1)
}) : () -> () loc(#loc)
#loc = loc("-":1:1)
#loc1 = loc("-":2:1)
#loc4 = loc("-":3:8)
#loc5 = loc("-":4:8)
#loc8 = loc("-":6:10)
#loc9 = loc("-":7:5)
#loc10 = loc("-":9:8)
#loc11 = loc("-":10:8)
#loc14 = loc("-":12:10)
#loc15 = loc("-":13:5)
#loc16 = loc("-":15:8)
#loc17 = loc("-":16:8)
#loc18 = loc("-":17:3)
