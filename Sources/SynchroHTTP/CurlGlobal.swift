import CCurl

/// libcurl's process-wide initialization, run once: Swift initializes a static `let` exactly once
/// and thread-safely, so no mutable global is needed.
enum CurlGlobal {
    /// Whether `curl_global_init` succeeded; read it before creating any easy handle.
    static let isInitialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}
