import SynchroProtocol

extension JSONObject {
    /// The object with `key`'s value replaced, members in their order: how tests break one member of a real reply.
    public func replacing(_ key: String, _ value: JSONValue) -> JSONObject {
        JSONObject(members.map { $0.key == key ? JSONMember(key, value) : $0 })
    }
}
