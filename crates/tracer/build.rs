//! Compiles `tracer.c` into the shared library `libmolsift_tracer.so` in `OUT_DIR`, for
//! `src/lib.rs` to embed. The `cc` crate finds the C compiler (and honours `CC`, `CFLAGS` and
//! cross-compiling targets) and gives its position-independent, optimised flags; this script
//! adds what a preloaded library needs (`-shared`, hidden symbols but the wrapped calls,
//! `-ldl -lpthread`). A C compiler is needed anyway: zstd's sources are C too.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=tracer.c");
    let source = PathBuf::from(env("CARGO_MANIFEST_DIR")).join("tracer.c");
    let library = PathBuf::from(env("OUT_DIR")).join("libmolsift_tracer.so");
    let compiler = cc::Build::new()
        .opt_level(2)
        .pic(true)
        .debug(false)
        .get_compiler();
    let cc = compiler.path().display().to_string();
    let status = compiler
        .to_command()
        .args([
            "-shared",
            "-fvisibility=hidden",
            "-fno-delete-null-pointer-checks",
        ])
        .arg("-o")
        .arg(&library)
        .arg(&source)
        .args(["-ldl", "-lpthread"])
        .status()
        .unwrap_or_else(|e| panic!("molsift-tracer: cannot run the C compiler {cc}: {e}"));
    assert!(
        status.success(),
        "molsift-tracer: {cc} could not compile {} ({status})",
        source.display()
    );
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}
