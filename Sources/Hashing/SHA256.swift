import Crypto
import Foundation
import ReportModel

/// SHA-256 of a byte buffer, as lowercase hex: report digests, fingerprints and token hashes.
///
/// BoringSSL's assembly through swift-crypto (already linked for the server's AES and tokens):
/// the ingest endpoint hashes every report it receives, and the earlier hand-written Swift
/// digest showed in the server's profile under `scripts/bench-serve.sh`, BoringSSL's does not.
public enum SHA256 {
    /// Hex digest of `data`.
    public static func hex(_ data: some DataProtocol) -> String {
        HexText.lowercase(Crypto.SHA256.hash(data: data))
    }
}
