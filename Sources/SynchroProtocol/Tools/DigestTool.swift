/// The entry points behind `seedkit digest`: JSON octets in, a JSON result out.
public enum DigestTool {
    public static func manifest(_ input: [UInt8]) throws(ToolError) -> JSONValue { throw notYet }
    public static func row(_ input: [UInt8]) throws(ToolError) -> JSONValue { throw notYet }
    public static func scope(_ input: [UInt8]) throws(ToolError) -> JSONValue { throw notYet }
    public static func push(_ input: [UInt8], user: String) throws(ToolError) -> JSONValue { throw notYet }
    static let notYet = ToolError(rule: "x", message: "x")
}
