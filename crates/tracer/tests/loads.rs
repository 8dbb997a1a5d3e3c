//! The embedded library is a loadable shared library that exports the calls it wraps.

use std::ffi::CString;

#[test]
fn the_embedded_library_loads_and_wraps_open_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(molsift_tracer::LIBRARY_NAME);
    std::fs::write(&path, molsift_tracer::LIBRARY).unwrap();
    let cpath = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; the library's constructor only reads its environment (no
    // MOLSIFT_TRACER_DIR here: it stays off) and resolves the real functions.
    let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    assert!(!handle.is_null(), "dlopen failed");
    for name in ["open", "read", "pwrite", "fopen", "fwrite", "_exit"] {
        let cname = CString::new(name).unwrap();
        // SAFETY: a valid handle and C string.
        let sym = unsafe { libc::dlsym(handle, cname.as_ptr()) };
        assert!(!sym.is_null(), "{name} is not found");
        // dlsym also searches the library's dependencies (libc): ask where the symbol lives.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: `sym` is an address in a loaded object; `info` is writable.
        assert_ne!(unsafe { libc::dladdr(sym, &mut info) }, 0);
        // SAFETY: dladdr succeeded, so dli_fname is a C string.
        let file = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        assert_eq!(
            file.to_bytes(),
            cpath.as_bytes(),
            "{name} is not the tracer's"
        );
    }
    // A symbol the tracer does not export (hidden visibility): not found in the library itself.
    let hidden = CString::new("init_once").unwrap();
    // SAFETY: as above.
    assert!(unsafe { libc::dlsym(handle, hidden.as_ptr()) }.is_null());
}
