import Digest
import Testing

@Suite struct DigestTests {
    @Test func sha256_matchesKnownVectors() {
        #expect(Hex.encode(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexDigest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func sha256_incrementalEqualsOneShot() {
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var hasher = SHA256()
        for chunk in stride(from: 0, to: bytes.count, by: 7777) {
            hasher.update(Array(bytes[chunk..<min(chunk + 7777, bytes.count)]))
        }
        #expect(hasher.finalize() == SHA256.hash(bytes))
    }

    @Test func base64_roundTripsAndRejectsGarbage() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8($0 * 7 & 0xFF) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode(Array("hello".utf8)) == "aGVsbG8=")
        #expect(Base64.decode("aGVsbG8") == nil)
        #expect(Base64.decode("aGV*bG8=") == nil)
        #expect(Base64.decode("a===") == nil)
    }
}
