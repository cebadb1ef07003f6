fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let bytes = if bytes.starts_with(b"ML\xefR") {
        bytes
    } else {
        pjrt_formats::jax_export::JaxExport::from_bytes(&bytes).unwrap().mlir_module().to_vec()
    };
    match pjrt_stablehlo::read_bytecode(&bytes) {
        Ok(m) => print!("{}", pjrt_stablehlo::print(&m)),
        Err(e) => eprintln!("error: {e}"),
    }
}
