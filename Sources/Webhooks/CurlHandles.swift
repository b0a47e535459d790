import CCurl
import CHeraldShims
import Glibc

/// libcurl's global state, set up once before the first handle (curl_global_init is not safe to
/// race with other libcurl calls).
enum CurlGlobal {
    static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
}

/// Owns one `CURLM` multi handle: the connection cache every delivery shares. Used by the
/// delivery thread only, except ``wakeUp()``, which libcurl allows from any thread.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    init?(maximumConnections: Int) {
        guard CurlGlobal.initialized, let handle = curl_multi_init() else { return nil }
        self.handle = handle
        _ = cherald_curl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, max(1, maximumConnections))
        // Several deliveries to one HTTP/2 receiver share its connection.
        _ = cherald_curl_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    deinit {
        curl_multi_cleanup(handle)
    }

    func add(_ easy: CurlEasy) -> Bool {
        curl_multi_add_handle(handle, easy.handle) == CURLM_OK
    }

    func remove(_ easy: CurlEasy) {
        curl_multi_remove_handle(handle, easy.handle)
    }

    /// Runs what is ready; returns false when libcurl reports a multi-level failure.
    func perform() -> Bool {
        var running: Int32 = 0
        return curl_multi_perform(handle, &running) == CURLM_OK
    }

    /// The next finished transfer: its easy handle and result.
    func nextFinished() -> (UnsafeMutableRawPointer, CURLcode)? {
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            var result = CURLE_OK
            if let easy = cherald_curl_msg_done(message, &result) { return (easy, result) }
        }
        return nil
    }

    /// Waits until a socket is ready, a timer of libcurl's is due, ``wakeUp()`` is called, or
    /// `milliseconds` pass.
    func poll(milliseconds: Int32) {
        _ = curl_multi_poll(handle, nil, 0, milliseconds, nil)
    }

    /// Ends a ``poll(milliseconds:)`` early; safe from any thread.
    func wakeUp() {
        _ = curl_multi_wakeup(handle)
    }
}

/// Owns one `CURL` easy handle and what libcurl reads during its transfer: the header lists, and
/// the callbacks' record of the answer. Touched by the delivery thread only; passed to the
/// callbacks as their user data, so it must outlive the transfer (it stays in the thread's table
/// until removed from the multi handle).
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    private var lists: [UnsafeMutablePointer<curl_slist>] = []

    /// The policy the open-socket callback applies.
    var allowPrivate = false
    /// Set by the open-socket callback when it refused the address curl was about to connect to.
    var refusedRange: WebhookAddressRange?
    /// Response header bytes (every header line, of every response of the transfer) so far.
    var headerBytes = 0
    var headerLimitExceeded = false
    var body: [UInt8] = []
    var bodyLimitExceeded = false

    init?() {
        guard CurlGlobal.initialized, let handle = curl_easy_init() else { return nil }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
        for list in lists { curl_slist_free_all(list) }
    }

    @discardableResult
    func set(_ option: CURLoption, _ value: Int) -> Bool {
        cherald_curl_easy_setopt_long(handle, option, value) == CURLE_OK
    }

    /// A string option; libcurl copies it.
    @discardableResult
    func set(_ option: CURLoption, _ value: String) -> Bool {
        value.withCString { cherald_curl_easy_setopt_pointer(handle, option, $0) } == CURLE_OK
    }

    /// A list option (`CURLOPT_HTTPHEADER`, `CURLOPT_RESOLVE`); the list lives as long as the handle.
    @discardableResult
    func set(_ option: CURLoption, list items: [String]) -> Bool {
        guard !items.isEmpty else { return true }
        var list: UnsafeMutablePointer<curl_slist>?
        for item in items {
            guard let appended = curl_slist_append(list, item) else {
                if let list { curl_slist_free_all(list) }
                return false
            }
            list = appended
        }
        guard let list else { return false }
        lists.append(list)
        return cherald_curl_easy_setopt_slist(handle, option, list) == CURLE_OK
    }

    /// The POST body, copied by libcurl.
    @discardableResult
    func setPostBody(_ body: [UInt8]) -> Bool {
        guard cherald_curl_easy_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)) == CURLE_OK
        else { return false }
        return body.withUnsafeBytes { cherald_curl_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
            == CURLE_OK
    }

    /// Trusted roots as PEM text (copied by libcurl) instead of its default bundle.
    @discardableResult
    func setTrustedRoots(_ pem: [UInt8]) -> Bool {
        pem.withUnsafeBytes { cherald_curl_easy_set_cainfo_blob(handle, $0.baseAddress, $0.count) } == CURLE_OK
    }

    /// Installs the header, body and open-socket callbacks with this object as their user data.
    func installCallbacks() {
        let user = Unmanaged.passUnretained(self).toOpaque()
        _ = cherald_curl_easy_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        _ = cherald_curl_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, user)
        _ = cherald_curl_easy_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION, curlBodyCallback)
        _ = cherald_curl_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, user)
        _ = cherald_curl_easy_setopt_opensocket(handle, curlOpenSocketCallback)
        _ = cherald_curl_easy_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, user)
    }

    /// The HTTP status of the last response, 0 when none arrived.
    var responseCode: Int {
        var code = 0
        _ = cherald_curl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    /// The HTTP version the response came in: 1 (HTTP/1.x), 2, or 0 when none arrived.
    var httpVersion: Int {
        var version = 0
        _ = cherald_curl_easy_getinfo_long(handle, CURLINFO_HTTP_VERSION, &version)
        switch version {
        case Int(CURL_HTTP_VERSION_2_0): return 2
        case Int(CURL_HTTP_VERSION_1_0), Int(CURL_HTTP_VERSION_1_1): return 1
        default: return 0
        }
    }

    /// The most response header bytes, and response body bytes, a delivery reads; beyond either
    /// the transfer is aborted (the receiver is dropped).
    static let maximumHeaderBytes = 64 * 1_024
    static let maximumBodyBytes = 64 * 1_024
}

/// CURLOPT_HEADERFUNCTION: counts the header list; returning less than given aborts the transfer.
private let curlHeaderCallback: cherald_curl_data_callback = { _, size, count, user in
    guard let user else { return 0 }
    let easy = Unmanaged<CurlEasy>.fromOpaque(user).takeUnretainedValue()
    let length = size * count
    easy.headerBytes += length
    guard easy.headerBytes <= CurlEasy.maximumHeaderBytes else {
        easy.headerLimitExceeded = true
        return 0
    }
    return length
}

/// CURLOPT_WRITEFUNCTION: keeps the body up to its limit; beyond it the transfer is aborted.
private let curlBodyCallback: cherald_curl_data_callback = { data, size, count, user in
    guard let user else { return 0 }
    let easy = Unmanaged<CurlEasy>.fromOpaque(user).takeUnretainedValue()
    let length = size * count
    guard easy.body.count + length <= CurlEasy.maximumBodyBytes else {
        easy.bodyLimitExceeded = true
        return 0
    }
    if let data, length > 0 {
        easy.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
    }
    return length
}

/// CURLOPT_OPENSOCKETFUNCTION: the destination policy on the address libcurl is about to connect
/// to, after every resolution, so a name that resolves elsewhere than it did at creation cannot
/// lead to a refused address. A refused address gets no socket: libcurl tries the host's next
/// address, if any, and otherwise fails with CURLE_COULDNT_CONNECT.
private let curlOpenSocketCallback: cherald_curl_opensocket_callback = { user, purpose, address in
    guard let user, let address, purpose == CURLSOCKTYPE_IPCXN else { return CURL_SOCKET_BAD }
    let easy = Unmanaged<CurlEasy>.fromOpaque(user).takeUnretainedValue()
    guard
        let destination = WebhookAddress(
            socketAddress: cherald_curl_sockaddr_address(address),
            length: Int(address.pointee.addrlen)
        )
    else {
        easy.refusedRange = .reserved
        return CURL_SOCKET_BAD
    }
    if !easy.allowPrivate, let range = destination.refusedRange {
        easy.refusedRange = range
        return CURL_SOCKET_BAD
    }
    return cherald_socket_stream(address.pointee.family)
}
