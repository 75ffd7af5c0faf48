import Testing
@testable import SeedArtifacts

@Suite struct SeedArtifactsSmokeTests {
    @Test func toolVersionIsSemantic() {
        #expect(SeedArtifacts.toolVersion.split(separator: ".").count == 3)
    }
}
