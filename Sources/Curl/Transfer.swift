internal import CCurl
import Posix
#if canImport(Glibc)
import Glibc
#endif

/// One request in flight: its easy handle, what it sends, what came back,
/// and the continuation to resume. Touched only by the client's thread.
final class Transfer {
    let easy: UnsafeMutableRawPointer
    let request: HTTPRequest
    let complete: @Sendable (Result<HTTPResponse, TransportError>) -> Void
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// The upload's file, and how far libcurl has read it.
    var upload: (file: FileDescriptor, offset: Int64)?
    var responseBody: [UInt8] = []
    var responseHeaders: [(name: String, value: String)] = []
    /// Where libcurl writes its error detail; it keeps the pointer, so the
    /// memory must stay put for the transfer's life.
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    init?(request: HTTPRequest, complete: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        guard let easy = curl_easy_init() else { return nil }
        self.easy = easy
        self.request = request
        self.complete = complete
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    /// Sets every option for this request. Returns an error message when an
    /// option is refused.
    func configure() -> String? {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failures: [String] = []
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK { failures.append("\(what): \(String(cString: curl_easy_strerror(code)))") }
        }
        check(ccurl_easy_setopt_string(easy, CURLOPT_URL, request.url), "URL")
        check(ccurl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        check(ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "nosignal")
        check(ccurl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0), "redirects")
        check(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1), "TLS peer verification")
        check(ccurl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2), "TLS host verification")
        if let caFile = request.caFile { check(ccurl_easy_setopt_string(easy, CURLOPT_CAINFO, caFile), "CA file") }
        check(ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeoutMilliseconds)), "connect timeout")
        check(ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(request.totalTimeoutMilliseconds)), "timeout")
        check(ccurl_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, request.lowSpeedBytesPerSecond), "low speed limit")
        check(ccurl_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, request.lowSpeedSeconds), "low speed time")
        if !request.isReplaySafe {
            check(ccurl_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1), "fresh connection")
        }
        check(ccurl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer), "error buffer")
        check(ccurl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, context), "private")
        check(ccurl_easy_setopt_write_function(easy, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            let n = size * count
            if transfer.responseBody.count + n > transfer.request.maxResponseBytes { return 0 }
            data!.withMemoryRebound(to: UInt8.self, capacity: n) {
                transfer.responseBody.append(contentsOf: UnsafeBufferPointer(start: $0, count: n))
            }
            return n
        }), "write function")
        check(ccurl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context), "write data")
        check(ccurl_easy_setopt_write_function(easy, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
            let n = size * count
            data!.withMemoryRebound(to: UInt8.self, capacity: n) {
                transfer.receivedHeaderLine(UnsafeBufferPointer(start: $0, count: n))
            }
            return n
        }), "header function")
        check(ccurl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context), "header data")

        // An empty Expect: stops curl waiting for "100 Continue" before a body.
        var headers = request.headers + [("Expect", request.expectsContinue ? "100-continue" : "")]
        switch request.body {
        case .none:
            if request.method == "GET" {
                check(ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1), "GET")
            } else if request.method == "HEAD" {
                // No body follows a HEAD's answer, whatever its Content-Length says.
                check(ccurl_easy_setopt_long(easy, CURLOPT_NOBODY, 1), "HEAD")
            } else {
                check(ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method), "method")
            }
        case .bytes(let bytes):
            check(ccurl_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count)), "body size")
            bytes.withUnsafeBytes { raw in
                check(ccurl_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)), "body")
            }
            if request.method != "POST" {
                check(ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method), "method")
            }
        case .file, .filePart:
            let (file, offset, size): (FileDescriptor, Int64, Int64) = switch request.body {
            case .filePart(let file, let offset, let size): (file, offset, size)
            case .file(let file, let size): (file, 0, size)
            default: preconditionFailure("a file body")
            }
            upload = (file, offset)
            check(ccurl_easy_setopt_long(easy, CURLOPT_UPLOAD, 1), "upload")
            check(ccurl_easy_setopt_off(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(size)), "upload size")
            check(ccurl_easy_setopt_read_function(easy, CURLOPT_READFUNCTION, { buffer, size, count, context in
                let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
                guard let (file, offset) = transfer.upload,
                      let n = try? file.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count), at: offset)
                else { return Int(CURL_READFUNC_ABORT) }
                transfer.upload = (file, offset + Int64(n))
                return n
            }), "read function")
            check(ccurl_easy_setopt_pointer(easy, CURLOPT_READDATA, context), "read data")
            if request.method != "PUT" {
                check(ccurl_easy_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method), "method")
            }
            headers.append(("Transfer-Encoding", ""))
        }
        for (name, value) in headers {
            // "Name;" sends an empty header; "Name:" removes one curl would add.
            let line = value.isEmpty ? "\(name):" : "\(name): \(value)"
            headerList = curl_slist_append(headerList, line)
        }
        check(ccurl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList), "headers")
        return failures.isEmpty ? nil : failures.joined(separator: "; ")
    }

    /// One header line as libcurl hands it over (with its CRLF), read as
    /// bytes: the name lowercased, the value without surrounding blanks.
    func receivedHeaderLine(_ line: UnsafeBufferPointer<UInt8>) {
        if line.starts(with: "HTTP/".utf8) {
            // A new status line (after a 100 Continue, say): start over.
            responseHeaders = []
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = colon + 1, end = line.count
        while start < end && isBlank(line[start]) { start += 1 }
        while end > start && isBlank(line[end - 1]) { end -= 1 }
        let name = String(decoding: line[..<colon].lazy.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
        responseHeaders.append((name, String(decoding: UnsafeBufferPointer(rebasing: line[start..<end]), as: UTF8.self)))
    }

    /// Finishes with libcurl's result for this transfer.
    func finish(_ code: CURLcode) {
        guard code == CURLE_OK else {
            let detail = String(cString: errorBuffer)
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            // CURLINFO_REQUEST_SIZE counts the request bytes actually sent.
            var sent = 0
            _ = ccurl_easy_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &sent)
            complete(.failure(TransportError(code: Int32(code.rawValue), message: message, requestSent: sent > 0)))
            return
        }
        var status = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        complete(.success(HTTPResponse(status: status, headers: responseHeaders, body: responseBody)))
    }
}
