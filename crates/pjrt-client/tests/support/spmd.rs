//! SPMD programs shared by the multi-device tests of pjrt-client (run on the CPU plugins) and of
//! pjrt-cli (compiled for GPU targets): one copy of each.

#![allow(dead_code)]

/// y = x @ w + b over `n` partitions, GSPMD style (as JAX writes it with
/// jax_use_shardy_partitioner=False): x (8n×4) sharded on rows, w and b replicated, y sharded on
/// rows, and the column sums of y replicated (a cross-partition all-reduce made by the
/// partitioner).
pub fn matmul_rows(n: usize) -> String {
    let rows = 2 * n;
    format!(
        r#"
module @matmul_rows attributes {{mhlo.num_partitions = {n} : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%x: tensor<{rows}x4xf32> {{mhlo.sharding = "{{devices=[{n},1]<=[{n}]}}"}}, %w: tensor<4x3xf32> {{mhlo.sharding = "{{replicated}}"}}, %b: tensor<3xf32> {{mhlo.sharding = "{{replicated}}"}}) -> (tensor<{rows}x3xf32> {{mhlo.sharding = "{{devices=[{n},1]<=[{n}]}}"}}, tensor<3xf32> {{mhlo.sharding = "{{replicated}}"}}) {{
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<{rows}x4xf32>, tensor<4x3xf32>) -> tensor<{rows}x3xf32>
    %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<{rows}x3xf32>
    %2 = stablehlo.add %0, %1 : tensor<{rows}x3xf32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<{rows}x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %2, %3 : tensor<{rows}x3xf32>, tensor<3xf32>
  }}
}}"#
    )
}

/// y = x @ w with the contracting dimension sharded: x (2×4n) on columns, w (4n×3) on rows, y
/// replicated — each partition computes a partial product and the partitioner all-reduces them.
pub const MATMUL_CONTRACTING_4: &str = r#"
module @matmul_contracting attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<2x16xf32> {mhlo.sharding = "{devices=[1,4]<=[4]}"}, %w: tensor<16x3xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}) -> (tensor<2x3xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x3xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}"#;
