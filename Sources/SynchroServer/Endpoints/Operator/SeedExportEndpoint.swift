import SynchroProtocol

/// `POST /operator/seed/manifest` and `/operator/seed/scope`: portable seed export
/// (`spec/integrity.md` §7.2, `spec/seed-format.md` §3). The engine has already checked the
/// operator credential, the media type and strict JSON.
///
/// The manifest call stages one immutable export (``SeedExportStaging``); the scope call serves
/// pages of it against a page token and the scope's continuation receipt (``SeedExportPage``).
enum SeedExportEndpoint {
    /// `{"page_limit": N}` with N in 1…1000 → the export manifest.
    static func manifest(_ body: JSONValue, now: Int64, state: inout EngineState) -> Result<EndpointReply, WireError> {
        let pageLimit: Int64
        do {
            let reader = try ExactObjectReader(body, path: "", required: ["page_limit"])
            pageLimit = try reader.integer("page_limit", in: ExactObjectReader.pageLimit)
        } catch {
            return .failure(.invalidRequest(error.description))
        }
        do {
            var random = SystemRandomNumberGenerator()
            let export = try state.store.db.transaction {
                try SeedExportStaging.stage(pageLimit: pageLimit, now: now, state: &state, random: &random)
            }
            return .success(EndpointReply(json: try export.manifest(
                pageSigner: state.seedPageSigner, receiptSigner: state.seedReceiptSigner, keyIDs: state.seedKeyIDs)))
        } catch {
            return .failure(WireError.from(error))
        }
    }

    /// `{"scope_id", "page_token", "continuation_receipt", "expected_row_ordinal", "limit"}` → one page.
    static func scope(_ body: JSONValue, now: Int64, state: inout EngineState) -> Result<EndpointReply, WireError> {
        let request: SeedExportPage.Request
        do {
            request = try SeedExportPage.Request(json: body)
        } catch {
            return .failure(.invalidRequest(error.description))
        }
        do {
            let page = try SeedExportPage.resolve(request, now: now, state: state)
            return .success(EndpointReply(body: try page.body(state: state)))
        } catch {
            return .failure(WireError.from(error))
        }
    }
}
