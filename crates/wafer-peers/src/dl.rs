//! Peers' C libraries opened at run time: the build needs none of them installed, and a missing
//! one is an error naming the Debian package that ships it.

use libloading::Library;

use super::error::PeerError;

/// Opens the first of `names` that loads; `package` is what to install when none does.
pub(crate) fn open_first(names: &[&str], package: &str) -> Result<Library, PeerError> {
    let mut last = String::new();
    for name in names {
        // SAFETY: these are the peers' own shared libraries (Debian packages); their
        // initialisers are the libraries' documented ones and run once per process.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok(lib),
            Err(e) => last = e.to_string(),
        }
    }
    Err(PeerError::Missing { library: names.join(" or "), package: package.into(), reason: last })
}

/// A table of C functions from one library: `api!(Name { fn f(args) -> ret; ... })` declares
/// `Name { f: unsafe extern "C" fn(args) -> ret, ... }` and `Name::load(names, package)`.
macro_rules! c_api {
    ($name:ident { $( fn $f:ident( $($arg:ty),* ) -> $ret:ty; )* }) => {
        #[allow(non_snake_case)]
        pub(crate) struct $name {
            _lib: libloading::Library,
            $( pub(crate) $f: unsafe extern "C" fn($($arg),*) -> $ret, )*
        }
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }
        #[allow(non_snake_case)]
        impl $name {
            pub(crate) fn load(names: &[&str], package: &str) -> Result<$name, super::error::PeerError> {
                let lib = super::dl::open_first(names, package)?;
                $(
                    // SAFETY: the signature is the one the library's header declares for
                    // this symbol (transcribed beside it); the pointer stays valid while
                    // `_lib` is held, which this struct does.
                    let $f = unsafe {
                        *lib.get::<unsafe extern "C" fn($($arg),*) -> $ret>(
                            concat!(stringify!($f), "\0").as_bytes(),
                        )
                        .map_err(|e| super::error::PeerError::Missing {
                            library: names.join(" or "),
                            package: package.into(),
                            reason: e.to_string(),
                        })?
                    };
                )*
                Ok($name { _lib: lib, $($f,)* })
            }
        }
    };
}
pub(crate) use c_api;

/// A C string from a Rust one (paths and configuration strings never hold NUL in practice;
/// one that does is refused).
pub(crate) fn cstring(text: &str) -> Result<std::ffi::CString, PeerError> {
    std::ffi::CString::new(text).map_err(|_| PeerError::Config(format!("`{text}` holds a NUL")))
}

/// The text of a C string the library owns, or `fallback` for a null pointer.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string valid for the call.
pub(crate) unsafe fn text_of(ptr: *const std::ffi::c_char, fallback: &str) -> String {
    if ptr.is_null() {
        return fallback.to_string();
    }
    // SAFETY: the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}
