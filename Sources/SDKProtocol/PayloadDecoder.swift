import Compression
import Crypto
import Foundation
import _CryptoExtras

/// Why a record's payload could not be turned back into report bytes.
public enum PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
    case notBase64
    case tooShortForIV(Int)
    case ciphertextLength(Int)
    /// The padding did not check out: the wrong key, or a damaged payload.
    case cannotDecrypt
    case notGzip(encrypted: Bool)
    case gzip(CompressionError)

    public var description: String {
        switch self {
        case .notBase64:
            "payload is not base64 (RFC 4648, standard alphabet, padded)"
        case .tooShortForIV(let n):
            "encrypted payload is \(n) bytes; it must start with a 16-byte IV followed by at least one 16-byte block"
        case .ciphertextLength(let n):
            "encrypted payload has \(n) bytes after its 16-byte IV; AES-CBC ciphertext is a whole number of 16-byte blocks"
        case .cannotDecrypt:
            "payload cannot be decrypted with the namespace's key (bad PKCS#7 padding: wrong key or damaged payload)"
        case .notGzip(let encrypted):
            encrypted
                ? "decrypted payload is not gzip (it must be gzip before encryption; or the key is wrong)"
                : "payload is not gzip (base64 of gzip, or set \"encrypted\": true for an encrypted payload)"
        case .gzip(let error):
            "payload: gzip: \(error)"
        }
    }
}

/// payload → report bytes: base64, then (when encrypted) AES-CBC with the IV in the first 16
/// bytes and PKCS#7 padding, then gunzip with a size cap (docs/sdk-protocol.md).
public enum PayloadDecoder {
    public static let ivSize = 16
    static let blockSize = 16

    /// The report bytes of `payload`, decrypted with `key` when one is given (the record said
    /// `"encrypted": true`). Never inflates past `limit` bytes, nor past `Zlib.defaultMaxRatio`
    /// times the gzip: a bomb is refused from its trailer, or early (`Zlib.inflateUntrusted`).
    public static func decode(_ payload: String, decryptingWith key: NamespaceKey?, limit: Int) throws(PayloadError) -> Data {
        // Line breaks are tolerated (`base64` and `openssl base64` wrap lines); nothing else is.
        var text = payload
        if text.contains(where: { $0 == "\n" || $0 == "\r" }) {
            text.removeAll { $0 == "\n" || $0 == "\r" }
        }
        guard let sealed = Data(base64Encoded: text) else { throw .notBase64 }
        let gzip = try key.map { key throws(PayloadError) in try decrypt(sealed, key: key) } ?? sealed
        guard Zlib.isGzip(gzip) else { throw .notGzip(encrypted: key != nil) }
        do {
            return try Zlib.inflateUntrusted(gzip, limit: limit)
        } catch {
            throw .gzip(error)
        }
    }

    static func decrypt(_ sealed: Data, key: NamespaceKey) throws(PayloadError) -> Data {
        guard sealed.count >= ivSize + blockSize else { throw .tooShortForIV(sealed.count) }
        let ciphertext = sealed.dropFirst(ivSize)
        guard ciphertext.count % blockSize == 0 else { throw .ciphertextLength(ciphertext.count) }
        do {
            let iv = try AES._CBC.IV(ivBytes: sealed.prefix(ivSize))
            return try AES._CBC.decrypt(ciphertext, using: key.symmetricKey, iv: iv)
        } catch {
            // With a whole number of blocks and a valid key size, only the padding check can fail.
            throw .cannotDecrypt
        }
    }
}
