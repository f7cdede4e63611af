import Foundation
import Hummingbird
import JSONFormat
import ReportRendering

/// Builds responses: JSON in the style of docs/json.md (the CLI's `--json` encoder), text, errors.
public enum JSONResponse {
    static let jsonType = "application/json"

    /// `value` encoded with the same encoder as the CLI's `--json`.
    public static func encode<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        bytes(try JSONStyle.document.encode(value), status: status, contentType: jsonType)
    }

    /// A document built as a JSON object (the report views `JSONReportRenderer` makes).
    public static func object(_ object: [String: JSONValue], status: HTTPResponse.Status = .ok) -> Response {
        text(JSONReportRenderer.render(object: object), status: status, contentType: jsonType)
    }

    public static func text(_ text: String, status: HTTPResponse.Status = .ok, contentType: String = "text/plain; charset=utf-8")
        -> Response
    {
        bytes(Data(text.utf8), status: status, contentType: contentType)
    }

    public static func bytes(_ data: Data, status: HTTPResponse.Status = .ok, contentType: String) -> Response {
        Response(
            status: status, headers: [.contentType: contentType, .contentLength: "\(data.count)"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// `{"error": message}`.
    public static func error(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) -> Response {
        var response = object(["error": .string(message)], status: status)
        for field in headers { response.headers.append(field) }
        return response
    }
}
