import CCurl

/// Sets options on an easy handle with the argument type each option documents, through the
/// fixed-signature wrappers of the CCurl shim (`curl_easy_setopt` itself is variadic).
enum CurlOptionSetter {
    /// Options documented as taking a `long`.
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: Int) -> CURLcode {
        seedkit_curl_setopt_long(handle, option, value)
    }

    /// Options documented as taking a `curl_off_t` (the `_LARGE` ones).
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, offset value: Int64) -> CURLcode {
        seedkit_curl_setopt_off_t(handle, option, curl_off_t(value))
    }

    /// Options documented as taking a pointer (strings, lists, callback data).
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: UnsafeRawPointer?) -> CURLcode {
        seedkit_curl_setopt_pointer(handle, option, value)
    }

    /// String options; libcurl copies the string before returning.
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: String) -> CURLcode {
        value.withCString { set(handle, option, UnsafeRawPointer($0)) }
    }

    /// Write and header callbacks.
    static func set(_ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: curl_write_callback) -> CURLcode {
        seedkit_curl_setopt_write(handle, option, value)
    }

    /// The progress callback.
    static func set(
        _ handle: UnsafeMutableRawPointer, _ option: CURLoption, _ value: curl_xferinfo_callback
    ) -> CURLcode {
        seedkit_curl_setopt_xferinfo(handle, option, value)
    }
}
